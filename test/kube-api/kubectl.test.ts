// kubectl compatibility: the real kubectl binary (Debian's kubernetes-client, or whichever kubectl is on PATH)
// against the emulator with its real kinds, admission and controllers, over plain http.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startKubeApi, type KubeApi } from '../../infra/local/kube-api/index.ts';
import { PROJECT_ROOT } from '../../infra/build/bundle.ts';

const run = promisify(execFile);
const present = spawnSync('kubectl', ['version', '--client', '-o', 'json'], { encoding: 'utf8' });
const available = present.status === 0;
if (!available) {
  console.error('\n*** kubectl is NOT installed: the kubectl compatibility test is SKIPPED. Install it with `apt-get install -y kubernetes-client` (npm test\'s pretest does). ***\n');
}
const minor = available ? Number.parseInt(JSON.parse(present.stdout).clientVersion.minor, 10) : 0;

const MANIFEST = `
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: fast
provisioner: example.com/csi
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: pv1
spec:
  capacity:
    storage: 1Gi
  accessModes: [ReadWriteOnce]
  csi:
    driver: example.com
    volumeHandle: h1
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: c1
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: fast
  resources:
    requests:
      storage: 1Gi
---
apiVersion: v1
kind: Service
metadata:
  name: s1
spec:
  ports:
  - port: 80
---
apiVersion: v1
kind: Node
metadata:
  name: n1
`;

describe(`kubectl ${available ? `v1.${minor}` : '(absent)'} against the emulator`, { skip: !available && 'kubectl is not installed' }, () => {
  let api: KubeApi;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const kubectl = async (...args: string[]): Promise<string> => {
    try {
      return (await run('kubectl', args, { env, timeout: 30_000 })).stdout;
    } catch (err) {
      const e = err as { stderr?: string; message: string };
      throw new Error(`kubectl ${args.join(' ')} failed: ${e.stderr ?? e.message}`, { cause: err });
    }
  };
  const getJson = async (...args: string[]): Promise<any> => JSON.parse(await kubectl('get', ...args, '-o', 'json'));

  before(async () => {
    api = await startKubeApi();
    dir = await mkdtemp(join(tmpdir(), 'kubectl-'));
    await api.writeKubeconfig(join(dir, 'config'));
    await writeFile(join(dir, 'objects.yaml'), MANIFEST);
    env = { PATH: process.env.PATH, KUBECONFIG: join(dir, 'config'), HOME: dir };
  });
  after(async () => {
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('apply -f creates a StorageClass, PV, PVC, Service and Node; a second apply changes nothing', async () => {
    // Client-side validation stays on: the emulator serves an (empty) OpenAPI v2 document.
    const out = await kubectl('apply', '-f', join(dir, 'objects.yaml'));
    for (const line of ['storageclass.storage.k8s.io/fast created', 'persistentvolume/pv1 created', 'persistentvolumeclaim/c1 created', 'service/s1 created', 'node/n1 created']) {
      assert.ok(out.includes(line), `${line} in:\n${out}`);
    }
    const rv = api.store.revision;
    const again = await kubectl('apply', '-f', join(dir, 'objects.yaml'));
    assert.equal((again.match(/unchanged/g) ?? []).length, 5, again);
    assert.equal(api.store.revision, rv);
  });

  it('get: default table with server-side columns, -o json, -o wide, short names', async () => {
    const table = await kubectl('get', 'pvc');
    const [header, row] = table.trim().split('\n');
    assert.match(header, /^NAME\s+STATUS\s+VOLUME\s+CAPACITY\s+ACCESS MODES\s+STORAGECLASS/);
    assert.match(row, /^c1\s+Pending\s+fast/);
    const all = await kubectl('get', 'pv,sc,svc,no');
    for (const name of ['persistentvolume/pv1', 'storageclass.storage.k8s.io/fast', 'service/s1', 'node/n1']) assert.ok(all.includes(name), all);
    const json = await getJson('pvc', 'c1');
    assert.equal(json.kind, 'PersistentVolumeClaim');
    assert.equal(json.spec.resources.requests.storage, '1Gi');
    assert.ok(json.metadata.finalizers.includes('kubernetes.io/pvc-protection'));
    const wide = await kubectl('get', 'pvc', '-o', 'wide');
    assert.match(wide.split('\n')[0], /VOLUMEMODE/);
    const svc = await kubectl('get', 'svc', 's1');
    assert.match(svc, /s1\s+ClusterIP\s+\d+\.\d+\.\d+\.\d+/);
  });

  it('label, annotate and patch --type merge|json|strategic', async () => {
    assert.match(await kubectl('label', 'pvc', 'c1', 'tier=gold'), /labeled/);
    assert.match(await kubectl('annotate', 'pvc', 'c1', 'note=hello'), /annotated/);
    await kubectl('patch', 'pvc', 'c1', '--type', 'merge', '-p', '{"metadata":{"labels":{"merged":"yes"}}}');
    await kubectl('patch', 'pvc', 'c1', '--type', 'json', '-p', '[{"op":"add","path":"/metadata/labels/json","value":"yes"}]');
    await kubectl('patch', 'pvc', 'c1', '--type', 'strategic', '-p', '{"metadata":{"finalizers":["example.com/hold"]}}');
    const pvc = api.store.get({ resource: '/persistentvolumeclaims', namespace: 'default', name: 'c1' })!;
    assert.deepEqual(pvc.metadata.labels, { tier: 'gold', merged: 'yes', json: 'yes' });
    assert.equal(pvc.metadata.annotations!.note, 'hello');
    assert.deepEqual(pvc.metadata.finalizers, ['kubernetes.io/pvc-protection', 'example.com/hold'], 'strategic merge unions finalizers');
  });

  it('imperative creates as users type them: namespace, secret, configmap, serviceaccount (protobuf bodies from kubectl ≥1.2x), and create token', async () => {
    assert.match(await kubectl('create', 'namespace', 'proto'), /namespace\/proto created/);
    assert.match(await kubectl('create', 'secret', 'generic', 'storageos-api', '-n', 'proto', '--from-literal=username=storageos', '--from-literal=password=pw'), /secret\/storageos-api created/);
    assert.match(await kubectl('create', 'configmap', 'settings', '-n', 'proto', '--from-literal=mode=fast'), /configmap\/settings created/);
    assert.match(await kubectl('create', 'serviceaccount', 'builder', '-n', 'proto'), /serviceaccount\/builder created/);
    const secret = api.store.get({ resource: '/secrets', namespace: 'proto', name: 'storageos-api' })!;
    assert.equal(Buffer.from(secret.data.password, 'base64').toString(), 'pw');
    assert.deepEqual(api.store.get({ resource: '/configmaps', namespace: 'proto', name: 'settings' })!.data, { mode: 'fast' });
    await assert.rejects(kubectl('create', 'namespace', 'proto'), /AlreadyExists/);
    assert.match(await kubectl('get', 'sa', '-n', 'proto'), /builder/);
    if (minor >= 24) {
      const token = (await kubectl('create', 'token', 'builder', '-n', 'proto', '--duration=20m')).trim();
      const identity = api.tokens.verify(token, api.store);
      assert.equal(identity.username, 'system:serviceaccount:proto:builder');
      assert.ok(identity.expiresAt.getTime() - Date.now() <= 20 * 60_000);
    }
  });

  it('apply -k infra/k8s: our own manifests (Namespace, ServiceAccount, RBAC, Deployment); a second apply changes nothing', async () => {
    const out = await kubectl('apply', '-k', join(PROJECT_ROOT, 'infra/k8s'));
    for (const line of ['namespace/claimflow created', 'serviceaccount/claimflow-forwarder created', 'deployment.apps/claimflow-forwarder created',
      'clusterrole.rbac.authorization.k8s.io/claimflow-forwarder created', 'clusterrolebinding.rbac.authorization.k8s.io/claimflow-binder created',
      'role.rbac.authorization.k8s.io/claimflow-forwarder-lease created', 'rolebinding.rbac.authorization.k8s.io/claimflow-forwarder-lease created']) {
      assert.ok(out.includes(line), `${line} in:\n${out}`);
    }
    const deployment = api.store.get({ resource: 'apps/deployments', namespace: 'claimflow', name: 'claimflow-forwarder' })!;
    assert.equal(deployment.spec.replicas, 2);
    assert.equal(deployment.spec.template.spec.serviceAccountName, 'claimflow-forwarder');
    assert.equal(deployment.metadata.generation, 1);
    const rv = api.store.revision;
    const again = await kubectl('apply', '-k', join(PROJECT_ROOT, 'infra/k8s'));
    assert.equal(again.split('\n').filter((l) => l && !l.endsWith(' unchanged')).length, 0, again);
    assert.equal(api.store.revision, rv);
    assert.match(await kubectl('get', 'deploy', '-n', 'claimflow'), /claimflow-forwarder\s+0\/2/);
  });

  /** Runs `kubectl get ... -w`; once `ready(out)` and its watch is open, applies `change`; resolves when `done(out)`. */
  const watchFor = async (args: string[], ready: (out: string) => boolean, change: () => void, done: (out: string) => boolean): Promise<string> => {
    const watchesBefore = api.requests.count('watch', 'persistentvolumeclaims');
    const child = spawn('kubectl', args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let diagnostics = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { diagnostics += d.toString(); });
    const until = async (cond: () => boolean, what: string): Promise<void> => {
      for (let waited = 0; !cond(); waited += 20) {
        if (waited > 15_000) throw new Error(`kubectl ${args.join(' ')}: no ${what}; saw:\n${out}\n${diagnostics}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    try {
      await until(() => ready(out), 'initial output');
      // kubectl skips the watch's initial ADDED for the object it already printed: change it only once the watch is open
      await until(() => api.requests.count('watch', 'persistentvolumeclaims') > watchesBefore, 'watch request');
      change();
      await until(() => done(out), 'output for the change');
      return out;
    } finally {
      child.kill();
    }
  };

  const relabel = (value: string) => (): void => {
    const pvc = api.store.get({ resource: '/persistentvolumeclaims', namespace: 'default', name: 'c1' })!;
    pvc.metadata.labels = { ...pvc.metadata.labels, watched: value };
    api.store.update('/persistentvolumeclaims', pvc);
  };

  it('get -w sees a change made by another client (server-side Table rows, and -o jsonpath)', async () => {
    const rows = (out: string) => (out.match(/c1\s+Pending/g) ?? []).length;
    const table = await watchFor(['get', 'pvc', 'c1', '-w'], (o) => rows(o) >= 1, relabel('first'), (o) => rows(o) >= 2);
    assert.match(table, /^NAME\s+STATUS/);
    const path = await watchFor(['get', 'pvc', 'c1', '-w', '-o', 'jsonpath={.metadata.labels.watched}{"\\n"}'],
      (o) => o.includes('first'), relabel('second'), (o) => o.includes('second'));
    assert.deepEqual(path.trim().split('\n').filter(Boolean).slice(-1), ['second']);
  });

  it('wait --for=condition (and --for=jsonpath where kubectl supports it)', async () => {
    const node = api.store.get({ resource: '/nodes', namespace: '', name: 'n1' })!;
    node.status = { ...node.status, conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'ready' }] };
    api.store.update('/nodes', node, 'status');
    assert.match(await kubectl('wait', '--for=condition=Ready', 'node/n1', '--timeout=10s'), /condition met/);
    if (minor >= 23) {
      assert.match(await kubectl('wait', '--for=jsonpath={.status.phase}=Pending', 'pvc/c1', '--timeout=10s'), /condition met/);
    }
  });

  it('delete: immediate without finalizers; with a finalizer the object lingers until it is removed (wait --for=delete)', async () => {
    assert.match(await kubectl('delete', 'svc', 's1'), /deleted/);
    assert.equal(api.store.get({ resource: '/services', namespace: 'default', name: 's1' }), undefined);
    await writeFile(join(dir, 'cm.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: created\ndata:\n  k: v\n');
    assert.match(await kubectl('create', '-f', join(dir, 'cm.yaml')), /configmap\/created created/);
    assert.match(await kubectl('delete', 'configmap', 'created'), /deleted/);
    await kubectl('delete', 'pvc', 'c1', '--wait=false');
    const deleting = await getJson('pvc', 'c1');
    assert.ok(deleting.metadata.deletionTimestamp);
    assert.deepEqual(deleting.metadata.finalizers, ['example.com/hold'], 'pvc-protection removed by its controller (no pods), ours stays');
    const waiting = kubectl('wait', '--for=delete', 'pvc/c1', '--timeout=20s');
    await new Promise((r) => setTimeout(r, 300));
    await kubectl('patch', 'pvc', 'c1', '--type', 'json', '-p', '[{"op":"remove","path":"/metadata/finalizers"}]');
    await waiting;
    assert.equal(api.store.get({ resource: '/persistentvolumeclaims', namespace: 'default', name: 'c1' }), undefined);
    assert.match(await kubectl('delete', '-f', join(dir, 'objects.yaml'), '--ignore-not-found'), /deleted/);
    const left = await kubectl('get', 'pv,sc,no', '--ignore-not-found');
    assert.equal(left.trim(), '');
  });
});
