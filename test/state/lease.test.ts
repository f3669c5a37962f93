import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { LEASE_RETENTION_MS, LeaseHeldError, LeaseLostError, LeaseStore } from '../../lib/state/lease.ts';
import { leasePk } from '../../lib/state/schema.ts';
import { startDynalite, type Dynalite } from '../support/dynalite.ts';

describe('LeaseStore against dynalite', () => {
  let db: Dynalite;
  let clock = 5_000_000;
  let leases: LeaseStore;
  before(async () => {
    db = await startDynalite();
    leases = new LeaseStore({ doc: db.doc, table: db.tables.control, now: () => clock });
  });
  after(() => db.stop());

  test('one holder at a time; expiry frees it; fencing token grows', async () => {
    const a = await leases.acquire('provision/uid-1', 'a', 10_000);
    assert.equal(a.token, 1);
    await assert.rejects(leases.acquire('provision/uid-1', 'b', 10_000), (error: unknown) => {
      assert.ok(error instanceof LeaseHeldError);
      assert.equal(error.holder, 'a');
      return true;
    });
    assert.equal(await leases.tryAcquire('provision/uid-1', 'b', 10_000), undefined);
    clock += 10_000; // expired: the condition sees it although nothing deleted the record
    const b = await leases.acquire('provision/uid-1', 'b', 10_000);
    assert.equal(b.token, 2);
    await assert.rejects(leases.renew(a, 10_000), LeaseLostError);
    assert.equal(await leases.release(a), false, 'a stale holder cannot release');
    assert.equal(await leases.isHeld(b), true);
    assert.equal(await leases.isHeld(a), false);
  });

  test('renew extends; release frees for the next holder and keeps the token sequence', async () => {
    const a = await leases.acquire('op', 'a', 1_000);
    clock += 900;
    const renewed = await leases.renew(a, 1_000);
    assert.equal(renewed.expiresAt, clock + 1_000);
    clock += 900;
    await assert.rejects(leases.acquire('op', 'b', 1_000), LeaseHeldError);
    assert.equal(await leases.release(renewed), true);
    const b = await leases.acquire('op', 'b', 1_000);
    assert.equal(b.token, a.token + 1);
    await assert.rejects(leases.renew(renewed, 1_000), LeaseLostError);
  });

  test('re-acquiring our own lease renews it with a new token', async () => {
    const first = await leases.acquire('mine', 'a', 1_000);
    const again = await leases.acquire('mine', 'a', 5_000);
    assert.equal(again.token, first.token + 1);
    assert.equal(again.expiresAt, clock + 5_000);
  });

  test('concurrent acquirers: exactly one wins', async () => {
    const results = await Promise.allSettled(['p', 'q', 'r', 's'].map((holder) => leases.acquire('race', holder, 10_000)));
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
    assert.ok(results.filter((r) => r.status === 'rejected').every((r) => (r as PromiseRejectedResult).reason instanceof LeaseHeldError));
  });

  test('stored record: the lease expiry in leaseUntil (ms); the TTL attribute expiresAt in epoch seconds, a retention later', async () => {
    const raw = async (name: string) =>
      (await db.doc.send(new GetCommand({ TableName: db.tables.control, Key: { pk: leasePk(name) }, ConsistentRead: true }))).Item;
    const lease = await leases.acquire('ttl/uid-1', 'a', 30_000);
    let item = await raw('ttl/uid-1');
    assert.equal(item?.leaseUntil, clock + 30_000);
    assert.equal(item?.expiresAt, Math.ceil((clock + 30_000 + LEASE_RETENTION_MS) / 1000), 'epoch seconds, as DynamoDB TTL reads it');
    assert.equal(lease.expiresAt, clock + 30_000);
    const renewed = await leases.renew(lease, 60_000);
    item = await raw('ttl/uid-1');
    assert.equal(item?.leaseUntil, renewed.expiresAt);
    assert.equal(item?.expiresAt, Math.ceil((clock + 60_000 + LEASE_RETENTION_MS) / 1000));
    assert.equal(await leases.release(renewed), true);
    item = await raw('ttl/uid-1');
    assert.equal(item?.leaseUntil, 0);
    assert.equal(item?.expiresAt, Math.ceil((clock + LEASE_RETENTION_MS) / 1000), 'a released record is kept (token) and then expires');
    assert.equal((await leases.acquire('ttl/uid-1', 'b', 1000)).token, 2);
  });

  test('a record written before leaseUntil existed (expiresAt in ms) still expires by its expiresAt', async () => {
    const { PutCommand } = await import('@aws-sdk/lib-dynamodb');
    await db.doc.send(new PutCommand({ TableName: db.tables.control, Item: { pk: leasePk('old/uid'), holder: 'x', expiresAt: clock + 5000, token: 3 } }));
    assert.equal(await leases.tryAcquire('old/uid', 'y', 1000), undefined, 'still held');
    clock += 5000;
    assert.equal((await leases.acquire('old/uid', 'y', 1000)).token, 4);
  });
});
