/**
 * The functions' Kubernetes RBAC (infra/k8s/controllers-rbac.yaml) grants exactly what each controller's
 * code calls: every client-node call found in a controller's sources (and the shared event recorder) must
 * be allowed by its ClusterRole, nothing is a wildcard, and each role is bound to the group its EKS access
 * entry maps to. A new API call without its RBAC rule fails here, not in a user's cluster.
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

function callsIn(dir: string): Set<string> {
  const calls = new Set<string>();
  const files = readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  for (const file of files) {
    const source = readFileSync(join(root, dir, file), 'utf8');
    for (const match of source.matchAll(/\.((?:read|list|create|replace|patch|delete)(?:Namespaced)?[A-Z][A-Za-z]*)\(/g)) {
      if (requirement(match[1])) calls.add(match[1]);
    }
  }
  return calls;
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
    assert.ok(calls.size > 0);
    for (const call of calls) assert.ok(allows(role, requirement(call)!), `${name} must allow ${requirement(call)!.join(' ')} for ${call}`);
  });

  test(`${name}: no wildcard, bound to its group`, () => {
    const role = docs.find((d) => d.kind === 'ClusterRole' && d.metadata.name === name);
    for (const rule of role.rules) for (const field of ['apiGroups', 'resources', 'verbs']) assert.ok(!rule[field].includes('*'), `${name} ${field}`);
    const binding = docs.find((d) => d.kind === 'ClusterRoleBinding' && d.metadata.name === name);
    assert.deepEqual(binding.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name });
    assert.deepEqual(binding.subjects, [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name }]);
  });
}

test('the label-sync role never writes Nodes: labels flow to the storage control plane only', () => {
  const role = docs.find((d) => d.kind === 'ClusterRole' && d.metadata.name === 'claimflow-label-sync');
  assert.ok(!role.rules.some((r: any) => r.resources.includes('nodes') && r.verbs.some((v: string) => ['update', 'patch'].includes(v))));
});

test('kubectl apply -k infra/k8s includes the controllers RBAC', () => {
  assert.match(kustomization, /- controllers-rbac\.yaml/);
});
