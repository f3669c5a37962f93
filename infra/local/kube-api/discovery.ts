/**
 * Legacy discovery documents (`/version`, `/api`, `/api/v1`, `/apis`, `/apis/<g>/<v>`), built from the
 * served {@link KindSpec}s. Always plain `application/json`: never the aggregated v2 content type.
 */
import { createHash } from 'node:crypto';
import type { KindSpec } from './types.ts';
import { REVIEW_RESOURCES } from './auth/reviews.ts';

/** The version this emulator reports (`/version`). */
export const SERVER_VERSION = { major: '1', minor: '32', gitVersion: 'v1.32.0' } as const;

/** `/version` (apimachinery `pkg/version.Info`). */
export function versionInfo(): Record<string, string> {
  return {
    ...SERVER_VERSION,
    gitCommit: '0000000000000000000000000000000000000000',
    gitTreeState: 'clean',
    buildDate: '2026-01-01T00:00:00Z',
    goVersion: 'go1.23.0',
    compiler: 'gc',
    platform: `${process.platform === 'win32' ? 'windows' : process.platform}/${process.arch === 'x64' ? 'amd64' : process.arch}`,
  };
}

/** `/api`. */
export function apiVersions(): Record<string, unknown> {
  return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '127.0.0.1' }] };
}

/** `/apis`: every non-core group served. */
export function apiGroupList(kinds: KindSpec[]): Record<string, unknown> {
  const groups: string[] = [...new Set([...kinds.filter((k) => k.group).map((k) => k.group as string), ...REVIEW_RESOURCES.map((r) => r.group)])];
  return {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: groups.map((name) => {
      const versions = [...new Set(kinds.filter((k) => k.group === name).map((k) => k.version as string))];
      if (versions.length === 0) versions.push('v1');
      const gv = versions.map((version) => ({ groupVersion: `${name}/${version}`, version }));
      return { name, versions: gv, preferredVersion: gv[0] };
    }),
  };
}

function storageVersionHash(spec: KindSpec): string {
  const target = spec.storedAs ? `${spec.storedAs.group}/v1/${spec.storedAs.kind}` : `${spec.group}/${spec.version}/${spec.kind}`;
  return createHash('sha256').update(target).digest().subarray(0, 8).toString('base64');
}

/** `/api/v1` or `/apis/<g>/<v>`; undefined when the group-version is not served. */
export function apiResourceList(kinds: KindSpec[], group: string, version: string): Record<string, unknown> | undefined {
  const served = kinds.filter((k) => k.group === group && k.version === version);
  const reviews = version === 'v1' ? REVIEW_RESOURCES.filter((r) => r.group === group) : [];
  if (served.length === 0 && reviews.length === 0) return undefined;
  const resources: Record<string, unknown>[] = [];
  // the review APIs: create only, never stored
  for (const r of reviews) resources.push({ name: r.resource, singularName: r.kind.toLowerCase(), namespaced: r.namespaced, kind: r.kind, verbs: ['create'] });
  for (const k of [...served].sort((a, b) => a.plural.localeCompare(b.plural))) {
    resources.push({
      name: k.plural,
      singularName: k.singular,
      namespaced: k.namespaced,
      kind: k.kind,
      verbs: k.verbs,
      ...(k.shortNames.length ? { shortNames: k.shortNames } : {}),
      ...(k.categories?.length ? { categories: k.categories } : {}),
      storageVersionHash: storageVersionHash(k),
    });
    for (const sub of k.subresources) {
      resources.push({ name: `${k.plural}/${sub}`, singularName: '', namespaced: k.namespaced, kind: k.kind, verbs: ['get', 'patch', 'update'] });
    }
    if (k.kind === 'ServiceAccount' && group === '') {
      resources.push({ name: 'serviceaccounts/token', singularName: '', namespaced: true, group: 'authentication.k8s.io', version: 'v1', kind: 'TokenRequest', verbs: ['create'] });
    }
    if (k.kind === 'Namespace' && group === '') {
      resources.push({ name: 'namespaces/finalize', singularName: '', namespaced: false, kind: 'Namespace', verbs: ['update'] });
    }
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: group ? `${group}/${version}` : version, resources };
}

function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return out;
}

/** A length-delimited protobuf field. */
function field(number: number, body: Buffer): Buffer {
  return Buffer.concat([Buffer.from([(number << 3) | 2, ...varint(body.length)]), body]);
}

/**
 * `/openapi/v2`: an OpenAPI 2.0 document with no paths and no definitions, as gnostic protobuf
 * (`openapi_v2.Document`: swagger=1, info=2 {title=1, version=2}, paths=8) when asked for protobuf, else JSON.
 * kubectl's client-side validation needs the document to exist and skips kinds it has no schema for, so
 * `kubectl create/apply` work without `--validate=false`; the document claims no schema the emulator does not
 * enforce. (kubectl ≥1.27 tries `/openapi/v3` first, gets 404 and falls back to this.)
 */
export function openApiV2(accept: string | undefined): { contentType: string; body: Buffer } {
  if (accept && /protobuf/.test(accept)) {
    const info = Buffer.concat([field(1, Buffer.from('Kubernetes')), field(2, Buffer.from(SERVER_VERSION.gitVersion))]);
    const doc = Buffer.concat([field(1, Buffer.from('2.0')), field(2, info), field(8, Buffer.alloc(0))]);
    return { contentType: 'application/octet-stream', body: doc };
  }
  const json = { swagger: '2.0', info: { title: 'Kubernetes', version: SERVER_VERSION.gitVersion }, paths: {}, definitions: {} };
  return { contentType: 'application/json', body: Buffer.from(JSON.stringify(json)) };
}
