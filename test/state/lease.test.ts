import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { LeaseHeldError, LeaseLostError, LeaseStore } from '../../lib/state/lease.ts';
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
});
