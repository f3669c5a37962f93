/**
 * The functions' Kubernetes RBAC (infra/k8s/controllers-rbac.yaml) grants exactly what each controller's
 * code calls: every API call found in a controller's sources (and the shared event recorder) must be
 * allowed by its ClusterRole, nothing is a wildcard, and each role is bound to the group its EKS access
 * entry maps to. A call is a client-node method (`createNamespacedEvent`) or a `KubeJsonApi` request
 * (lib/kube/json-api.ts: `.put(claimPath(ns, name), …)`, `.get(\`/api/v1/namespaces/${ns}/pods\`)`), whose
 * path is read from its argument: a literal, a path helper (json-api.ts's or the file's own), or a local
 * `const` holding one. A new API call without its RBAC rule fails here, not in a user's cluster.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

const root = join(import.meta.dirname, '../..');
const docs = parseAllDocuments(readFileSync(join(root, 'infra/k8s/controllers-rbac.yaml'), 'utf8')).map((d) => d.toJS());
const kustomization = readFileSync(join(root, 'infra/k8s/kustomization.yaml'), 'utf8');

/** client-node method name → [apiGroup, resource, verb]. */
function requirement(method: string): [string, string, string] | undefined {
  const m = /^(read|list|create|replace|patch|delete)(Namespaced)?([A-Z][A-Za-z]*?)(Status)?$/.exec(method);
  if (!m) return undefined;
  const verb = { read: 'get', list: 'list', create: 'create', replace: 'update', patch: 'patch', delete: 'delete' }[m[1]]!;
  const kinds: Record<string, [string, string]> = {
    PersistentVolume: ['', 'persistentvolumes'],
    PersistentVolumeClaim: ['', 'persistentvolumeclaims'],
    Pod: ['', 'pods'],
    Service: ['', 'services'],
    Endpoints: ['', 'endpoints'],
    Event: ['', 'events'],
    Node: ['', 'nodes'],
    StorageClass: ['storage.k8s.io', 'storageclasses'],
    VolumeAttachment: ['storage.k8s.io', 'volumeattachments'],
  };
  const kind = kinds[m[3]];
  if (!kind) return undefined;
  return [kind[0], m[4] ? `${kind[1]}/status` : kind[1], verb];
}

type Requirement = [string, string, string];

/** client-node method calls in `dir`'s sources, as requirements (the method names, `list…` ones excepted by the caller). */
function callsIn(dir: string): Set<string> {
  const calls = new Set<string>();
  for (const source of sources(dir)) {
    for (const match of source.matchAll(/\.((?:read|list|create|replace|patch|delete)(?:Namespaced)?[A-Z][A-Za-z]*)\(/g)) {
      if (requirement(match[1])) calls.add(match[1]);
    }
  }
  return calls;
}

function sources(dir: string): string[] {
  return readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((file) => readFileSync(join(root, dir, file), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '')); // code, not its comments' examples
}

/** `const name = (…) => \`…\`` path helpers of a source. */
function pathHelpers(source: string): Map<string, string> {
  return new Map([...source.matchAll(/const (\w+) = \([^)]*\)(?:: string)? =>\s*(`[^`]*`)/g)].map((m) => [m[1]!, m[2]!]));
}
const sharedHelpers = pathHelpers(readFileSync(join(root, 'lib/kube/json-api.ts'), 'utf8'));

/** The argument text of a call whose `(` is at `open`: up to the first comma or `)` outside brackets. */
function firstArgument(source: string, open: number): string {
  let depth = 0;
  for (let i = open + 1; i < source.length; i++) {
    const c = source[i]!;
    if ('([{'.includes(c)) depth++;
    else if (')]}'.includes(c)) {
      if (depth === 0) return source.slice(open + 1, i);
      depth--;
    } else if (c === ',' && depth === 0) return source.slice(open + 1, i);
  }
  return '';
}

/** The API paths (templates) `text` names: literals, helper calls, local consts holding either. */
function pathsIn(text: string, helpers: Map<string, string>, locals: Map<string, string>, depth = 0): string[] {
  const found = [...text.matchAll(/[`'](\/apis?\/[^`']*)[`']/g)].map((m) => m[1]!);
  for (const [name, template] of helpers) if (new RegExp(`\\b${name}\\(`).test(text)) found.push(template.slice(1, -1));
  if (depth < 2) for (const [name, init] of locals) if (new RegExp(`\\b${name}\\b(?!\\()`).test(text)) found.push(...pathsIn(init, helpers, locals, depth + 1));
  return found;
}

/** `/api/v1/namespaces/${…}/persistentvolumeclaims/${…}` and the request's method → [apiGroup, resource, verb]. */
function pathRequirement(template: string, method: string, status: boolean): Requirement | undefined {
  const parts = template.replace(/\$\{[^}]*\}/g, '*').split('/').filter(Boolean);
  const group = parts[0] === 'api' ? '' : parts[1]!;
  let rest = parts.slice(parts[0] === 'api' ? 2 : 3);
  if (rest[0] === 'namespaces' && rest.length > 2) rest = rest.slice(2);
  const [resource, name] = rest;
  if (!resource) return undefined;
  const verb = { get: name ? 'get' : 'list', put: 'update', post: 'create', patch: 'patch', delete: 'delete' }[method]!;
  return [group, status ? `${resource}/status` : resource, verb];
}

/** `KubeJsonApi` requests in `dir`'s sources, as requirements. */
function jsonCallsIn(dir: string): Requirement[] {
  const found: Requirement[] = [];
  for (const source of sources(dir)) {
    const helpers = new Map([...sharedHelpers, ...pathHelpers(source)]);
    const locals = new Map([...source.matchAll(/const (\w+) = ([^;]+);/g)].map((m) => [m[1]!, m[2]!]));
    for (const match of source.matchAll(/\.(get|put|post|patch|delete)(?:<(?:[^<>]|<[^<>]*>)*>)?\(/g)) {
      const argument = firstArgument(source, match.index + match[0].length - 1);
      const paths = pathsIn(argument, helpers, locals);
      const statusToo = argument.includes('/status');
      for (const path of paths) {
        for (const status of statusToo && !path.endsWith('/status') ? [false, true] : [false]) {
          const need = pathRequirement(path.replace(/\/status$/, ''), match[1]!, status || path.endsWith('/status'));
          if (need) found.push(need);
        }
      }
    }
  }
  return found;
}

function allows(role: any, [group, resource, verb]: [string, string, string]): boolean {
  return role.rules.some((r: any) => r.apiGroups.includes(group) && r.resources.includes(resource) && r.verbs.includes(verb));
}

const controllers: Record<string, string[]> = {
  'claimflow-binder': ['lib/binder'],
  'claimflow-provisioner': ['lib/provisioner'],
  'claimflow-shared-volume': ['lib/shared-volume'],
  'claimflow-label-sync': ['lib/label-sync'],
};

for (const [name, dirs] of Object.entries(controllers)) {
  test(`${name}: grants every API call its code makes, and the event recorder's`, () => {
    const role = docs.find((d) => d.kind === 'ClusterRole' && d.metadata.name === name);
    assert.ok(role, `ClusterRole ${name}`);
    const calls = new Set([...dirs.flatMap((d) => [...callsIn(d)]), ...callsIn('lib/kube').values()].filter((c) => !/^list(Due|Nodes|SharedVolumes|Pods)$/.test(c)));
    const requests = [...dirs, 'lib/kube'].flatMap((d) => jsonCallsIn(d));
    // The event recorder's requests (lib/kube/recorder.ts) are every controller's: at least those.
    assert.ok(requests.some(([, resource, verb]) => resource === 'events' && verb === 'create'), 'the recorder\'s Event create was found');
    for (const call of calls) assert.ok(allows(role, requirement(call)!), `${name} must allow ${requirement(call)!.join(' ')} for ${call}`);
    for (const need of requests) assert.ok(allows(role, need), `${name} must allow ${need.join(' ')} (a KubeJsonApi request)`);
  });

  test(`${name}: no wildcard, bound to its group`, () => {
    const role = docs.find((d) => d.kind === 'ClusterRole' && d.metadata.name === name);
    for (const rule of role.rules) for (const field of ['apiGroups', 'resources', 'verbs']) assert.ok(!rule[field].includes('*'), `${name} ${field}`);
    const binding = docs.find((d) => d.kind === 'ClusterRoleBinding' && d.metadata.name === name);
    assert.deepEqual(binding.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name });
    assert.deepEqual(binding.subjects, [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name }]);
  });
}

test("the JSON requests found are the binder's and the provisioner's own (the scan reads them all)", () => {
  const found = (dir: string) => [...new Set(jsonCallsIn(dir).map((r) => `${r[2]} ${r[0] ? `${r[0]}/` : ''}${r[1]}`))].sort();
  assert.deepEqual(found('lib/binder'), [
    'get persistentvolumeclaims', 'get persistentvolumes', 'list pods',
    'update persistentvolumeclaims', 'update persistentvolumeclaims/status', 'update persistentvolumes', 'update persistentvolumes/status',
  ]);
  assert.deepEqual(found('lib/provisioner'), [
    'create persistentvolumes', 'delete persistentvolumes', 'get persistentvolumeclaims', 'get persistentvolumes',
    'patch persistentvolumes', 'update persistentvolumeclaims',
  ]);
  assert.deepEqual(found('lib/kube'), ['create events', 'get events', 'patch events']);
});

test('the label-sync role never writes Nodes: labels flow to the storage control plane only', () => {
  const role = docs.find((d) => d.kind === 'ClusterRole' && d.metadata.name === 'claimflow-label-sync');
  assert.ok(!role.rules.some((r: any) => r.resources.includes('nodes') && r.verbs.some((v: string) => ['update', 'patch'].includes(v))));
});

test('kubectl apply -k infra/k8s includes the controllers RBAC', () => {
  assert.match(kustomization, /- controllers-rbac\.yaml/);
});
