/**
 * The local stack under RBAC, as production runs it: each component under its own identity.
 * - A controller whose ClusterRole loses one verb fails loudly — an error log line and a `Forbidden` metric
 *   naming the verb and the resource — keeps retrying with backoff, loses nothing, and converges once the
 *   role is restored from `infra/k8s` as shipped.
 * - The forwarder (its ServiceAccount's token) can read what it watches and write nothing but its own Lease.
 * - Each function authenticates as its EKS access entry maps it; a function without one has no kubeconfig.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { CoreV1Api, KubeConfig, RbacAuthorizationV1Api, type V1ClusterRole } from '@kubernetes/client-node';
import { Agent, fetch } from 'undici';
import { parseAllDocuments } from 'yaml';
import { PROJECT_ROOT } from '../../infra/build/bundle.ts';
import { createBinderController } from '../../lib/binder/controller.ts';
import { COMPONENT } from '../../lib/binder/constants.ts';
import { KubeTransport } from '../../lib/forwarder/kube-transport.ts';
import { LeaderElector } from '../../lib/forwarder/leader-election.ts';
import { KubeClients } from '../../lib/kube/client.ts';
import { createSqsHandler, type SqsHandler } from '../../lib/runtime/handler.ts';
import { CapturedMetrics } from '../runtime/harness.ts';
import { CapturingLogger } from '../support/logs.ts';
import { eventually, startTestStack, type Stack } from '../support/stack.ts';

const agents: Agent[] = [];

const shippedRole = async (name: string): Promise<V1ClusterRole> => {
  const docs = parseAllDocuments(await readFile(join(PROJECT_ROOT, 'infra/k8s/controllers-rbac.yaml'), 'utf8')).map((d) => d.toJS());
  return docs.find((d) => d.kind === 'ClusterRole' && d.metadata.name === name);
};

describe('RBAC in the local stack', () => {
  let stack: Stack;
  let handler: SqsHandler | undefined;
  let core: CoreV1Api;
  let rbac: RbacAuthorizationV1Api;
  const logger = new CapturingLogger({ serviceName: 'claimflow', persistentKeys: { controller: 'binder' } });
  const metrics = new CapturedMetrics();

  before(async () => {
    stack = await startTestStack({ functions: { binder: (event, context) => handler!(event, context) }, withForwarder: true, storageApi: false });
    const queueUrl = stack.queues.BinderQueue.url;
    handler = createSqsHandler(createBinderController({ sqs: stack.sqs.client, queueUrl }), {
      component: COMPONENT,
      doc: stack.dynamodb.doc,
      tables: stack.tables,
      sqs: stack.sqs.client,
      queueUrl,
      dlqUrl: stack.queues.BinderDlq.url,
      // the binder's own identity: its kubeconfig from the stack (the token its EKS access entry maps to)
      kube: new KubeClients({ env: { KUBECONFIG: stack.functionEnv.binder.KUBECONFIG } }),
      syncWaitMs: 100,
      limiter: { baseDelayMs: 200, maxDelayMs: 1600 },
      logger,
      metrics,
    });
    const kc = new KubeConfig();
    kc.loadFromFile(stack.kubeconfigPath);
    core = kc.makeApiClient(CoreV1Api);
    rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    await eventually(() => stack.forwarder!.isReady(), 20_000, 'forwarder initial sync');
  });
  after(async () => {
    await Promise.all(agents.map((a) => a.close()));
    await stack?.stop();
  });

  it('runs each function as its EKS access entry maps it, the forwarder on its ServiceAccount, the user as an admin', async () => {
    const ids = stack.identities!;
    assert.equal(ids.admin.kubeconfigPath, stack.kubeconfigPath);
    assert.deepEqual(Object.fromEntries(Object.entries(ids.functions).map(([fn, id]) => [fn, id.groups])), {
      binder: ['claimflow-binder'], provisioner: ['claimflow-provisioner'], sharedVolume: ['claimflow-shared-volume'], labelSync: ['claimflow-label-sync'],
    });
    assert.match(ids.functions.binder.username, /^arn:aws:sts::\d{12}:assumed-role\/claimflow-local-BinderRole\/claimflow-local-binder$/);
    assert.equal(stack.functionEnv.binder.KUBECONFIG, ids.functions.binder.kubeconfigPath);
    assert.equal(stack.functionEnv.resync.KUBECONFIG, undefined, 'resync has no access entry: no kubeconfig');
    assert.equal(ids.forwarder!.username, 'system:serviceaccount:claimflow:claimflow-forwarder');
    // the tokens are what they claim to be: ask the API who they are
    for (const [path, expected] of [
      [ids.functions.binder.kubeconfigPath, ids.functions.binder.username],
      [ids.forwarder!.kubeconfigPath, ids.forwarder!.username],
      [stack.kubeconfigPath, 'claimflow-admin'],
    ]) {
      const who = await asUser(path).post('/apis/authentication.k8s.io/v1/selfsubjectreviews', {});
      assert.equal(who.status.userInfo.username, expected);
    }
  });

  it('a role missing one verb fails loudly (log line + Forbidden metric), retries with backoff, and converges once restored', async () => {
    const name = 'claimflow-binder';
    const shipped = await shippedRole(name);
    const narrowed = structuredClone(shipped);
    const rule = narrowed.rules!.find((r) => r.resources!.includes('persistentvolumes') && r.verbs.includes('update'))!;
    rule.verbs = rule.verbs.filter((v) => v !== 'update');
    await rbac.replaceClusterRole({ name, body: { ...narrowed, metadata: { ...narrowed.metadata, resourceVersion: (await rbac.readClusterRole({ name })).metadata!.resourceVersion } } });

    await core.createPersistentVolume({
      body: { metadata: { name: 'pv-rbac' }, spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], persistentVolumeReclaimPolicy: 'Retain', storageClassName: 'rbac', hostPath: { path: '/tmp/pv-rbac' } } },
    });
    await core.createNamespacedPersistentVolumeClaim({
      namespace: 'default',
      body: { metadata: { name: 'claim-rbac' }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'rbac', resources: { requests: { storage: '1Gi' } } } },
    });

    const forbidden = () => logger.lines.filter((l) => l.message === 'forbidden: update persistentvolumes');
    await eventually(() => forbidden().length >= 3, 30_000, 'three forbidden attempts');
    const line = forbidden()[0];
    assert.equal(line.level, 'ERROR');
    assert.equal(line.verb, 'update');
    assert.equal(line.resource, 'persistentvolumes');
    assert.equal(line.name, 'pv-rbac');
    assert.match(line.user, /assumed-role\/claimflow-local-BinderRole/);
    assert.match(line.error, /^persistentvolumes "pv-rbac" is forbidden: User "arn:aws:sts::\d+:assumed-role\/claimflow-local-BinderRole\/claimflow-local-binder" cannot update resource "persistentvolumes" in API group "" at the cluster scope$/);
    const blob = metrics.blobs.find((b) => b.Forbidden !== undefined);
    assert.ok(blob, 'a Forbidden metric');
    assert.equal(blob!.verb, 'update');
    assert.equal(blob!.resource, 'persistentvolumes');
    const dims = (blob!._aws as any).CloudWatchMetrics[0].Dimensions[0];
    for (const d of ['verb', 'resource']) assert.ok(dims.includes(d), `dimension ${d}`);
    // retried with a growing backoff, not dropped
    const retries = () => logger.lines.filter((l) => l.message === 'reconcile failed; will retry' && l.kind === 'PersistentVolumeClaim' && l.key === 'default/claim-rbac');
    await eventually(() => retries().length >= 3, 30_000, 'three retries of the claim');
    assert.ok(retries().every((l) => / is forbidden: /.test(l.error)), 'each retry names the denial');
    const delays = retries().map((l) => l.delayMs as number);
    assert.ok(delays[2] > delays[0], `backoff grows: ${delays.join(', ')}`);
    assert.equal((await core.readNamespacedPersistentVolumeClaim({ name: 'claim-rbac', namespace: 'default' })).status?.phase, 'Pending');

    // restore the role as shipped: the claim binds, nothing went to the DLQ
    await rbac.replaceClusterRole({ name, body: { ...shipped, metadata: { ...shipped.metadata, resourceVersion: (await rbac.readClusterRole({ name })).metadata!.resourceVersion } } });
    await eventually(async () => (await core.readNamespacedPersistentVolumeClaim({ name: 'claim-rbac', namespace: 'default' })).status?.phase === 'Bound', 30_000, 'claim bound');
    const pv = await core.readPersistentVolume({ name: 'pv-rbac' });
    assert.equal(pv.status?.phase, 'Bound');
    assert.equal(pv.spec?.claimRef?.name, 'claim-rbac');
    const dlq = await stack.sqs.client.send(new GetQueueAttributesCommand({ QueueUrl: stack.queues.BinderDlq.url, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }));
    assert.equal(Number(dlq.Attributes!.ApproximateNumberOfMessages) + Number(dlq.Attributes!.ApproximateNumberOfMessagesNotVisible), 0, 'nothing in the DLQ');
  });

  it('the forwarder reads what it watches and can write nothing but its own Lease', async () => {
    const fwd = asUser(stack.identities!.forwarder!.kubeconfigPath);
    const adminApi = asUser(stack.kubeconfigPath);
    const can = async (attrs: Record<string, string>) =>
      (await fwd.post('/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', { spec: { resourceAttributes: attrs } })).status.allowed as boolean;
    // every resource the API serves (discovery, as the admin sees it), every write verb, in every namespace that matters
    const resources: Array<{ group: string; resource: string; namespaced: boolean }> = [];
    const groupVersions = ['v1', ...((await adminApi.get('/apis')).groups as any[]).map((g) => g.preferredVersion.groupVersion)];
    for (const gv of groupVersions) {
      const list = await adminApi.get(gv === 'v1' ? '/api/v1' : `/apis/${gv}`);
      const group = gv.includes('/') ? gv.split('/')[0] : '';
      for (const r of list.resources) resources.push({ group, resource: r.name, namespaced: r.namespaced });
    }
    assert.ok(resources.length > 20, `${resources.length} resources`);
    const allowedWrites: string[] = [];
    // the review APIs are creates that store nothing (every authenticated user may ask about itself)
    for (const r of resources.filter((x) => !/reviews$/.test(x.resource))) {
      const [resource, subresource = ''] = r.resource.split('/');
      for (const verb of ['create', 'update', 'patch', 'delete', 'deletecollection', 'escalate', 'bind', 'impersonate']) {
        for (const namespace of r.namespaced ? ['default', 'claimflow', 'kube-system'] : ['']) {
          for (const name of ['', 'claimflow-forwarder']) {
            if (await can({ verb, group: r.group, resource, subresource, namespace, name })) allowedWrites.push(`${verb} ${r.resource}${r.group ? `.${r.group}` : ''} ${namespace}/${name}`);
          }
        }
      }
    }
    assert.deepEqual(allowedWrites.sort(), [
      'create leases.coordination.k8s.io claimflow/',
      'create leases.coordination.k8s.io claimflow/claimflow-forwarder',
      'update leases.coordination.k8s.io claimflow/claimflow-forwarder',
    ], 'leader election only');
    // it reads (lists and watches) exactly what it forwards
    for (const [group, resource] of [['', 'persistentvolumes'], ['', 'persistentvolumeclaims'], ['', 'nodes'], ['', 'services'], ['', 'endpoints'], ['storage.k8s.io', 'storageclasses'], ['storage.k8s.io', 'volumeattachments']]) {
      for (const verb of ['list', 'watch']) assert.equal(await can({ verb, group, resource }), true, `${verb} ${resource}`);
    }
    assert.equal(await can({ verb: 'get', resource: 'secrets', namespace: 'claimflow' }), false, 'no secrets');
    // and a real write is refused with upstream's message
    const denied = await fwd.raw('POST', '/api/v1/persistentvolumes', { metadata: { name: 'x' } });
    assert.equal(denied.status, 403);
    assert.equal(denied.body.message, 'persistentvolumes is forbidden: User "system:serviceaccount:claimflow:claimflow-forwarder" cannot create resource "persistentvolumes" in API group "" at the cluster scope');
    const patch = await fwd.raw('PATCH', '/api/v1/nodes/local-node', { metadata: { labels: { x: 'y' } } }, 'application/merge-patch+json');
    assert.equal(patch.status, 403);
  });

  it('the forwarder\'s leader election works under its role, on its own Lease only', async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(stack.identities!.forwarder!.kubeconfigPath);
    const elect = (name: string) => {
      const state = { leading: false, errors: [] as unknown[] };
      const elector = new LeaderElector(new KubeTransport(kc), {
        namespace: 'claimflow', name, identity: 'rbac-test', retryPeriodMs: 50,
        onStartedLeading: () => { state.leading = true; },
        onStoppedLeading: () => { state.leading = false; },
        onError: (err) => state.errors.push(err),
      });
      elector.start();
      return { elector, state };
    };
    const own = elect('claimflow-forwarder');
    await eventually(() => own.state.leading, 10_000, 'leading');
    await own.elector.stop();
    assert.deepEqual(own.state.errors, []);
    const lease = await asUser(stack.kubeconfigPath).get('/apis/coordination.k8s.io/v1/namespaces/claimflow/leases/claimflow-forwarder');
    assert.equal(lease.spec.holderIdentity, undefined, `released: ${JSON.stringify(lease.spec)}`);
    // any other Lease: it may create one but never get or renew it
    const other = elect('someone-else');
    await eventually(() => other.state.errors.length > 0, 10_000, 'an error');
    await other.elector.stop();
    assert.equal(other.state.leading, false);
    assert.match(String((other.state.errors[0] as Error).message), /leases.coordination.k8s.io "someone-else" is forbidden: User "system:serviceaccount:claimflow:claimflow-forwarder" cannot get resource "leases"/);
  });
});

/** Raw JSON calls with a kubeconfig's server, CA and token. */
function asUser(kubeconfigPath: string) {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  const cluster = kc.getCurrentCluster()!;
  const user = kc.getCurrentUser()!;
  const agent = new Agent({ connect: { ca: Buffer.from(cluster.caData!, 'base64').toString() } });
  agents.push(agent);
  const raw = async (method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<{ status: number; body: any }> => {
    const res = await fetch(cluster.server + path, {
      method, dispatcher: agent,
      headers: { authorization: `Bearer ${user.token}`, ...(body !== undefined ? { 'content-type': contentType } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: res.status, body: await res.json() };
  };
  return {
    raw,
    async get(path: string): Promise<any> {
      const r = await raw('GET', path);
      if (r.status !== 200) throw new Error(`GET ${path}: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body;
    },
    async post(path: string, body: unknown): Promise<any> {
      const r = await raw('POST', path, body);
      if (r.status !== 201) throw new Error(`POST ${path}: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body;
    },
  };
}
