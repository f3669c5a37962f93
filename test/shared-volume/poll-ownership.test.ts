/**
 * One poll owner per cluster, through the stand-ins (API emulator, dynalite, storage control plane): scheduled
 * invocations run as Lambda runs them (a context with a deadline, a timeout), each as its own container (its own
 * poller and storage client), and each container records when its list calls ran.
 *
 * - a schedule delivered twice at once: exactly one invocation polls, the other ends at once;
 * - a successor that starts while the owner still polls waits for the owner's handover and then polls at once:
 *   the two never poll together, and polling goes on without a gap of more than the owner's stop margin;
 * - an owner that died holding the lease is taken over when its lease ends, not before.
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';

import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { invokeWithTimeout } from '../../infra/local/stack/event-source.ts';
import { MemoryEventRecorder } from '../../lib/kube/recorder.ts';
import { DEFAULT_CONFIG, type SharedVolumeConfig } from '../../lib/shared-volume/config.ts';
import { createScheduledPoller, type ScheduledPollEvent, type ScheduledPollSummary } from '../../lib/shared-volume/controller.ts';
import { LeaseStore } from '../../lib/state/lease.ts';
import { overlaps, recordingStorage, startStandIns, type ListCall, type StandIns } from './support.ts';

/** Short passes, a stop margin of 0.5 s; the Lambda timeout (per test) is what ends an invocation. */
const config: SharedVolumeConfig = { ...DEFAULT_CONFIG, pollIntervalMs: 200, createPollIntervalMs: 20, scheduleIntervalMs: 60_000, scheduleMarginMs: 500 };

describe('one poll owner per cluster', () => {
  let s: StandIns;
  let cluster = 0;

  before(async () => {
    s = await startStandIns();
    await s.sharedVolume();
    await s.sharedVolume();
  });
  after(async () => {
    await s?.stop();
  });

  /** A Lambda container of the sharedVolume function: its own poller and storage client. */
  const container = (name: string) => {
    const storage = recordingStorage(s.storage);
    const poll = createScheduledPoller({
      storage,
      config,
      env: { CLUSTER_ID: 'unused' },
      doc: s.db.doc,
      tables: s.db.tables,
      kube: s.kubeClients,
      recorderFor: () => new MemoryEventRecorder(),
    });
    return {
      lists: storage.lists as ListCall[],
      /** One scheduled invocation with a Lambda timeout of `timeoutMs`. */
      invoke: (event: ScheduledPollEvent, timeoutMs: number) =>
        invokeWithTimeout(poll, event, { functionName: name, region: 'us-east-1', timeoutMs }) as Promise<ScheduledPollSummary>,
    };
  };
  /** From the first list call's start to the last one's end: when the invocation was polling. */
  const window = (calls: ListCall[]): ListCall[] => (calls.length === 0 ? [] : [{ start: calls[0]!.start, end: calls.at(-1)!.end }]);
  /** The longest time without a list call between the first and the last one. */
  const maxGap = (calls: ListCall[]): number => {
    const sorted = [...calls].sort((a, b) => a.start - b.start);
    let gap = 0;
    for (let i = 1; i < sorted.length; i++) gap = Math.max(gap, sorted[i]!.start - sorted[i - 1]!.end);
    return gap;
  };

  it('a schedule delivered twice at once: one invocation polls, the other ends at once without polling', async () => {
    const event: ScheduledPollEvent = { action: 'poll', cluster: `dup-${++cluster}` };
    const a = container('sv-a');
    const b = container('sv-b');
    const started = Date.now();
    const [ra, rb] = await Promise.all([a.invoke(event, 2500), b.invoke(event, 2500)]);
    assert.ok(!overlaps(window(a.lists), window(b.lists)), 'the two invocations never polled at the same time');
    assert.equal([a.lists.length, b.lists.length].filter((n) => n === 0).length, 1, `exactly one invocation polled (lists ${a.lists.length} / ${b.lists.length})`);
    const [owner, other] = ra.owner ? [ra, rb] : [rb, ra];
    assert.equal(owner.owner, true);
    assert.ok(owner.iterations >= 3, `owner iterations ${owner.iterations}`);
    assert.equal(other.owner, false);
    assert.equal(other.notOwner, 'covered');
    assert.ok(other.waitedMs < 500, `the duplicate ended at once (waited ${other.waitedMs} ms)`);
    assert.ok(Date.now() - started < 2500, 'both ended before the timeout');
  });

  it('a successor started while the owner polls waits for the handover, then polls at once: never together, no gap', async () => {
    const event: ScheduledPollEvent = { action: 'poll', cluster: `handover-${++cluster}` };
    const a = container('sv-a');
    const b = container('sv-b');
    const first = a.invoke(event, 3000); // polls until 2.5 s, its lease lasts until 3 s
    await sleep(1500);
    const second = b.invoke(event, 3000); // starts 1.5 s in: the owner still polls for 1 s
    const [ra, rb] = await Promise.all([first, second]);
    assert.ok(a.lists.length >= 3 && b.lists.length >= 3, `both polled (lists ${a.lists.length} / ${b.lists.length})`);
    assert.ok(!overlaps(window(a.lists), window(b.lists)), 'the two invocations never polled at the same time');
    assert.ok(b.lists[0]!.start >= a.lists.at(-1)!.end, 'the successor polls only after the owner stopped');
    assert.equal(ra.owner, true);
    assert.equal(rb.owner, true);
    assert.ok(rb.waitedMs >= 500, `the successor waited for the handover (${rb.waitedMs} ms)`);
    const gap = maxGap([...a.lists, ...b.lists]);
    // The owner's last pass runs as late as still fits before its stop; the successor takes over within one
    // handover check of the release and polls at once.
    assert.ok(gap < config.scheduleMarginMs + 1000, `polling continuous across the handover (largest gap ${gap} ms)`);
  });

  it('an owner that died holding the lease is taken over when its lease ends, not before', async () => {
    const event: ScheduledPollEvent = { action: 'poll', cluster: `dead-${++cluster}` };
    const leases = new LeaseStore({ doc: s.db.doc, table: s.db.tables.control });
    const dead = await leases.acquire(`sv-poll#${event.cluster}`, 'a-crashed-invocation', 1200);
    const c = container('sv-c');
    const summary = await c.invoke(event, 3000);
    assert.equal(summary.owner, true);
    assert.ok(c.lists.length > 0, 'it polled');
    assert.ok(c.lists[0]!.start >= dead.expiresAt, `no poll before the dead owner's lease ended (${c.lists[0]!.start - dead.expiresAt} ms)`);
    assert.ok(c.lists[0]!.start - dead.expiresAt < 1000, 'taken over soon after');
  });
});
