/**
 * The deployed artifact itself: every function bundled as `npm run build` bundles it (infra/build/bundle.ts,
 * here into a folder of the test's own), run by the local stack from its bundle (`functionBundles`), and a
 * static claim bound and a default-class claim provisioned and bound through the bundled binder and
 * provisioner, via the forwarder, SNS and SQS, and the scheduled resync run through. The bundles leave out @kubernetes/client-node's generated
 * client, which only the shared-volume function uses: the whole of it is most of a bundle, and read and
 * compiled at every cold start.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { bundleFunctions, type BundleResult } from '../../infra/build/bundle.ts';
import { LOCAL_STORAGE_CLASS } from '../../infra/local/stack/local-cluster.ts';
import { eventually, startTestStack, type Stack } from '../support/stack.ts';

const QUIET = { POWERTOOLS_LOG_LEVEL: 'ERROR', POWERTOOLS_METRICS_DISABLED: 'true' };
/** A class of the generated client of @kubernetes/client-node, present wherever any of it is. */
const GENERATED_CLIENT = 'ObservableCoreV1Api';

describe('the functions as bundled for deployment, on the local stack', () => {
  let dir: string;
  let bundles: BundleResult[];
  let stack: Stack;
  let core: CoreV1Api;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'claimflow-bundles-'));
    bundles = await bundleFunctions({ outDir: dir });
    stack = await startTestStack({ functionBundles: dir, withForwarder: true, functionEnv: QUIET });
    const kc = new KubeConfig();
    kc.loadFromFile(stack.kubeconfigPath);
    core = kc.makeApiClient(CoreV1Api);
  });

  after(async () => {
    await stack?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('bundles every function into the folder given, and only the shared-volume function carries the generated client', async () => {
    assert.deepEqual(bundles.map((b) => b.name).sort(), ['binder', 'labelSync', 'provisioner', 'resync', 'sharedVolume']);
    for (const bundle of bundles) {
      assert.equal(bundle.outfile, join(dir, bundle.name, 'index.mjs'));
      const code = await readFile(bundle.outfile, 'utf8');
      assert.equal(code.includes(GENERATED_CLIENT), bundle.name === 'sharedVolume', `${bundle.name}: the generated client ${bundle.name === 'sharedVolume' ? 'missing' : 'bundled'}`);
    }
    const size = (name: string) => bundles.find((b) => b.name === name)!.bytes;
    assert.ok(size('binder') < size('sharedVolume') * 0.8, `binder ${size('binder')} bytes, shared-volume ${size('sharedVolume')}`);
  });

  it('binds a static claim through the bundled binder', async () => {
    await core.createPersistentVolume({
      body: {
        metadata: { name: 'pv-bundled' },
        spec: { capacity: { storage: '2Gi' }, accessModes: ['ReadWriteOnce'], storageClassName: 'manual', hostPath: { path: '/tmp/pv-bundled' } },
      },
    });
    await core.createNamespacedPersistentVolumeClaim({
      namespace: 'default',
      body: { metadata: { name: 'static' }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'manual', resources: { requests: { storage: '1Gi' } } } },
    });
    await eventually(async () => (await core.readNamespacedPersistentVolumeClaim({ namespace: 'default', name: 'static' })).status?.phase === 'Bound', 30_000, 'the static claim Bound');
    const claim = await core.readNamespacedPersistentVolumeClaim({ namespace: 'default', name: 'static' });
    assert.equal(claim.spec?.volumeName, 'pv-bundled');
    const volume = await core.readPersistentVolume({ name: 'pv-bundled' });
    assert.equal(volume.spec?.claimRef?.uid, claim.metadata?.uid);
  });

  it('provisions and binds a default-class claim through the bundled provisioner and binder', async () => {
    await core.createNamespacedPersistentVolumeClaim({
      namespace: 'default',
      body: { metadata: { name: 'dynamic' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } },
    });
    await eventually(async () => (await core.readNamespacedPersistentVolumeClaim({ namespace: 'default', name: 'dynamic' })).status?.phase === 'Bound', 30_000, 'the default-class claim Bound');
    const claim = await core.readNamespacedPersistentVolumeClaim({ namespace: 'default', name: 'dynamic' });
    assert.equal(claim.spec?.storageClassName, LOCAL_STORAGE_CLASS);
    const volume = await core.readPersistentVolume({ name: claim.spec!.volumeName! });
    assert.equal(volume.spec?.claimRef?.uid, claim.metadata?.uid);
    assert.ok(volume.metadata?.annotations?.['pv.kubernetes.io/provisioned-by'], 'provisioned by the provisioner');
    assert.ok(stack.storageApi?.state.allVolumes().some((v) => v.name === volume.metadata?.name), 'its backend volume exists');
  });

  it('runs the bundled resync to the end without errors', async () => {
    const report = (await stack.invoke('resync', { source: 'aws.events', 'detail-type': 'Scheduled Event', detail: {} })) as { errors?: unknown[] };
    assert.deepEqual(report.errors, []);
  });
});
