import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { watchedResources } from '../../lib/forwarder/kinds.ts';

const dir = new URL('../../infra/k8s/', import.meta.url);
const docs = ['namespace.yaml', 'serviceaccount.yaml', 'rbac.yaml', 'deployment.yaml'].flatMap((file) =>
  parseAllDocuments(readFileSync(new URL(file, dir), 'utf8')).map((doc) => doc.toJS() as any),
);
const find = (kind: string, name?: string) => docs.find((d) => d.kind === kind && (!name || d.metadata.name === name));

describe('infra/k8s manifests', () => {
  it('grants read-only access to exactly the watched resources', () => {
    const role = find('ClusterRole', 'claimflow-forwarder');
    const granted = new Set<string>();
    for (const rule of role.rules) {
      assert.deepEqual(rule.verbs, ['get', 'list', 'watch']);
      for (const group of rule.apiGroups) for (const resource of rule.resources) granted.add(`${group}/${resource}`);
    }
    const watched = new Set(watchedResources().map((r) => {
      const [, api, ...rest] = r.path.split('/');
      return api === 'api' ? `/${rest.at(-1)}` : `${rest[0]}/${rest.at(-1)}`;
    }));
    assert.deepEqual([...granted].sort(), [...watched].sort());
    const binding = find('ClusterRoleBinding', 'claimflow-forwarder');
    assert.deepEqual(binding.subjects, [{ kind: 'ServiceAccount', name: 'claimflow-forwarder', namespace: 'claimflow' }]);
  });

  it('lets the forwarder get/update its own Lease and create leases in its namespace only', () => {
    const role = find('Role', 'claimflow-forwarder-lease');
    assert.equal(role.metadata.namespace, 'claimflow');
    const verbs = role.rules.flatMap((r: any) => r.verbs).sort();
    assert.deepEqual(verbs, ['create', 'get', 'update']);
    assert.ok(role.rules.every((r: any) => r.apiGroups.join() === 'coordination.k8s.io' && r.resources.join() === 'leases'));
    const named = role.rules.find((r: any) => r.verbs.includes('update'));
    assert.deepEqual(named.resourceNames, ['claimflow-forwarder']);
    assert.equal(find('RoleBinding', 'claimflow-forwarder-lease').roleRef.name, 'claimflow-forwarder-lease');
  });

  it('runs two replicas with probes, limits and the lease identity from the pod', () => {
    const deployment = find('Deployment', 'claimflow-forwarder');
    assert.equal(deployment.spec.replicas, 2);
    const pod = deployment.spec.template.spec;
    assert.equal(pod.serviceAccountName, find('ServiceAccount').metadata.name);
    const [container] = pod.containers;
    assert.equal(container.livenessProbe.httpGet.path, '/healthz');
    assert.equal(container.readinessProbe.httpGet.path, '/readyz');
    assert.ok(container.resources.requests.cpu && container.resources.limits.memory);
    const env = Object.fromEntries(container.env.map((e: any) => [e.name, e.value ?? e.valueFrom.fieldRef.fieldPath]));
    assert.equal(env.POD_NAME, 'metadata.name');
    assert.equal(env.POD_NAMESPACE, 'metadata.namespace');
    for (const name of ['CLUSTER_ID', 'EVENTS_TOPIC_ARN', 'CACHE_TABLE', 'CONTROL_TABLE']) assert.ok(env[name], name);
    assert.ok(pod.terminationGracePeriodSeconds > 25, 'longer than the 25 s shutdown flush');
  });

  it('builds the image from production dependencies and runs the forwarder entry point', () => {
    const dockerfile = readFileSync(new URL('Dockerfile', dir), 'utf8');
    // pinned to the Node the tests run on, not whatever node:24 is on the day of a build
    const lock = JSON.parse(readFileSync(new URL('../../package-lock.json', import.meta.url), 'utf8'));
    assert.equal(/^ARG NODE_VERSION=(\S+)$/m.exec(dockerfile)?.[1], lock.packages['node_modules/node'].version);
    assert.equal([...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]).join(' '), 'node:${NODE_VERSION}-slim node:${NODE_VERSION}-slim');
    assert.match(dockerfile, /npm ci --omit=dev/);
    assert.match(dockerfile, /ENTRYPOINT \["node", "lib\/forwarder\/main\.ts"\]/);
  });
});
