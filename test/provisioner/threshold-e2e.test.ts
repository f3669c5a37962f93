/**
 * Give-up sticks, end to end through the local stack (issue 17): with a failure threshold, a claim whose
 * backend keeps failing gets its attempts, one `RetryThresholdExceeded`, and then nothing more — no new
 * round of retries — until the claim changes, which buys exactly one attempt. Once the backend is back,
 * the next change provisions it. Upstream's workqueue does the same (`Done` without `Forget`).
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions, type CoreV1Event } from '@kubernetes/client-node';
import { eventually, startTestStack, type Stack } from '../support/stack.ts';

const NS = 'default';
const CREATE_PATH = '/v2/namespaces/*/volumes';

describe('provisioner failure threshold through the local stack', () => {
  let stack: Stack;
  let core: CoreV1Api;

  before(async () => {
    stack = await startTestStack({
      withForwarder: true,
      functionEnv: {
        POWERTOOLS_LOG_LEVEL: 'SILENT',
        POWERTOOLS_METRICS_DISABLED: 'true',
        PROVISIONER_RETRY_INTERVAL_START_MS: '200',
        PROVISIONER_RETRY_INTERVAL_MAX_MS: '400',
        PROVISIONER_PROVISION_TIMEOUT_MS: '3000',
        // thresholds of 1: the runtime gives up at the second failure
        PROVISIONER_FAILED_PROVISION_THRESHOLD: '1',
        PROVISIONER_FAILED_DELETE_THRESHOLD: '1',
      },
    });
    const kc = new KubeConfig();
    kc.loadFromFile(stack.kubeconfigPath);
    core = kc.makeApiClient(CoreV1Api);
  });
  after(() => stack?.stop());

  const events = async (name: string): Promise<CoreV1Event[]> =>
    (await core.listNamespacedEvent({ namespace: NS })).items.filter((e) => e.involvedObject.kind === 'PersistentVolumeClaim' && e.involvedObject.name === name);
  const countOf = (list: CoreV1Event[], reason: string): number => list.filter((e) => e.reason === reason).reduce((n, e) => n + (e.count ?? 1), 0);
  const touch = (name: string, value: string) =>
    core.patchNamespacedPersistentVolumeClaim(
      { name, namespace: NS, body: { metadata: { labels: { touched: value } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  const quietFor = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('gives up once, stays given up, retries once per change, and provisions after the backend recovers', async () => {
    const faults = stack.storageApi!.faults;
    faults.add({ method: 'POST', path: CREATE_PATH, status: 503, times: 100_000 });
    await core.createNamespacedPersistentVolumeClaim({
      namespace: NS,
      body: { metadata: { name: 'stubborn' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } },
    });
    await eventually(async () => countOf(await events('stubborn'), 'RetryThresholdExceeded') === 1, 90_000, 'the threshold is reached');
    const givenUp = countOf(await events('stubborn'), 'ProvisioningFailed');
    assert.equal(givenUp, 2, 'two failed attempts, then the threshold');

    // Many retry intervals later: no new round of attempts.
    await quietFor(4_000);
    assert.equal(countOf(await events('stubborn'), 'ProvisioningFailed'), givenUp, 'no retry after giving up');

    // A change of the claim: exactly one more attempt, given up again at once, no second threshold event.
    await touch('stubborn', 'one');
    await eventually(async () => countOf(await events('stubborn'), 'ProvisioningFailed') === givenUp + 1, 30_000, 'one attempt after a change');
    await quietFor(4_000);
    const after = await events('stubborn');
    assert.equal(countOf(after, 'ProvisioningFailed'), givenUp + 1, 'one attempt per change, no new round');
    assert.equal(countOf(after, 'RetryThresholdExceeded'), 1, 'the threshold is reported once');

    // The backend recovers; the next change provisions the claim.
    faults.clear();
    await touch('stubborn', 'two');
    await eventually(async () => (await core.readNamespacedPersistentVolumeClaim({ name: 'stubborn', namespace: NS })).status?.phase === 'Bound', 60_000, 'Bound after recovery');
    assert.equal(countOf(await events('stubborn'), 'ProvisioningSucceeded'), 1);
  });
});
