/**
 * WriteBacks (lib/state/write-backs.ts): a sync's write-backs, one per object when its writes come quickly.
 * The put is recorded, not sent: what matters here is which versions are written back, naming which.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { DEFAULT_OWN_WRITE_HOLD_MS } from '../../../lib/forwarder/config.ts';
import { HOLD_STRETCH_LIMIT } from '../../../lib/forwarder/publisher.ts';
import { DEFAULT_WRITE_BACK_DEFER_MS, FORWARDER_HOLD_LIMIT_MS, WRITE_BACK_RTT_SAMPLE_LIMIT_MS, WriteBacks, writeBackDeferMs, WriteGaps } from '../../../lib/state/write-backs.ts';

const claim = (rv: number, name = 'data') => ({ metadata: { name, namespace: 'app', resourceVersion: String(rv) } });
const volume = (rv: number, name = 'pv-1') => ({ metadata: { name, resourceVersion: String(rv) } });

function recording(options: { failOn?: string; deferMs?: number; gaps?: WriteGaps } = {}) {
  const puts: string[] = [];
  const errors: string[] = [];
  const backs = new WriteBacks(
    async (kind, object, earlier) => {
      const id = `${kind} ${object.metadata?.name}@${object.metadata?.resourceVersion}${earlier.length ? ` earlier ${earlier.join(',')}` : ''}`;
      if (options.failOn && id.startsWith(options.failOn)) throw new Error('throttled');
      puts.push(id);
    },
    { deferMs: options.deferMs ?? 60_000, gaps: options.gaps ?? new WriteGaps(), onError: (error, kind, object) => errors.push(`${kind} ${object.metadata?.name}: ${String(error)}`) },
  );
  return { backs, puts, errors };
}

describe('WriteBacks', () => {
  test('two writes of one object: one write-back, naming the first version; other objects on their own', async () => {
    const { backs, puts } = recording();
    await backs.wrote('PersistentVolume', volume(11), { more: true });
    await backs.wrote('PersistentVolume', volume(12), { more: false });
    await backs.wrote('PersistentVolumeClaim', claim(13), { more: true });
    assert.deepEqual(puts, ['PersistentVolume pv-1@12 earlier 11'], 'the claim\'s first version waits for its second');
    await backs.wrote('PersistentVolumeClaim', claim(14), { more: false });
    await backs.settle();
    assert.deepEqual(puts, ['PersistentVolume pv-1@12 earlier 11', 'PersistentVolumeClaim data@14 earlier 13']);
    assert.equal(backs.sent, 2, 'four writes, two write-backs');
  });

  test('three writes of one object: the last names both', async () => {
    const { backs, puts } = recording();
    for (const [rv, more] of [[21, true], [22, true], [23, false]] as const) await backs.wrote('PersistentVolumeClaim', claim(rv), { more });
    await backs.settle();
    assert.deepEqual(puts, ['PersistentVolumeClaim data@23 earlier 21,22']);
  });

  test('a slow second write: the first is written back alone after deferMs, and the second still names it', async () => {
    const { backs, puts } = recording({ deferMs: 5 });
    await backs.wrote('PersistentVolume', volume(31), { more: true });
    const deadline = Date.now() + 10_000;
    while (puts.length === 0 && Date.now() < deadline) await sleep(5);
    assert.deepEqual(puts, ['PersistentVolume pv-1@31'], 'written back on its own while the second write is under way');
    await backs.wrote('PersistentVolume', volume(32), { more: false });
    await backs.settle();
    assert.deepEqual(puts, ['PersistentVolume pv-1@31', 'PersistentVolume pv-1@32 earlier 31']);
  });

  test('while second writes have come later than deferMs, a first version is written back at once; quick ones bring the waiting back', async () => {
    const gaps = new WriteGaps();
    const { backs, puts } = recording({ deferMs: 5, gaps });
    for (const rv of [61, 63, 65]) {
      await backs.wrote('PersistentVolume', volume(rv), { more: true });
      await sleep(40); // a slow second write
      await backs.wrote('PersistentVolume', volume(rv + 1), { more: false });
    }
    assert.ok(gaps.average > 5, `learnt: ${gaps.average}`);
    puts.length = 0;
    await backs.wrote('PersistentVolumeClaim', claim(71), { more: true });
    assert.deepEqual(puts, ['PersistentVolumeClaim data@71'], 'written back at once, not after deferMs');
    await backs.wrote('PersistentVolumeClaim', claim(72), { more: false });
    assert.deepEqual(puts, ['PersistentVolumeClaim data@71', 'PersistentVolumeClaim data@72 earlier 71']);
    for (let i = 0; i < 30; i++) gaps.observe(1);
    puts.length = 0;
    await backs.wrote('PersistentVolumeClaim', claim(73), { more: true });
    await backs.wrote('PersistentVolumeClaim', claim(74), { more: false });
    await backs.settle();
    assert.deepEqual(puts, ['PersistentVolumeClaim data@74 earlier 73'], 'waiting again');
  });

  test('one slow second write (a throttled call) does not stop the waiting: gaps count at most 4 × deferMs', async () => {
    const gaps = new WriteGaps();
    gaps.average = 1;
    let clock = 0;
    const puts: string[] = [];
    const backs = new WriteBacks(async (kind, object) => void puts.push(`${object.metadata?.resourceVersion}`), { deferMs: 5, gaps, now: () => clock });
    await backs.wrote('PersistentVolume', volume(81), { more: true });
    clock += 10_000;
    await backs.wrote('PersistentVolume', volume(82), { more: false });
    assert.ok(gaps.average <= 5, `clamped: ${gaps.average}`);
    await backs.wrote('PersistentVolume', volume(83, 'pv-2'), { more: true });
    assert.deepEqual(puts, ['82'], 'pv-2 waits for its next write');
    await backs.settle();
  });

  test('the wait grows with the table\'s round trip, as the forwarder\'s hold does, and stays one round trip inside its limit', () => {
    const table: Array<[rttMs: number, waitMs: number]> = [
      [0, DEFAULT_WRITE_BACK_DEFER_MS], // an idle table: the fixed wait
      [20, 100], // + twice the round trip
      [80, 220],
      [100, FORWARDER_HOLD_LIMIT_MS - 100], // the later write-back (one round trip) must land inside the hold
      [200, 100],
      [250, DEFAULT_WRITE_BACK_DEFER_MS], // never below the fixed wait
    ];
    for (const [rtt, wait] of table) assert.equal(writeBackDeferMs(rtt), wait, `round trip ${rtt} ms`);
  });

  test('the hold limit the wait keeps inside is the forwarder\'s own: its default hold times its stretch limit', () => {
    assert.equal(FORWARDER_HOLD_LIMIT_MS, HOLD_STRETCH_LIMIT * DEFAULT_OWN_WRITE_HOLD_MS);
  });

  test('one very slow write-back (a first connection, a throttled retry) moves the round trip by at most a fifth of the sample limit', () => {
    const gaps = new WriteGaps();
    gaps.observeRtt(10_000);
    assert.equal(gaps.rtt, 0.2 * WRITE_BACK_RTT_SAMPLE_LIMIT_MS);
    assert.ok(writeBackDeferMs(gaps.rtt) < 0.5 * FORWARDER_HOLD_LIMIT_MS, `waits ${writeBackDeferMs(gaps.rtt)} ms`);
  });

  test('a first version whose later write does not come is written back alone after the wait the round trip sets, not the fixed one', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const gaps = new WriteGaps();
    gaps.rtt = 50; // a busy table: the wait is 60 + 2 × 50 = 160 ms
    const puts: string[] = [];
    const backs = new WriteBacks(async (kind, object) => void puts.push(`${kind} ${object.metadata?.resourceVersion}`), { gaps });
    assert.equal(backs.deferMs, 160);
    await backs.wrote('PersistentVolume', volume(91), { more: true });
    t.mock.timers.tick(100);
    await Promise.resolve();
    assert.deepEqual(puts, [], 'still waiting at 100 ms (a fixed 60 ms wait would have written it)');
    t.mock.timers.tick(60);
    await Promise.resolve();
    assert.deepEqual(puts, ['PersistentVolume 91'], 'written back alone at 160 ms');
    await backs.settle();
    assert.equal(puts.length, 1);
  });

  test('second writes 120 ms apart: written back at once while the table answers quickly, one write-back while it is busy', async () => {
    let clock = 0;
    const run = async (putMs: number) => {
      const gaps = new WriteGaps();
      const puts: string[] = [];
      const backs = new WriteBacks(
        async (kind, object, earlier) => {
          clock += putMs; // the table's round trip, as the container measures it
          puts.push(`${object.metadata?.resourceVersion}${earlier.length ? ` earlier ${earlier.join(',')}` : ''}`);
        },
        { gaps, now: () => clock },
      );
      // Ten binds' volumes, each written twice 120 ms apart (a busy API server).
      for (let i = 0; i < 10; i++) {
        await backs.wrote('PersistentVolume', volume(100 + 2 * i, `pv-${i}`), { more: true });
        clock += 120;
        await backs.wrote('PersistentVolume', volume(101 + 2 * i, `pv-${i}`), { more: false });
      }
      await backs.settle();
      return { puts, gaps, deferMs: backs.deferMs };
    };
    const quick = await run(1);
    assert.ok(quick.deferMs < 120, `an idle table: waits ${quick.deferMs} ms`);
    assert.ok(quick.puts.length > 10, `a second write later than the wait: first versions written back at once (${quick.puts.length} write-backs for 20 writes)`);
    const busy = await run(50);
    assert.ok(busy.deferMs > 120, `a busy table: waits ${busy.deferMs} ms`);
    assert.equal(busy.puts.length, 10, `one write-back per volume: ${busy.puts.join(' | ')}`);
    assert.ok(busy.puts.every((put) => / earlier /.test(put)), 'each naming its first version');
  });

  test('a later write that failed (or never came): settle writes back the version that waited for it', async () => {
    const { backs, puts } = recording();
    await backs.wrote('PersistentVolumeClaim', claim(41), { more: true });
    await backs.settle();
    assert.deepEqual(puts, ['PersistentVolumeClaim data@41']);
    await backs.settle();
    assert.equal(puts.length, 1, 'once');
  });

  test('an object\'s last version is written back beside the sync\'s next write, not before it: settle waits for it', async () => {
    // A bind writes its volume, then its claim: the claim's writes go out while the volume's put is under way.
    let land!: () => void;
    const landed = new Promise<void>((resolve) => (land = resolve));
    const order: string[] = [];
    const backs = new WriteBacks(async (kind, object) => {
      order.push(`put ${kind} ${object.metadata?.resourceVersion}`);
      if (kind === 'PersistentVolume') await landed;
      order.push(`landed ${kind} ${object.metadata?.resourceVersion}`);
    }, { deferMs: 60_000, gaps: new WriteGaps() });
    backs.wrote('PersistentVolume', volume(61), { more: true });
    backs.wrote('PersistentVolume', volume(62), { more: false });
    order.push('claim written');
    backs.wrote('PersistentVolumeClaim', claim(63), { more: false });
    let settled = false;
    const settling = backs.settle().then(() => void (settled = true));
    await sleep(10);
    assert.equal(settled, false, 'settle waits for the volume\'s put');
    land();
    await settling;
    assert.deepEqual(order, ['put PersistentVolume 62', 'claim written', 'put PersistentVolumeClaim 63', 'landed PersistentVolumeClaim 63', 'landed PersistentVolume 62']);
  });

  test('a report of a failed write-back that itself throws fails nothing (no rejection left unhandled)', async () => {
    const backs = new WriteBacks(async () => { throw new Error('throttled'); }, { deferMs: 60_000, gaps: new WriteGaps(), onError: () => { throw new Error('logger gone'); } });
    backs.wrote('PersistentVolume', volume(71), { more: false });
    await backs.settle();
    await sleep(5); // an unhandled rejection would surface here and fail the file
    assert.equal(backs.sent, 1);
  });

  test('a failed write-back is reported, never thrown: the sync goes on', async () => {
    const { backs, puts, errors } = recording({ failOn: 'PersistentVolume pv-1' });
    await backs.wrote('PersistentVolume', volume(51), { more: false });
    await backs.wrote('PersistentVolumeClaim', claim(52), { more: true });
    await backs.settle();
    assert.deepEqual(puts, ['PersistentVolumeClaim data@52']);
    assert.deepEqual(errors, ['PersistentVolume pv-1: Error: throttled']);
  });
});
