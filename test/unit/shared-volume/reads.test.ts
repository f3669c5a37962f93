/**
 * The read and lease helpers of the shared volume controller, with fakes: ObjectReads (object cache first, a GET on
 * a miss, write-back of labelled objects only), VolumeLease (taken lazily, once, before the first write) and the
 * deadline helpers (the abort signal reaches the HTTP request; what counts as running out of time).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RequestContext, type CoreV1Api, type ObservableMiddleware } from '@kubernetes/client-node';
import { BudgetTimeoutError } from '../../../lib/state/bucket.ts';
import type { CachedObject, ObjectCache } from '../../../lib/state/cache.ts';
import type { Lease, LeaseStore } from '../../../lib/state/lease.ts';
import { isOutOfTime, kubeCallOptions, signalUntil } from '../../../lib/shared-volume/deadline.ts';
import { VolumeBusyError } from '../../../lib/shared-volume/errors.ts';
import { ObjectReads } from '../../../lib/shared-volume/reads.ts';
import { VolumeLease } from '../../../lib/shared-volume/volume-lease.ts';

const notFound = Object.assign(new Error('not found'), { code: 404 });
const service = (rv: string, labelled = true) => ({
  metadata: { name: 'pvc-1', namespace: 'ns', resourceVersion: rv, ...(labelled ? { labels: { 'storageos.com/volume-id': 'v1' } } : {}) },
});

/** A fake object cache holding `entries` (`Kind/ns/name` → entry); `put`s are recorded. */
function fakeCache(entries: Record<string, CachedObject>, options: { failGet?: boolean } = {}) {
  const puts: Array<{ kind: string; rv?: string }> = [];
  const cache = {
    async get(_cluster: string, kind: string, key: string) {
      if (options.failGet) throw Object.assign(new Error('AccessDeniedException'), { name: 'AccessDeniedException' });
      return entries[`${kind}/${key}`];
    },
    async put(_cluster: string, kind: string, object: { metadata?: { resourceVersion?: string } }) {
      puts.push({ kind, rv: object.metadata?.resourceVersion });
      return 'written' as const;
    },
  };
  return { cache: cache as unknown as ObjectCache, puts };
}

/** A fake CoreV1Api whose reads count and answer from `objects` (absent → 404). */
function fakeCore(objects: Record<string, unknown>) {
  const gets: string[] = [];
  const read = (kind: string) => async ({ name, namespace }: { name: string; namespace: string }) => {
    gets.push(`${kind}/${namespace}/${name}`);
    const found = objects[`${kind}/${namespace}/${name}`];
    if (found === undefined) throw notFound;
    return found;
  };
  const core = {
    readNamespacedPersistentVolumeClaim: read('PersistentVolumeClaim'),
    readNamespacedService: read('Service'),
    readNamespacedEndpoints: read('Endpoints'),
  };
  return { core: core as unknown as CoreV1Api, gets };
}

const entry = (object: object, deleted = false): CachedObject => ({ object, rv: 1, uid: 'u', deleted });

describe('ObjectReads', () => {
  it('a live cache entry is served without a GET; a miss and a tombstone are GETs; NotFound is undefined', async () => {
    const { cache } = fakeCache({
      'Service/ns/pvc-1': entry(service('5')),
      'Endpoints/ns/pvc-1': entry(service('6'), true),
    });
    const { core, gets } = fakeCore({ 'Endpoints/ns/pvc-1': service('7'), 'PersistentVolumeClaim/ns/claim': { metadata: { name: 'claim' } } });
    const reads = new ObjectReads({ core, objects: cache, cluster: 'c' });
    assert.equal((await reads.service('ns', 'pvc-1'))?.metadata?.resourceVersion, '5');
    assert.equal((await reads.endpoints('ns', 'pvc-1'))?.metadata?.resourceVersion, '7', 'tombstone → GET');
    assert.equal((await reads.claim('ns', 'claim'))?.metadata?.name, 'claim', 'miss → GET');
    assert.equal(await reads.claim('ns', 'gone'), undefined);
    assert.deepEqual(gets, ['Endpoints/ns/pvc-1', 'PersistentVolumeClaim/ns/claim', 'PersistentVolumeClaim/ns/gone']);
    assert.deepEqual(reads.stats, { cacheHits: 1, apiGets: 3, cacheAbsent: 0 });
  });

  it('trustAbsence: an entry the cache answered is absent, or a tombstone, is absent without a GET; an unreadable cache is still a GET', async () => {
    const { cache } = fakeCache({ 'Endpoints/ns/pvc-1': entry(service('6'), true) });
    const { core, gets } = fakeCore({ 'Service/ns/pvc-1': service('7'), 'Endpoints/ns/pvc-1': service('8') });
    const reads = new ObjectReads({ core, objects: cache, cluster: 'c' });
    assert.equal(await reads.service('ns', 'pvc-1', { trustAbsence: true }), undefined, 'absent entry: no GET, even though the API has it');
    assert.equal(await reads.endpoints('ns', 'pvc-1', { trustAbsence: true }), undefined, 'tombstone: no GET');
    assert.deepEqual(gets, []);
    assert.deepEqual(reads.stats, { cacheHits: 0, apiGets: 0, cacheAbsent: 2 });
    const failing = new ObjectReads({ core, objects: fakeCache({}, { failGet: true }).cache, cluster: 'c' });
    assert.equal((await failing.service('ns', 'pvc-1', { trustAbsence: true }))?.metadata?.resourceVersion, '7', 'unreadable → GET');
    assert.deepEqual(gets, ['Service/ns/pvc-1']);
  });

  it('prefetch: one batch read of the claim, Service and Endpoints; each answer is taken once, unread ones are read on their own', async () => {
    const batches: Array<Array<{ kind: string; key: string }>> = [];
    let singleGets = 0;
    const claimEntry = entry({ metadata: { name: 'claim', namespace: 'ns' } });
    const cache = {
      async getMany(_cluster: string, refs: Array<{ kind: string; key: string }>) {
        batches.push(refs);
        const id = (kind: string, key: string) => `${kind}\u0000${key}`;
        // the claim is there, the Service is absent, the Endpoints were left unprocessed
        return { entries: new Map([[id('PersistentVolumeClaim', 'ns/claim'), claimEntry]]), unread: new Set([id('Endpoints', 'ns/pvc-1')]) };
      },
      async get(_cluster: string, kind: string) {
        singleGets++;
        return kind === 'PersistentVolumeClaim' ? claimEntry : kind === 'Endpoints' ? entry(service('8')) : undefined;
      },
    } as unknown as ObjectCache;
    const { core, gets } = fakeCore({ 'Service/ns/pvc-1': service('7') });
    const reads = new ObjectReads({ core, objects: cache, cluster: 'c' });
    await reads.prefetch('ns', 'claim', 'pvc-1');
    assert.deepEqual(batches, [[
      { kind: 'PersistentVolumeClaim', key: 'ns/claim' },
      { kind: 'Service', key: 'ns/pvc-1' },
      { kind: 'Endpoints', key: 'ns/pvc-1' },
    ]]);
    assert.equal((await reads.claim('ns', 'claim'))?.metadata?.name, 'claim');
    assert.equal(await reads.service('ns', 'pvc-1', { trustAbsence: true }), undefined, 'absent in the batch: taken as absent');
    assert.equal(singleGets, 0, 'claim and Service answered by the batch');
    assert.equal((await reads.endpoints('ns', 'pvc-1', { trustAbsence: true }))?.metadata?.resourceVersion, '8', 'unprocessed: read on its own');
    assert.equal(singleGets, 1);
    assert.equal((await reads.claim('ns', 'claim'))?.metadata?.name, 'claim');
    assert.equal(singleGets, 2, 'a prefetched answer is taken once; the next read goes to the cache again');
    assert.equal((await reads.service('ns', 'pvc-1'))?.metadata?.resourceVersion, '7', 'without trustAbsence a miss is still a GET');
    assert.deepEqual(gets, ['Service/ns/pvc-1']);
  });

  it('prefetch: after a write, an object the batch found is read again; an absence it found is kept', async () => {
    let singleGets = 0;
    const id = (kind: string, key: string) => `${kind}\u0000${key}`;
    const cache = {
      async getMany() {
        return { entries: new Map([[id('Endpoints', 'ns/pvc-1'), entry(service('6'))]]), unread: new Set<string>() };
      },
      async get() {
        singleGets++;
        return undefined; // deleted meanwhile
      },
      async put() {
        return 'written' as const;
      },
    } as unknown as ObjectCache;
    const reads = new ObjectReads({ core: fakeCore({}).core, objects: cache, cluster: 'c' });
    await reads.prefetch('ns', 'claim', 'pvc-1');
    await reads.remember('Service', service('10')); // e.g. the Service recreated
    assert.equal(await reads.service('ns', 'pvc-1', { trustAbsence: true }), undefined, 'the absence the batch found: kept');
    assert.equal(singleGets, 0);
    assert.equal(await reads.endpoints('ns', 'pvc-1', { trustAbsence: true }), undefined, 'the Endpoints the batch found: read again, now gone');
    assert.equal(singleGets, 1);
  });

  it('prefetch: a failed batch read leaves every entry to its own read', async () => {
    let singleGets = 0;
    const cache = {
      async getMany() {
        throw Object.assign(new Error('throttled'), { name: 'ProvisionedThroughputExceededException' });
      },
      async get() {
        singleGets++;
        return entry(service('5'));
      },
    } as unknown as ObjectCache;
    // (no onCacheError: the report is once per container, module-wide, and the test below asserts it)
    const reads = new ObjectReads({ core: fakeCore({}).core, objects: cache, cluster: 'c' });
    await reads.prefetch('ns', 'claim', 'pvc-1');
    assert.equal((await reads.service('ns', 'pvc-1'))?.metadata?.resourceVersion, '5');
    assert.equal(singleGets, 1);
  });

  it('fresh reads skip the cache (after a 409)', async () => {
    const { cache } = fakeCache({ 'Service/ns/pvc-1': entry(service('5')) });
    const { core, gets } = fakeCore({ 'Service/ns/pvc-1': service('9') });
    const reads = new ObjectReads({ core, objects: cache, cluster: 'c' });
    assert.equal((await reads.service('ns', 'pvc-1', { fresh: true }))?.metadata?.resourceVersion, '9');
    assert.equal(gets.length, 1);
  });

  it('an unreadable cache falls back to GETs and is reported once per container', async () => {
    const { cache } = fakeCache({}, { failGet: true });
    const { core, gets } = fakeCore({ 'Service/ns/pvc-1': service('9') });
    const reported: string[] = [];
    const onCacheError = (error: unknown, operation: string) => reported.push(`${operation}: ${(error as Error).name}`);
    for (let i = 0; i < 3; i++) {
      const reads = new ObjectReads({ core, objects: cache, cluster: 'c', onCacheError });
      assert.equal((await reads.service('ns', 'pvc-1'))?.metadata?.resourceVersion, '9');
    }
    assert.equal(gets.length, 3);
    assert.deepEqual(reported, ['read: AccessDeniedException'], 'reported once');
  });

  it('writes back only labelled objects (the ones the forwarder keeps current)', async () => {
    const { cache, puts } = fakeCache({});
    const reads = new ObjectReads({ core: fakeCore({}).core, objects: cache, cluster: 'c' });
    await reads.remember('Service', service('10'));
    await reads.remember('Endpoints', service('11', false));
    assert.deepEqual(puts, [{ kind: 'Service', rv: '10' }]);
  });

  it('without an object cache every read is a GET', async () => {
    const { core, gets } = fakeCore({ 'Service/ns/pvc-1': service('9') });
    const reads = new ObjectReads({ core, cluster: 'c' });
    await reads.service('ns', 'pvc-1');
    await reads.remember('Service', service('10'));
    assert.equal(gets.length, 1);
  });
});

describe('VolumeLease', () => {
  /** A fake lease store: `held` = someone else holds the lease. */
  const store = (held: boolean) => {
    const calls: string[] = [];
    const leases = {
      async tryAcquire(name: string, holder: string, durationMs: number): Promise<Lease | undefined> {
        calls.push(`acquire ${name} ${durationMs > 0}`);
        return held ? undefined : { name, holder, expiresAt: Date.now() + durationMs, token: 1 };
      },
      async release(lease: Lease) {
        calls.push(`release ${lease.name}`);
        return true;
      },
    };
    return { leases: leases as unknown as LeaseStore, calls };
  };

  it('taken once, at the first write; released at the end; nothing when no write happened', async () => {
    const { leases, calls } = store(false);
    const idle = new VolumeLease({ leases, cluster: 'c', volumeId: 'v1', until: Date.now() + 5000 });
    await idle.release();
    assert.deepEqual(calls, [], 'a step without writes touches no lease');
    const lease = new VolumeLease({ leases, cluster: 'c', volumeId: 'v1', until: Date.now() + 5000 });
    await lease.beforeWrite();
    await lease.beforeWrite();
    assert.equal(lease.held, true);
    await lease.release();
    assert.deepEqual(calls, ['acquire sv-volume#c#v1 true', 'release sv-volume#c#v1']);
  });

  it('held by another invocation: VolumeBusyError', async () => {
    const { leases } = store(true);
    const lease = new VolumeLease({ leases, cluster: 'c', volumeId: 'v1', until: Date.now() + 5000 });
    await assert.rejects(lease.beforeWrite(), VolumeBusyError);
    assert.equal(lease.held, false);
  });

  it('without a lease store there is no exclusion', async () => {
    const lease = new VolumeLease({ leases: undefined, cluster: 'c', volumeId: 'v1', until: Date.now() + 5000 });
    await lease.beforeWrite();
    await lease.release();
  });
});

describe('deadline helpers', () => {
  it('kubeCallOptions attaches the signal to the request, after the client’s own middleware', async () => {
    const signal = new AbortController().signal;
    const options = kubeCallOptions(signal) as unknown as { middleware: ObservableMiddleware[]; middlewareMergeStrategy: string };
    assert.equal(options.middlewareMergeStrategy, 'append');
    const context = new RequestContext('http://localhost/api/v1/services', 'GET' as never);
    await options.middleware[0]!.pre(context).toPromise();
    assert.equal(context.getSignal(), signal);
    assert.equal(kubeCallOptions(undefined), undefined);
  });

  it('signalUntil aborts at the deadline; Infinity keeps the parent', async () => {
    const signal = signalUntil(Date.now() + 30)!;
    assert.equal(signal.aborted, false);
    await new Promise((resolve) => setTimeout(resolve, 60));
    assert.equal(signal.aborted, true);
    const parent = new AbortController().signal;
    assert.equal(signalUntil(Infinity, parent), parent);
  });

  it('out of time: the step’s signal fired, or the API budget would wait past the deadline; a request timeout is a failure', () => {
    const fired = AbortSignal.abort();
    assert.equal(isOutOfTime(new Error('aborted'), fired), true);
    assert.equal(isOutOfTime(new Error('wrapped', { cause: new BudgetTimeoutError('c', 2000) }), undefined), true);
    assert.equal(isOutOfTime(Object.assign(new Error('The operation was aborted due to timeout'), { name: 'TimeoutError' }), new AbortController().signal), false);
  });
});
