/**
 * Legacy discovery documents (`/version`, `/api`, `/api/v1`, `/apis`, `/apis/<g>/<v>`), built from the
 * served {@link KindSpec}s. Always plain `application/json`: never the aggregated v2 content type.
 */
import { createHash } from 'node:crypto';
import type { KindSpec } from './types.ts';

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
  const groups = [...new Set(kinds.filter((k) => k.group).map((k) => k.group))];
  return {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: groups.map((name) => {
      const versions = [...new Set(kinds.filter((k) => k.group === name).map((k) => k.version))];
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
  if (served.length === 0) return undefined;
  const resources: Record<string, unknown>[] = [];
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
    if (k.kind === 'Namespace' && group === '') {
      resources.push({ name: 'namespaces/finalize', singularName: '', namespaced: false, kind: 'Namespace', verbs: ['update'] });
    }
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: group ? `${group}/${version}` : version, resources };
}
