import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { UnauthorizedError } from '../../lib/storage/errors.ts';
import { startStorage, type StorageFixture } from './support.ts';

describe('auth: login, 401 → re-login once, refresh, reset', () => {
  let s: StorageFixture;
  before(async () => {
    s = await startStorage();
  });
  after(() => s.stop());

  test('the first call logs in; the token travels as a Bearer header', async () => {
    const client = s.newClient();
    const logins = s.api.auth.logins;
    await client.listNodes();
    await client.listNodes();
    assert.equal(client.transport.logins, 1);
    assert.equal(s.api.auth.logins - logins, 1);
    const raw = await fetch(`${s.api.url}/v2/nodes`);
    assert.equal(raw.status, 401, 'the API itself refuses calls without a token');
  });

  test('an expired token gets 401 and the client logs in again transparently', async () => {
    const short = await startStorage({ tokenTtlMs: 1_000 });
    try {
      const client = short.client;
      await client.listNamespaces();
      await delay(1_200); // outlive the token
      const calls = short.api.requests.get('GET', '/v2/namespaces');
      const namespaces = await client.listNamespaces();
      assert.ok(namespaces.some((ns) => ns.name === 'default'));
      assert.equal(client.transport.logins, 2);
      assert.equal(short.api.requests.get('GET', '/v2/namespaces') - calls, 2, '401, then the repeat after login');
    } finally {
      await short.stop();
    }
  });

  test('every token expired at once (ops endpoint) → re-login', async () => {
    const client = s.newClient();
    await client.listNodes();
    const res = await fetch(`${s.api.url}/_storage/tokens/expire`, { method: 'POST' });
    assert.equal(res.status, 200);
    await client.listNodes();
    assert.equal(client.transport.logins, 2);
  });

  test('an injected 401 → re-login and the call succeeds', async () => {
    const client = s.newClient();
    await client.listNodes();
    s.api.faults.add({ method: 'GET', path: '/v2/nodes', status: 401, message: 'token expired' });
    assert.deepEqual(await client.listNodes(), []);
    assert.equal(client.transport.logins, 2);
  });

  test('re-login happens once per call: a second 401 surfaces as UnauthorizedError', async () => {
    const client = s.newClient();
    await client.listNodes();
    s.api.faults.add({ method: 'GET', path: '/v2/nodes', status: 401, times: 2 });
    await assert.rejects(client.listNodes(), (err: unknown) => err instanceof UnauthorizedError && err.status === 401);
    assert.equal(client.transport.logins, 2);
    assert.deepEqual(await client.listNodes(), [], 'the next call works with the new token');
  });

  test('bad credentials fail with UnauthorizedError, not retried', async () => {
    const client = s.newClient({ password: 'wrong' });
    const attempts = s.api.requests.get('POST', '/v2/auth/login');
    await assert.rejects(client.listNodes(), (err: unknown) => err instanceof UnauthorizedError && /invalid credentials/.test(err.message));
    assert.equal(s.api.requests.get('POST', '/v2/auth/login') - attempts, 1);
  });

  test('concurrent calls share one login', async () => {
    const client = s.newClient();
    await Promise.all(Array.from({ length: 8 }, () => client.listNamespaces()));
    assert.equal(client.transport.logins, 1);
  });

  test('refresh swaps the token; a failed refresh logs in; reset forces a login (apiReset)', async () => {
    const client = s.newClient();
    await client.listNodes();
    const refreshes = s.api.requests.get('POST', '/v2/auth/refresh');
    await client.refresh();
    assert.equal(s.api.requests.get('POST', '/v2/auth/refresh') - refreshes, 1);
    assert.equal(client.transport.logins, 1, 'a good refresh needs no login');
    await client.listNodes();

    s.api.faults.add({ method: 'POST', path: '/v2/auth/refresh', status: 500 });
    await client.refresh();
    assert.equal(client.transport.logins, 2, 'the failed refresh fell back to a login');

    client.reset();
    assert.equal(client.transport.authenticated, false);
    await client.listNodes();
    assert.equal(client.transport.logins, 3);
  });
});
