// ServiceAccounts, apps/v1 Deployments and ReplicaSets, and RBAC objects stored as objects: defaults,
// generation, the status split and the light validation (`pkg/registry/apps/*`, `pkg/registry/rbac/*`).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { KINDS } from '../../../infra/local/kube-api/kinds/index.ts';
import { formatLabelSelector } from '../../../infra/local/kube-api/kinds/apps.ts';
import { MemoryStore } from '../../../infra/local/kube-api/store.ts';
import { StatusError, type KubeObject } from '../../../infra/local/kube-api/types.ts';

const fresh = (): MemoryStore => new MemoryStore({ kinds: KINDS });

function rejected(fn: () => unknown): StatusError {
  try {
    fn();
  } catch (err) {
    if (err instanceof StatusError) return err;
    throw err;
  }
  throw new Error('expected a StatusError');
}

const deployment = (extra: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'default' },
  spec: {
    selector: { matchLabels: { app: 'web' } },
    template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'nginx:1.27', ports: [{ containerPort: 80 }] }] } },
    ...extra,
  },
});

describe('apps/v1 Deployment and ReplicaSet', () => {
  it('create: apps/v1 defaults (with the pod template\'s), generation 1, empty status', () => {
    const d = fresh().create('apps/deployments', deployment());
    assert.equal(d.metadata.generation, 1);
    assert.deepEqual(d.status, {});
    assert.equal(d.spec.replicas, 1);
    assert.deepEqual(d.spec.strategy, { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%', maxSurge: '25%' } });
    assert.equal(d.spec.revisionHistoryLimit, 10);
    assert.equal(d.spec.progressDeadlineSeconds, 600);
    const pod = d.spec.template.spec;
    assert.deepEqual([pod.restartPolicy, pod.dnsPolicy, pod.schedulerName, pod.terminationGracePeriodSeconds], ['Always', 'ClusterFirst', 'default-scheduler', 30]);
    assert.equal(pod.enableServiceLinks, undefined, 'a Pod default, not a template one');
    assert.deepEqual(pod.containers[0].ports, [{ containerPort: 80, protocol: 'TCP' }]);
    assert.equal(pod.containers[0].imagePullPolicy, 'IfNotPresent');
    const recreate = fresh().create('apps/deployments', deployment({ replicas: 0, strategy: { type: 'Recreate' } }));
    assert.deepEqual([recreate.spec.replicas, recreate.spec.strategy], [0, { type: 'Recreate' }]);
  });

  it('generation moves with the spec (and a Deployment\'s annotations), not with labels or status', () => {
    const store = fresh();
    let d = store.create('apps/deployments', deployment());
    d = store.update('apps/deployments', { ...d, metadata: { ...d.metadata, labels: { x: 'y' } } });
    assert.equal(d.metadata.generation, 1);
    d = store.update('apps/deployments', { ...d, spec: { ...d.spec, replicas: 3 } });
    assert.equal(d.metadata.generation, 2);
    d = store.update('apps/deployments', { ...d, metadata: { ...d.metadata, annotations: { 'deployment.kubernetes.io/revision': '2' } } });
    assert.equal(d.metadata.generation, 3);
    d = store.update('apps/deployments', { ...d, spec: { ...d.spec, replicas: 9 }, status: { observedGeneration: 3, replicas: 3 } }, 'status');
    assert.deepEqual([d.metadata.generation, d.spec.replicas, d.status.replicas], [3, 3, 3], 'the status subresource keeps the spec');
    d = store.update('apps/deployments', { ...d, status: {} });
    assert.equal(d.status.replicas, 3, 'the main resource keeps the status');
  });

  it('validation: selector required and matching the template labels, immutable; containers need a name and an image', () => {
    const store = fresh();
    let e = rejected(() => store.create('apps/deployments', deployment({ selector: { matchLabels: { app: 'other' } } })));
    assert.equal(e.code, 422);
    assert.match(e.message, /spec\.template\.metadata\.labels: Invalid value: .*`selector` does not match template `labels`/);
    e = rejected(() => store.create('apps/deployments', deployment({ selector: undefined })));
    assert.match(e.message, /spec\.selector: Required value/);
    e = rejected(() => store.create('apps/deployments', deployment({ replicas: -1, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web' }] } } })));
    assert.match(e.message, /spec\.replicas: Invalid value: -1/);
    assert.match(e.message, /spec\.template\.spec\.containers\[0\]\.image: Required value/);
    const d = store.create('apps/deployments', deployment());
    e = rejected(() => store.update('apps/deployments', { ...d, spec: { ...d.spec, selector: { matchLabels: { app: 'web', v: '2' } } } }));
    assert.match(e.message, /spec\.selector: Invalid value: .*field is immutable/);
  });

  it('ReplicaSet: defaults, status.replicas 0, the status.replicas field selector; selectors print as kubectl does', () => {
    const rs = fresh().create('apps/replicasets', {
      apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name: 'web-1', namespace: 'default' },
      spec: { selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'nginx' }] } } },
    });
    assert.deepEqual([rs.spec.replicas, rs.status, rs.metadata.generation], [1, { replicas: 0 }, 1]);
    assert.equal(rs.spec.template.spec.containers[0].imagePullPolicy, 'Always');
    assert.equal(KINDS.find((k) => k.kind === 'ReplicaSet')!.selectableFields(rs)['status.replicas'], '0');
    assert.equal(formatLabelSelector({ matchLabels: { b: '2', a: '1' }, matchExpressions: [{ key: 'c', operator: 'In', values: ['y', 'x'] }, { key: 'd', operator: 'DoesNotExist' }] }), 'a=1,b=2,c in (x,y),!d');
    assert.equal(formatLabelSelector({}), '<none>');
  });
});

describe('ServiceAccount and RBAC objects', () => {
  it('a ServiceAccount is stored; delete answers with the object', () => {
    const store = fresh();
    store.create('/serviceaccounts', { metadata: { name: 'builder', namespace: 'default' }, automountServiceAccountToken: false });
    const r = store.deleteObject({ resource: '/serviceaccounts', namespace: 'default', name: 'builder' });
    assert.equal(r.deleted, true);
    assert.equal(r.object.automountServiceAccountToken, false);
    const e = rejected(() => store.create('/serviceaccounts', { metadata: { name: 'Bad_Name', namespace: 'default' } }));
    assert.equal(e.code, 422);
  });

  it('rules need verbs; a binding needs a roleRef it may reference, and cannot change it', () => {
    const store = fresh();
    let e = rejected(() => store.create('rbac.authorization.k8s.io/roles', { metadata: { name: 'r', namespace: 'default' }, rules: [{ apiGroups: [''], resources: ['pods'] }] }));
    assert.match(e.message, /rules\[0\]\.verbs: Required value/);
    e = rejected(() => store.create('rbac.authorization.k8s.io/roles', { metadata: { name: 'r', namespace: 'default' }, rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }] }));
    assert.match(e.message, /namespaced rules cannot apply to non-resource URLs/);
    store.create('rbac.authorization.k8s.io/clusterroles', { metadata: { name: 'metrics' }, rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }] });
    e = rejected(() => store.create('rbac.authorization.k8s.io/clusterrolebindings', {
      metadata: { name: 'b' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'x' }, subjects: [],
    }));
    assert.match(e.message, /roleRef\.kind: Unsupported value: "Role"/);
    const b = store.create('rbac.authorization.k8s.io/rolebindings', {
      metadata: { name: 'b', namespace: 'default' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'metrics' },
      subjects: [{ kind: 'ServiceAccount', name: 'builder', namespace: 'default' }, { kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'devs' }],
    });
    e = rejected(() => store.update('rbac.authorization.k8s.io/rolebindings', { ...b, roleRef: { ...b.roleRef, name: 'other' } }));
    assert.match(e.message, /roleRef: Invalid value: .*cannot change roleRef/);
    e = rejected(() => store.create('rbac.authorization.k8s.io/rolebindings', {
      metadata: { name: 'c', namespace: 'default' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'r' }, subjects: [{ kind: 'Robot', name: 'x' }],
    }));
    assert.match(e.message, /subjects\[0\]\.kind: Unsupported value: "Robot"/);
  });
});
