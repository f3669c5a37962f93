// Discovery facts and registry flags of every served resource, and the field-selector sets, as upstream
// serves them (`kubectl api-resources`, each kind's storage.go/strategy.go, pkg/apis/core/v1/conversion.go).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { KINDS, kindFor, resourceKey } from '../../../infra/local/kube-api/kinds/index.ts';
import { defaultPullPolicy } from '../../../infra/local/kube-api/kinds/pod.ts';

const ALL = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

// resource → [kind, namespaced, shortNames, status subresource, verbs, returnDeletedObject, unconditional, createOnUpdate]
const FACTS: Record<string, [string, boolean, string[], boolean, string[], boolean, boolean, boolean]> = {
  '/namespaces': ['Namespace', false, ['ns'], true, ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'], true, true, false],
  '/nodes': ['Node', false, ['no'], true, ALL, false, true, false],
  '/persistentvolumes': ['PersistentVolume', false, ['pv'], true, ALL, true, true, false],
  '/persistentvolumeclaims': ['PersistentVolumeClaim', true, ['pvc'], true, ALL, true, true, false],
  '/pods': ['Pod', true, ['po'], true, ALL, true, true, false],
  '/services': ['Service', true, ['svc'], true, ALL, true, true, false],
  '/endpoints': ['Endpoints', true, ['ep'], false, ALL, false, true, true],
  '/events': ['Event', true, ['ev'], false, ALL, false, true, true],
  '/configmaps': ['ConfigMap', true, ['cm'], false, ALL, false, true, false],
  '/secrets': ['Secret', true, [], false, ALL, false, true, false],
  'storage.k8s.io/storageclasses': ['StorageClass', false, ['sc'], false, ALL, true, true, false],
  'storage.k8s.io/volumeattachments': ['VolumeAttachment', false, [], true, ALL, true, true, false],
  'coordination.k8s.io/leases': ['Lease', true, [], false, ALL, false, false, true],
  'events.k8s.io/events': ['Event', true, ['ev'], false, ALL, false, true, true],
  '/serviceaccounts': ['ServiceAccount', true, ['sa'], false, ALL, true, true, false],
  'apps/deployments': ['Deployment', true, ['deploy'], true, ALL, false, true, false],
  'apps/replicasets': ['ReplicaSet', true, ['rs'], true, ALL, false, true, false],
  'rbac.authorization.k8s.io/roles': ['Role', true, [], false, ALL, false, true, true],
  'rbac.authorization.k8s.io/clusterroles': ['ClusterRole', false, [], false, ALL, false, true, true],
  'rbac.authorization.k8s.io/rolebindings': ['RoleBinding', true, [], false, ALL, false, true, true],
  'rbac.authorization.k8s.io/clusterrolebindings': ['ClusterRoleBinding', false, [], false, ALL, false, true, true],
};

describe('kube-api kinds: discovery facts', () => {
  it('serves exactly the resources of the issue', () => {
    assert.deepEqual(KINDS.map(resourceKey).sort(), Object.keys(FACTS).sort());
  });

  for (const [resource, [kind, namespaced, shortNames, status, verbs, rdo, unconditional, createOnUpdate]] of Object.entries(FACTS)) {
    it(`${resource}`, () => {
      const spec = kindFor(resource)!;
      assert.equal(spec.version, 'v1');
      assert.deepEqual(
        [spec.kind, spec.namespaced, spec.shortNames, spec.subresources.includes('status'), [...spec.verbs].sort(), spec.returnDeletedObject,
          spec.allowUnconditionalUpdate, spec.allowCreateOnUpdate],
        [kind, namespaced, shortNames, status, verbs, rdo, unconditional, createOnUpdate]);
      assert.equal(spec.singular, spec.plural === 'endpoints' ? 'endpoints' : spec.plural.replace(/s$/, '').replace(/sse$/, 'ss'));
    });
  }

  it('pods, services, deployments and replicasets are in the "all" category', () => {
    assert.deepEqual(KINDS.filter((k) => k.categories?.includes('all')).map((k) => k.plural).sort(), ['deployments', 'pods', 'replicasets', 'services']);
  });

  it('events.k8s.io/v1 events are stored as core/v1 events', () => {
    const v1 = kindFor('events.k8s.io/events')!;
    assert.deepEqual([v1.storedAs?.group, v1.storedAs?.kind], ['', 'Event']);
  });
});

describe('kube-api kinds: field-selector sets', () => {
  const o = { metadata: { name: 'n', namespace: 'ns' }, spec: {}, status: {} };
  const keys = (resource: string) => Object.keys(kindFor(resource)!.selectableFields(o)).sort();
  const META_NS = ['metadata.name', 'metadata.namespace'];
  const cases: Array<[string, string[]]> = [
    ['/persistentvolumes', ['metadata.name']],
    ['/persistentvolumeclaims', META_NS],
    ['storage.k8s.io/storageclasses', ['metadata.name']],
    ['storage.k8s.io/volumeattachments', ['metadata.name']],
    ['/endpoints', META_NS],
    ['/configmaps', META_NS],
    ['coordination.k8s.io/leases', META_NS],
    ['/nodes', ['metadata.name', 'spec.unschedulable']],
    ['/namespaces', ['metadata.name', 'name', 'status.phase']],
    ['/services', [...META_NS, 'spec.clusterIP', 'spec.type']],
    ['/secrets', [...META_NS, 'type']],
    ['/pods', [...META_NS, 'spec.hostNetwork', 'spec.nodeName', 'spec.restartPolicy', 'spec.schedulerName', 'spec.serviceAccountName',
      'status.nominatedNodeName', 'status.phase', 'status.podIP']],
    ['/events', ['involvedObject.apiVersion', 'involvedObject.fieldPath', 'involvedObject.kind', 'involvedObject.name', 'involvedObject.namespace',
      'involvedObject.resourceVersion', 'involvedObject.uid', ...META_NS, 'reason', 'reportingComponent', 'source', 'type']],
  ];
  for (const [resource, want] of cases) it(resource, () => assert.deepEqual(keys(resource), [...want].sort()));

  it('booleans select as "true"/"false"', () => {
    assert.equal(kindFor('/nodes')!.selectableFields({ metadata: { name: 'n' }, spec: { unschedulable: true } })['spec.unschedulable'], 'true');
    assert.equal(kindFor('/nodes')!.selectableFields({ metadata: { name: 'n' } })['spec.unschedulable'], 'false');
  });
});

describe('kube-api kinds: Pod defaults', () => {
  const cases: Array<[string, string]> = [
    ['busybox', 'Always'], ['busybox:latest', 'Always'], ['busybox:1.36', 'IfNotPresent'],
    ['registry:5000/busybox', 'Always'], ['registry:5000/busybox:1.36', 'IfNotPresent'], ['busybox@sha256:abc', 'IfNotPresent'],
  ];
  for (const [image, want] of cases) it(`imagePullPolicy for ${image} is ${want}`, () => assert.equal(defaultPullPolicy(image), want));
});
