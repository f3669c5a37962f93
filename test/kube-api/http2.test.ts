/**
 * The emulator over TLS speaks HTTP/2 and HTTP/1.1, the client's ALPN offer deciding, as kube-apiserver
 * does; `http1: true` serves HTTPS/1.1 alone. Watches stream over both. A slow watcher is cut off by
 * resetting its stream alone; `cutWatches()` drops whole connections, as an API server restart does.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2';
import { request as httpsRequest } from 'node:https';
import { Agent, fetch } from 'undici';
import { startKubeApi, type KubeApi } from '../../infra/local/kube-api/index.ts';
import { fixtureKinds } from '../../infra/local/kube-api/testing/fixture-kinds.ts';
import { HTTP2_MAX_STREAMS } from '../../infra/local/kube-api/server.ts';

const PATH = '/api/v1/namespaces/default/configmaps';

/** Opens an HTTP/2 session to the emulator; resolves once the server's SETTINGS have arrived. */
async function h2Session(api: KubeApi): Promise<ClientHttp2Session> {
  const session = connect(api.url, { ca: api.caCert });
  await new Promise<void>((resolve, reject) => {
    session.once('remoteSettings', () => resolve());
    session.once('error', reject);
  });
  return session;
}

/** One HTTP/2 request's status and body. */
async function h2Get(session: ClientHttp2Session, path: string): Promise<{ status: number; body: string }> {
  const stream = session.request({ ':path': path });
  let status = 0;
  stream.on('response', (headers) => { status = Number(headers[':status']); });
  let body = '';
  stream.setEncoding('utf8');
  for await (const chunk of stream) body += chunk;
  return { status, body };
}

/** How a client stream ended: `end` (cleanly), or its error's code or reset code. */
function streamEnd(stream: ClientHttp2Stream): Promise<string> {
  return new Promise((resolve) => {
    stream.once('end', () => resolve('end'));
    stream.once('error', (error: Error & { code?: string }) => resolve(error.code ?? error.message));
    stream.once('close', () => resolve(stream.rstCode === 0 ? 'closed' : `reset ${stream.rstCode}`));
  });
}

/** One HTTPS request offering HTTP/1.1 alone (no ALPN): its protocol version, status and body. */
async function h1Get(api: KubeApi, path: string): Promise<{ httpVersion: string; status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(`${api.url}${path}`, { ca: api.caCert, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => { body += chunk; });
      res.on('end', () => resolve({ httpVersion: res.httpVersion, status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the emulator over TLS: HTTP/2 and HTTP/1.1 by ALPN', () => {
  let api: KubeApi;
  before(async () => {
    api = await startKubeApi({ kinds: fixtureKinds(), tls: true, maxWatchBufferBytes: 64 * 1024 });
    api.store.create('/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'one', namespace: 'default' }, data: { v: '1' } });
  });
  after(async () => {
    await api.stop();
  });

  it('answers a client that offers h2 over HTTP/2, with the stream limit Go gives, and one that offers nothing over HTTP/1.1', { timeout: 15_000 }, async () => {
    const session = await h2Session(api);
    try {
      assert.equal(session.alpnProtocol, 'h2');
      assert.equal(session.remoteSettings.maxConcurrentStreams, HTTP2_MAX_STREAMS);
      const opened = api.connectionsAccepted();
      const answers = await Promise.all(Array.from({ length: 20 }, () => h2Get(session, `${PATH}/one`)));
      assert.ok(answers.every((a) => a.status === 200 && JSON.parse(a.body).data.v === '1'));
      assert.equal(api.connectionsAccepted(), opened, '20 requests at once on the one connection');
    } finally {
      session.close();
    }
    const h1 = await h1Get(api, `${PATH}/one`);
    assert.equal(h1.httpVersion, '1.1');
    assert.equal(h1.status, 200);
    assert.equal(JSON.parse(h1.body).data.v, '1');
  });

  it('streams a watch over HTTP/2 without the chunked header', { timeout: 15_000 }, async () => {
    const session = await h2Session(api);
    try {
      const watch = session.request({ ':path': `${PATH}?watch=true&resourceVersion=${api.store.revision}` });
      const headers = await new Promise<Record<string, unknown>>((resolve) => watch.once('response', resolve));
      assert.equal(headers[':status'], 200);
      assert.equal(headers['transfer-encoding'], undefined, 'HTTP/2 forbids it');
      watch.setEncoding('utf8');
      let text = '';
      watch.on('data', (chunk: string) => { text += chunk; });
      api.store.create('/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'two', namespace: 'default' } });
      for (let i = 0; i < 100 && !text.includes('"two"'); i++) await new Promise((r) => setTimeout(r, 10));
      assert.match(text, /"type":"ADDED".*"name":"two"/);
      watch.close();
    } finally {
      session.close();
    }
  });

  it('cutWatches drops the connection of each open watch, as an API server restart does: every stream on it fails (undici, as the forwarder)', { timeout: 15_000 }, async () => {
    const agent = new Agent({ connect: { ca: api.caCert } });
    try {
      const opened = api.connectionsAccepted();
      const watches = await Promise.all([PATH, '/api/v1/namespaces'].map((path) => fetch(`${api.url}${path}?watch=true&resourceVersion=${api.store.revision}`, { dispatcher: agent })));
      assert.equal(api.connectionsAccepted() - opened, 1, 'both watches on one connection');
      const ends = watches.map(async (res) => {
        try {
          await res.text();
          return 'end';
        } catch (error) {
          return String((error as { cause?: { code?: string } }).cause?.code);
        }
      });
      assert.equal(api.cutWatches(), 2);
      const how = await Promise.all(ends);
      assert.ok(how.every((code) => code === 'UND_ERR_SOCKET' || code === 'ERR_HTTP2_STREAM_ERROR'), `each fails, neither ends cleanly: ${how.join(', ')}`);
      const again = await fetch(`${api.url}${PATH}/one`, { dispatcher: agent });
      assert.equal(again.status, 200);
      await again.text();
      assert.equal(api.connectionsAccepted() - opened, 2, 'the client connects again');
    } finally {
      await agent.close();
    }
  });

  it('resets a slow watcher\'s stream over HTTP/2 once it falls too far behind; writers never wait, the connection goes on', { timeout: 15_000 }, async () => {
    const session = await h2Session(api);
    try {
      // Never read: the stream's window fills, then the server's buffer for it.
      const watch = session.request({ ':path': `${PATH}?watch=true&resourceVersion=${api.store.revision}` });
      watch.pause();
      const watchEnd = streamEnd(watch);
      await new Promise((resolve) => watch.once('response', resolve));
      const payload = 'x'.repeat(32 * 1024);
      for (let i = 0; i < 200; i++) {
        api.store.update('/configmaps', { metadata: { name: 'one', namespace: 'default' }, data: { v: `${i}${payload}` } });
      }
      assert.ok(api.store.get({ resource: '/configmaps', namespace: 'default', name: 'one' })!.data.v.startsWith('199'));
      watch.resume();
      assert.notEqual(await watchEnd, 'end', 'the lagging watch is cut off');
      assert.equal((await h2Get(session, `${PATH}/one`)).status, 200, 'its connection serves the next request');
    } finally {
      session.close();
    }
  });

  it('takes bodies over HTTP/2: create, merge patch and delete', { timeout: 15_000 }, async () => {
    const session = await h2Session(api);
    try {
      const send = async (method: string, path: string, body?: unknown, contentType = 'application/json') => {
        const stream = session.request({ ':method': method, ':path': path, ...(body !== undefined ? { 'content-type': contentType } : {}) });
        stream.end(body === undefined ? undefined : JSON.stringify(body));
        let status = 0;
        stream.on('response', (headers) => { status = Number(headers[':status']); });
        let text = '';
        stream.setEncoding('utf8');
        for await (const chunk of stream) text += chunk;
        return { status, body: JSON.parse(text) };
      };
      const created = await send('POST', PATH, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'posted' }, data: { a: '1' } });
      assert.equal(created.status, 201);
      const patched = await send('PATCH', `${PATH}/posted`, { data: { b: '2' } }, 'application/merge-patch+json');
      assert.equal(patched.status, 200);
      assert.deepEqual(patched.body.data, { a: '1', b: '2' });
      assert.equal((await send('DELETE', `${PATH}/posted`)).status, 200);

    } finally {
      session.close();
    }
  });

  it('a watcher 12 MB behind (more than Node\'s default session memory) does not block its connection\'s other requests', { timeout: 30_000 }, async () => {
    const big = await startKubeApi({ kinds: fixtureKinds(), tls: true });
    const session = await h2Session(big);
    session.on('error', () => {});
    try {
      big.store.create('/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'big', namespace: 'default' }, data: { v: '' } });
      const watch = session.request({ ':path': `${PATH}?watch=true&resourceVersion=${big.store.revision}` });
      watch.on('error', () => {});
      watch.pause();
      await new Promise((resolve) => watch.once('response', resolve));
      const payload = 'x'.repeat(64 * 1024);
      // 12 MB unsent to a watcher that reads nothing, under the 16 MiB slow-watcher limit
      for (let i = 0; i < 190; i++) big.store.update('/configmaps', { metadata: { name: 'big', namespace: 'default' }, data: { v: `${i}${payload}` } });
      await new Promise((r) => setTimeout(r, 100));
      const answer = await h2Get(session, '/api/v1/namespaces/default');
      assert.equal(answer.status, 200, 'a new request on the same connection is served');
      watch.close();
    } finally {
      session.close();
      await big.stop();
    }
  });

  it('http1: serves HTTPS/1.1 alone; a client that offers only h2 is refused', { timeout: 15_000 }, async () => {
    const only = await startKubeApi({ kinds: fixtureKinds(), tls: true, http1: true });
    try {
      await assert.rejects(h2Session(only));
      const h1 = await h1Get(only, '/api/v1/namespaces/default');
      assert.equal(h1.httpVersion, '1.1');
      assert.equal(h1.status, 200);
    } finally {
      await only.stop();
    }
  });
});
