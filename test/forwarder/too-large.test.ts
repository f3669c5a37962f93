/**
 * An object too large to cache (lib/forwarder/reflector.ts `writeUnlessTooLarge`), against dynalite: the
 * reflector's write and the publisher's write of an unwritten event both answer `written` (the change is
 * published, uncached) and log it; any other failure is thrown, to be retried.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Logger } from '@aws-lambda-powertools/logger';
import { writeUnlessTooLarge } from '../../lib/forwarder/reflector.ts';
import { ObjectCache, type CachePutOutcome } from '../../lib/state/cache.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
import { startDynalite, type Dynalite } from '../support/dynalite.ts';

describe('writeUnlessTooLarge', () => {
  let db: Dynalite;
  let cache: ObjectCache;
  before(async () => {
    db = await startDynalite();
    cache = new ObjectCache(db.doc, db.tables.cache, { indexer: indexAttributes });
  });
  after(() => db?.stop());

  /** A logger whose error() calls are kept. */
  const logged = () => {
    const errors: Array<{ message: string; kind?: unknown; key?: unknown; bytes?: unknown }> = [];
    const logger = new Logger({ logLevel: 'SILENT' });
    logger.error = ((message: string, extra: Record<string, unknown>) => void errors.push({ message, ...extra })) as Logger['error'];
    return { logger, errors };
  };

  it('an object too large for an item is answered as written, not cached, and logged', async () => {
    const hopeless = { metadata: { name: 'obese', uid: 'uid-obese', resourceVersion: '7' }, spec: { data: 'y'.repeat(400_000) } };
    const { logger, errors } = logged();
    const reflected = await writeUnlessTooLarge(() => cache.put('c1', 'PersistentVolume', hopeless), 'written' as const, logger, 'PersistentVolume', 'obese');
    const published = await writeUnlessTooLarge<CachePutOutcome>(() => cache.putDetailed('c1', 'PersistentVolume', hopeless), { result: 'written' }, logger, 'PersistentVolume', 'obese');
    assert.equal(reflected, 'written');
    assert.deepEqual(published, { result: 'written' });
    assert.equal(await cache.get('c1', 'PersistentVolume', 'obese'), undefined, 'nothing cached');
    assert.equal(errors.length, 2);
    assert.equal(errors[0]!.message, 'object too large to cache; published without caching');
    assert.deepEqual([errors[0]!.kind, errors[0]!.key], ['PersistentVolume', 'obese']);
    assert.ok(Number(errors[0]!.bytes) > 400_000, 'its size logged');
  });

  it('an object that fits is written; any other failure is thrown', async () => {
    const { logger, errors } = logged();
    const fits = { metadata: { name: 'slim', uid: 'uid-slim', resourceVersion: '8' }, spec: {} };
    assert.deepEqual(await writeUnlessTooLarge<CachePutOutcome>(() => cache.putDetailed('c1', 'PersistentVolume', fits), { result: 'written' }, logger, 'PersistentVolume', 'slim'), { result: 'written' });
    assert.equal((await cache.get('c1', 'PersistentVolume', 'slim'))?.rv, 8);
    const throttled = Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), { name: 'ThrottlingException' });
    await assert.rejects(writeUnlessTooLarge(() => Promise.reject(throttled), 'written' as const, logger, 'PersistentVolume', 'slim'), /allowed throughput/);
    assert.equal(errors.length, 0);
  });
});
