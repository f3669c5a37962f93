/**
 * The soak (test/bench/soak) in short: 60 s of workload on two emulated clusters served by one deployment,
 * overlapping faults from a fixed seed (SQS/DynamoDB throttling, 500s and latency through the fault proxy
 * among them, a 12-s DynamoDB outage and watch streams cut), then faults off, settle, and every invariant
 * per cluster. No
 * function sandbox is killed here: a killed batch's messages come back only after the queue's visibility
 * timeout (72–120 s in the soak), longer than this test may take; `npm run soak` kills them.
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatReport } from '../bench/soak/report.ts';
import { runSoak } from '../bench/soak/run.ts';

const SEED = 20_240_613;

describe('soak: two clusters, one deployment, overlapping faults (60 s, fixed seed)', () => {
  it('converges with every invariant holding on both clusters', async () => {
    const report = await runSoak({ minutes: 1, seed: SEED, opsPerSecond: 2, faultRate: 0.3, killable: [], settleTimeoutMs: 45_000 });
    const text = formatReport(report);
    assert.ok(report.ok, text);
    for (const c of report.clusters) assert.ok(c.totalOperations > 50, `cluster ${c.id}: only ${c.totalOperations} operations`);
    const awsHits = Object.values(report.awsRequestsHit).reduce((sum, n) => sum + n, 0);
    assert.ok((report.faultsByCluster.aws ?? 0) > 0 && awsHits > 0, `AWS faults planned and hitting requests:\n${text}`);
  });
});
