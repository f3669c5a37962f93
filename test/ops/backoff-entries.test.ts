/**
 * `claimflow backoff` rows: a key's own record and a reminder beside it (a scoped record, lib/state/backoff.ts)
 * are told apart by the scope their pk carries.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { backoffEntries } from '../../lib/ops/backoff.ts';
import type { BackoffRecord } from '../../lib/state/backoff.ts';
import { backoffPk } from '../../lib/state/schema.ts';

test('a reminder lists with the UID it is for; the key\'s own record with none', () => {
  const now = 1_000_000;
  const base = { controller: 'provisioner', cluster: 'c1', kind: 'PersistentVolumeClaim', key: 'default/data', failures: 1, nextAttemptAt: now + 5_000, updatedAt: now, expiresAt: 0 };
  const own: BackoffRecord = { ...base, pk: backoffPk('provisioner', 'c1', 'PersistentVolumeClaim', 'default/data') };
  const reminder: BackoffRecord = { ...base, pk: `${own.pk}#uid-earlier`, uid: 'uid-earlier', dueShard: 'due#1', dueAt: now + 120_000 };
  // A key that is a prefix of another's is not a scope of it.
  const longer: BackoffRecord = { ...base, key: 'default/data#x', pk: backoffPk('provisioner', 'c1', 'PersistentVolumeClaim', 'default/data#x') };
  const entries = backoffEntries([reminder, own, longer], now);
  assert.deepEqual(entries.map((e) => [e.key, e.state, e.scope]), [
    ['default/data', 'parked', 'uid-earlier'],
    ['default/data', 'backing-off', null],
    ['default/data#x', 'backing-off', null],
  ]);
});
