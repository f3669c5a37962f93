import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { BackoffStore, exponentialDelayMs, rateLimiterConfigFromEnv, WORKQUEUE_DEFAULTS } from '../../lib/state/backoff.ts';
import { startDynalite, type Dynalite } from '../support/dynalite.ts';

describe('exponentialDelayMs (client-go ItemExponentialFailureRateLimiter)', () => {
  // Upstream TestItemExponentialFailureRateLimiter: base 1ms, max 1s → 1, 2, 4, 8, 16 ms; then the cap.
  const table: Array<[failures: number, base: number, max: number, want: number]> = [
    [1, 1, 1000, 1],
    [2, 1, 1000, 2],
    [3, 1, 1000, 4],
    [4, 1, 1000, 8],
    [5, 1, 1000, 16],
    [11, 1, 1000, 1000],
    [1, 5, 1_000_000, 5],
    [10, 5, 1_000_000, 2560],
    [18, 5, 1_000_000, 655_360],
    [19, 5, 1_000_000, 1_000_000],
    [500, 5, 1_000_000, 1_000_000],
  ];
  for (const [failures, baseDelayMs, maxDelayMs, want] of table) {
    test(`failure ${failures}, base ${baseDelayMs} ms, max ${maxDelayMs} ms → ${want} ms`, () => {
      assert.equal(exponentialDelayMs(failures, { baseDelayMs, maxDelayMs }), want);
    });
  }
  test('defaults are the workqueue defaults and env overrides them', () => {
    assert.deepEqual(rateLimiterConfigFromEnv({}), { baseDelayMs: 5, maxDelayMs: 1_000_000 });
    assert.deepEqual(WORKQUEUE_DEFAULTS, { baseDelayMs: 5, maxDelayMs: 1_000_000 });
    assert.deepEqual(rateLimiterConfigFromEnv({ BACKOFF_BASE_DELAY_MS: '1000', BACKOFF_MAX_DELAY_MS: '60000' }), {
      baseDelayMs: 1000,
      maxDelayMs: 60000,
    });
    assert.deepEqual(rateLimiterConfigFromEnv({ BACKOFF_BASE_DELAY_MS: 'x', BACKOFF_MAX_DELAY_MS: '-1' }), WORKQUEUE_DEFAULTS);
  });
});

describe('BackoffStore against dynalite', () => {
  let db: Dynalite;
  const clock = 1_000_000;
  let store: BackoffStore;
  before(async () => {
    db = await startDynalite();
    store = new BackoffStore({ doc: db.doc, table: db.tables.control, now: () => clock });
  });
  after(() => db.stop());
  const id = { controller: 'binder', cluster: 'c1', kind: 'PersistentVolumeClaim', key: 'ns/claim' };

  test('failures grow the delay; clear forgets', async () => {
    const delays: number[] = [];
    for (let i = 1; i <= 4; i++) {
      const { record, delayMs } = await store.recordFailure(id, `boom ${i}`, { uid: 'u1', resourceVersion: '7' });
      assert.equal(record.failures, i);
      assert.equal(record.nextAttemptAt, clock + delayMs);
      delays.push(delayMs);
    }
    assert.deepEqual(delays, [5, 10, 20, 40]);
    const stored = await store.get(id);
    assert.equal(stored?.failures, 4);
    assert.equal(stored?.lastError, 'boom 4');
    assert.equal(stored?.uid, 'u1');
    assert.equal(stored?.pk, 'backoff#binder#c1#PersistentVolumeClaim#ns/claim');
    await store.clear(id);
    assert.equal(await store.get(id), undefined);
  });

  test('concurrent failures are each counted once (conditional writes)', async () => {
    const other = { ...id, key: 'ns/concurrent' };
    await Promise.all([1, 2, 3].map((i) => store.recordFailure(other, `e${i}`)));
    assert.equal((await store.get(other))?.failures, 3);
  });

  test('a stale hint of the previous record costs a retry, never a wrong count', async () => {
    const hinted = { ...id, key: 'ns/hinted' };
    assert.equal((await store.recordFailure(hinted, 'a', {}, null)).record.failures, 1);
    assert.equal((await store.recordFailure(hinted, 'b', {}, null)).record.failures, 2, 'hint said absent; the record existed');
    const current = await store.get(hinted);
    assert.equal((await store.recordFailure(hinted, 'c', {}, current)).record.failures, 3);
  });

  test('park → listDue when due → unpark once', async () => {
    const parked = { ...id, key: 'ns/parked' };
    await store.recordFailure(parked, 'x', { uid: 'u2', resourceVersion: '9' });
    await store.park(parked, clock + 60_000);
    assert.equal((await store.listDue(clock)).some((r) => r.key === 'ns/parked'), false);
    const due = (await store.listDue(clock + 60_000)).filter((r) => r.key === 'ns/parked');
    assert.equal(due.length, 1);
    assert.equal(due[0].failures, 1, 'parking keeps the failure count');
    assert.equal(due[0].uid, 'u2');
    assert.equal(due[0].resourceVersion, '9');
    assert.equal(await store.unpark(due[0]), true);
    assert.equal(await store.unpark(due[0]), false, 'a second resync run does not take it again');
    assert.equal((await store.listDue(clock + 60_000)).some((r) => r.key === 'ns/parked'), false);
    const rec = await store.delay(parked, clock + 5);
    assert.equal(rec.dueAt, undefined);
    assert.equal(rec.failures, 1);
  });
  test('a scoped stream is a record of its own that parks as the key, with its own UID', async () => {
    const key = { ...id, key: 'ns/scoped' };
    const scoped = { ...key, scope: 'earlier-uid' };
    await store.park(key, clock + 10, { uid: 'current-uid' });
    await store.park(scoped, clock + 60_000, { uid: 'earlier-uid' });
    assert.equal((await store.get(scoped))?.pk, 'backoff#binder#c1#PersistentVolumeClaim#ns/scoped#earlier-uid');
    const due = (await store.listDue(clock + 60_000)).filter((r) => r.key === 'ns/scoped');
    assert.deepEqual(due.map((r) => [r.controller, r.cluster, r.kind, r.key, r.uid]).sort(), [
      ['binder', 'c1', 'PersistentVolumeClaim', 'ns/scoped', 'current-uid'],
      ['binder', 'c1', 'PersistentVolumeClaim', 'ns/scoped', 'earlier-uid'],
    ]);
    await store.clear(key);
    assert.equal((await store.get(scoped))?.uid, 'earlier-uid', "clearing the key's record leaves the scoped one");
    await store.clear(scoped);
    assert.equal(await store.get(scoped), undefined);
  });
});
