import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startStorageApi, type StorageApiHandle } from '../../infra/local/storage-api/server.ts';

describe('the local control plane on the wire (raw HTTP, no client)', () => {
  let api: StorageApiHandle;
  let token: string;
  before(async () => {
    api = await startStorageApi({ port: 0, nodes: ['w1'] });
  });
  after(() => api.stop());

  const call = (method: string, path: string, body?: unknown, auth = true) =>
    fetch(`${api.url}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...(auth ? { authorization: `Bearer ${token}` } : {}) },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });

  test('login: token in the Authorization header, expiry header, UserSession body', async () => {
    const res = await call('POST', '/v2/auth/login', { username: 'storageos', password: 'storageos' }, false);
    assert.equal(res.status, 200);
    const header = res.headers.get('authorization');
    assert.match(header ?? '', /^Bearer \S+$/);
    token = (header ?? '').slice('Bearer '.length);
    assert.equal(res.headers.get('authorization-expires-seconds'), '300');
    const body = (await res.json()) as { username: string; session: { token: string; expiresInSeconds: number } };
    assert.equal(body.username, 'storageos');
    assert.equal(body.session.token, token);
    assert.equal(body.session.expiresInSeconds, 300);
  });

  test('errors are {"error": text} with the documented statuses', async () => {
    const cases: Array<[string, string, unknown, number, RegExp]> = [
      ['POST', '/v2/auth/login', { username: 'storageos', password: 'nope' }, 401, /invalid credentials/],
      ['POST', '/v2/auth/login', { username: 'storageos' }, 400, /password/],
      ['GET', '/v2/nodes/unknown', undefined, 404, /node not found/],
      ['PUT', '/v2/nodes/unknown', { labels: {}, version: 'MQ' }, 404, /node not found/],
      ['GET', '/v2/namespaces/unknown/volumes', undefined, 404, /namespace not found/],
      ['POST', '/v2/namespaces', '{not json', 400, /not valid JSON/],
      ['PATCH', '/v2/nodes', undefined, 405, /method not allowed/],
      ['GET', '/v2/nothing-here', undefined, 404, /not found/],
    ];
    for (const [method, path, body, status, text] of cases) {
      const res = await call(method, path, body, !path.startsWith('/v2/auth/'));
      assert.equal(res.status, status, `${method} ${path}`);
      const parsed = (await res.json()) as { error: string };
      assert.match(parsed.error, text, `${method} ${path}`);
    }
  });

  test('writes need a version: missing → 400, stale → 412, ignore-version=true forces', async () => {
    const [node] = (await (await call('GET', '/v2/nodes')).json()) as Array<{ id: string; version: string }>;
    assert.equal((await call('PUT', `/v2/nodes/${node.id}`, { labels: { a: 'b' } })).status, 400);
    assert.equal((await call('PUT', `/v2/nodes/${node.id}`, { labels: { a: 'b' }, version: 'stale' })).status, 412);
    const ok = await call('PUT', `/v2/nodes/${node.id}`, { labels: { a: 'b' }, version: node.version });
    assert.equal(ok.status, 200);
    const updated = (await ok.json()) as { labels: Record<string, string>; version: string };
    assert.deepEqual(updated.labels, { a: 'b' });
    assert.notEqual(updated.version, node.version);
    const forced = await call('PUT', `/v2/nodes/${node.id}/compute-only?ignore-version=true`, { computeOnly: true });
    assert.equal(forced.status, 200);
    assert.equal(((await forced.json()) as { labels: Record<string, string> }).labels['storageos.com/computeonly'], 'true');
  });

  test('create volume: body namespaceID must match the path; PUT mount-endpoint answers with an empty body', async () => {
    const [ns] = (await (await call('GET', '/v2/namespaces')).json()) as Array<{ id: string; name: string }>;
    assert.equal(ns.name, 'default');
    const mismatch = await call('POST', `/v2/namespaces/${ns.id}/volumes`, { namespaceID: 'other', name: 'v', sizeBytes: 1, fsType: 'ext4' });
    assert.equal(mismatch.status, 400);
    const created = await call('POST', `/v2/namespaces/${ns.id}/volumes`, { namespaceID: ns.id, name: 'v', sizeBytes: 1024, fsType: 'xfs' });
    assert.equal(created.status, 200);
    const volume = (await created.json()) as { id: string; version: string; fsType: string; attachmentType: string; nfs: { serviceEndpoint: string | null } };
    assert.equal(volume.fsType, 'xfs');
    assert.equal(volume.attachmentType, 'detached');
    assert.equal(volume.nfs.serviceEndpoint, null);
    const put = await call('PUT', `/v2/namespaces/${ns.id}/volumes/${volume.id}/nfs/mount-endpoint`, { mountEndpoint: '10.0.0.1:2049', version: volume.version });
    assert.equal(put.status, 200);
    assert.equal(await put.text(), '');
    const del = await call('DELETE', `/v2/namespaces/${ns.id}/volumes/${volume.id}`);
    assert.equal(del.status, 400, 'delete needs ?version=');
  });

  test('ops endpoints are unauthenticated and not counted', async () => {
    api.requests.reset();
    const node = await fetch(`${api.url}/_storage/nodes`, { method: 'POST', body: JSON.stringify({ name: 'w2', labels: { zone: 'a' } }) });
    assert.equal(node.status, 200);
    assert.equal(((await node.json()) as { name: string }).name, 'w2');
    const state = (await (await fetch(`${api.url}/_storage/state`)).json()) as { nodes: Array<{ name: string }> };
    assert.deepEqual(state.nodes.map((n) => n.name).sort(), ['w1', 'w2']);
    assert.equal(api.requests.total(), 0);
  });
});
