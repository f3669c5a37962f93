/**
 * Issue #17 end to end through the local stack: a claim with `spec.selector` of the default class. The
 * emulator's DefaultStorageClass admission gives it the shipped `local` class, the binder finds no
 * static volume and hands it to the external provisioner (the storage-provisioner annotation), and the
 * provisioner refuses it as csi-provisioner does: Warning `ProvisioningFailed` "claim Selector is not
 * supported", no PV, no backend volume, the claim stays Pending. Everything runs from source in the
 * stack's workers, wired from serverless.yml; retry pacing is shortened through the functions'
 * environment.
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, KubeConfig, type CoreV1Event } from '@kubernetes/client-node';
import { eventually, startTestStack, type Stack } from '../support/stack.ts';
import { LOCAL_PROVISIONER_NAME } from '../../infra/local/stack/local-cluster.ts';

const NS = 'default';

describe('provisioner end to end: a selector claim of the default class is refused', () => {
  let stack: Stack;
  let core: CoreV1Api;

  before(async () => {
    stack = await startTestStack({
      withForwarder: true,
      functionEnv: {
        POWERTOOLS_LOG_LEVEL: 'SILENT',
        POWERTOOLS_METRICS_DISABLED: 'true',
        PROVISIONER_RETRY_INTERVAL_START_MS: '250',
        PROVISIONER_RETRY_INTERVAL_MAX_MS: '1000',
      },
    });
    const kc = new KubeConfig();
    kc.loadFromFile(stack.kubeconfigPath);
    core = kc.makeApiClient(CoreV1Api);
  });
  after(async () => stack.stop());

  const claimEvents = async (name: string): Promise<CoreV1Event[]> =>
    (await core.listNamespacedEvent({ namespace: NS })).items.filter((e) => e.involvedObject.kind === 'PersistentVolumeClaim' && e.involvedObject.name === name);

  it('ProvisioningFailed "claim Selector is not supported", retried; no PV, no backend volume, claim Pending', async () => {
    await core.createNamespacedPersistentVolumeClaim({
      namespace: NS,
      body: {
        metadata: { name: 'selector-claim' },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, selector: { matchLabels: { tier: 'gold' } } },
      },
    });
    // Refused more than once: the error is retried with the normal backoff, as upstream's Finished + error.
    await eventually(async () => {
      const failed = (await claimEvents('selector-claim')).find((e) => e.reason === 'ProvisioningFailed');
      return (failed?.count ?? 0) >= 2;
    }, 30_000, 'ProvisioningFailed recorded twice');

    const claim = await core.readNamespacedPersistentVolumeClaim({ name: 'selector-claim', namespace: NS });
    assert.equal(claim.spec!.storageClassName, 'local', 'the default class');
    assert.equal(claim.metadata!.annotations!['volume.kubernetes.io/storage-provisioner'], LOCAL_PROVISIONER_NAME, 'handed to the provisioner by the binder');
    assert.equal(claim.status?.phase, 'Pending');
    assert.equal(claim.spec!.volumeName ?? '', '');

    const events = await claimEvents('selector-claim');
    const failures = events.filter((e) => e.reason === 'ProvisioningFailed');
    assert.deepEqual(failures.map((e) => [e.type, e.message]), [['Warning', 'claim Selector is not supported']]);
    assert.ok(events.some((e) => e.reason === 'Provisioning' && e.type === 'Normal'), 'each attempt announces itself first');
    assert.ok(!events.some((e) => e.reason === 'ProvisioningSucceeded'));

    const pvName = `pvc-${claim.metadata!.uid}`;
    const pvs = (await core.listPersistentVolume()).items.map((pv) => pv.metadata!.name);
    assert.ok(!pvs.includes(pvName), 'no PV');
    assert.equal(stack.storageApi!.state.allVolumes().filter((v) => v.name === pvName).length, 0, 'no backend volume');
  });
});
