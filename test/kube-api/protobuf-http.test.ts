// Protobuf over HTTP, as kubectl ≥1.2x and Go clients speak it: imperative creates with protobuf bodies,
// protobuf responses, lists, watch frames and errors; ServiceAccount tokens; negotiation (406/415, q-values,
// JSON-only kinds); YAML responses.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { startKubeApi, TokenError, type KubeApi } from '../../infra/local/kube-api/index.ts';
import { decodeObject, encodeObject, readWatchFrames } from '../../infra/local/kube-api/protobuf/codec.ts';
import { fixtureKinds } from '../../infra/local/kube-api/testing/fixture-kinds.ts';
import { parse as parseYaml } from 'yaml';

const PB = 'application/vnd.kubernetes.protobuf';
/** What kubectl 1.32's typed clients send (`rest.Config{ContentType: protobuf}`). */
const KUBECTL_ACCEPT = `${PB},application/json`;

interface Reply { status: number; type: string; body: any; raw: Buffer }

async function call(api: KubeApi, method: string, path: string, body?: Uint8Array | string, headers: Record<string, string> = {}): Promise<Reply> {
  const res = await fetch(api.url + path, { method, headers, ...(body !== undefined ? { body } : {}) });
  const raw = Buffer.from(await res.arrayBuffer());
  const type = res.headers.get('content-type') ?? '';
  let parsed: any = raw.toString('utf8');
  if (type.startsWith(PB)) parsed = decodeObject(raw);
  else if (type.startsWith('application/json')) parsed = JSON.parse(parsed);
  return { status: res.status, type, body: parsed, raw };
}

const postPb = (api: KubeApi, path: string, obj: Record<string, unknown>): Promise<Reply> =>
  call(api, 'POST', path, encodeObject(obj as { apiVersion: string; kind: string }), { 'Content-Type': PB, Accept: KUBECTL_ACCEPT });

describe('protobuf over HTTP (built-in kinds)', () => {
  let api: KubeApi;
  before(async () => {
    api = await startKubeApi();
  });
  after(async () => {
    await api.stop();
  });

  it('kubectl create namespace: a Namespace as client-go writes it (every value field) → 201 in protobuf', async () => {
    const w = new BinaryWriter();
    w.raw(Uint8Array.of(0x6b, 0x38, 0x73, 0x00));
    const raw = new BinaryWriter();
    raw.tag(1, WireType.LengthDelimited).fork()
      .tag(1, WireType.LengthDelimited).string('team-a').tag(2, WireType.LengthDelimited).string('').tag(3, WireType.LengthDelimited).string('')
      .tag(4, WireType.LengthDelimited).string('').tag(5, WireType.LengthDelimited).string('').tag(6, WireType.LengthDelimited).string('')
      .tag(7, WireType.Varint).int64(0).tag(8, WireType.LengthDelimited).bytes(new Uint8Array())
      .join();
    raw.tag(2, WireType.LengthDelimited).bytes(new Uint8Array()); // spec {}
    raw.tag(3, WireType.LengthDelimited).fork().tag(1, WireType.LengthDelimited).string('').join(); // status {phase: ""}
    w.tag(1, WireType.LengthDelimited).fork().tag(1, WireType.LengthDelimited).string('v1').tag(2, WireType.LengthDelimited).string('Namespace').join();
    w.tag(2, WireType.LengthDelimited).bytes(raw.finish()).tag(3, WireType.LengthDelimited).string('').tag(4, WireType.LengthDelimited).string('');
    const r = await call(api, 'POST', '/api/v1/namespaces?fieldManager=kubectl-create&fieldValidation=Strict', w.finish(), { 'Content-Type': PB, Accept: KUBECTL_ACCEPT });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(r.type, PB);
    assert.equal(r.body.kind, 'Namespace');
    assert.equal(r.body.metadata.name, 'team-a');
    assert.deepEqual(r.body.spec, { finalizers: ['kubernetes'] });
    assert.deepEqual(r.body.status, { phase: 'Active' });
    assert.deepEqual(r.body, api.store.get({ resource: '/namespaces', namespace: '', name: 'team-a' }));
  });

  it('kubectl create secret / configmap / serviceaccount: protobuf bodies stored as JSON objects', async () => {
    const secret = await postPb(api, '/api/v1/namespaces/team-a/secrets', {
      apiVersion: 'v1', kind: 'Secret', metadata: { name: 'storageos-api' }, type: 'Opaque',
      data: { username: Buffer.from('storageos').toString('base64'), password: Buffer.from('pw\n').toString('base64') },
    });
    assert.equal(secret.status, 201, JSON.stringify(secret.body));
    const stored = api.store.get({ resource: '/secrets', namespace: 'team-a', name: 'storageos-api' })!;
    assert.equal(Buffer.from(stored.data.password, 'base64').toString(), 'pw\n');
    const cm = await postPb(api, '/api/v1/namespaces/team-a/configmaps', {
      apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', labels: { tier: '' } }, data: { mode: 'fast', empty: '' },
      binaryData: { blob: Buffer.from([0, 255]).toString('base64') },
    });
    assert.equal(cm.status, 201);
    assert.deepEqual(api.store.get({ resource: '/configmaps', namespace: 'team-a', name: 'settings' })!.data, { mode: 'fast', empty: '' });
    const sa = await postPb(api, '/api/v1/namespaces/team-a/serviceaccounts', {
      apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'builder' }, automountServiceAccountToken: false,
    });
    assert.equal(sa.status, 201);
    assert.equal(sa.body.automountServiceAccountToken, false, 'a pointer at its zero survives');
    const again = await postPb(api, '/api/v1/namespaces/team-a/serviceaccounts', { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'builder' } });
    assert.equal(again.status, 409);
    assert.equal(again.type, PB, 'errors in the negotiated format');
    assert.deepEqual([again.body.kind, again.body.reason, again.body.message, again.body.code], ['Status', 'AlreadyExists', 'serviceaccounts "builder" already exists', 409]);
  });

  it('kubectl create token: TokenRequest in and out in protobuf; the token verifies back to its ServiceAccount until it is gone', async () => {
    const r = await postPb(api, '/api/v1/namespaces/team-a/serviceaccounts/builder/token', {
      apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', metadata: {}, spec: { audiences: ['vault'] },
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(r.body.kind, 'TokenRequest');
    assert.equal(r.body.spec.expirationSeconds, 3600);
    const expires = Date.parse(r.body.status.expirationTimestamp) - Date.now();
    assert.ok(expires > 3590_000 && expires <= 3601_000, `expires in ${expires} ms`);
    const sa = api.store.get({ resource: '/serviceaccounts', namespace: 'team-a', name: 'builder' })!;
    const id = api.tokens.verify(r.body.status.token, api.store, { audience: 'vault' });
    assert.deepEqual([id.username, id.uid, id.groups], ['system:serviceaccount:team-a:builder', sa.metadata.uid, ['system:serviceaccounts', 'system:serviceaccounts:team-a', 'system:authenticated']]);
    assert.throws(() => api.tokens.verify(r.body.status.token, api.store, { audience: 'other' }), TokenError);
    assert.throws(() => api.tokens.verify(`${r.body.status.token.slice(0, -4)}AAAA`, api.store), TokenError);

    // bound to a Secret: valid while it exists
    const secret = api.store.get({ resource: '/secrets', namespace: 'team-a', name: 'storageos-api' })!;
    const bound = await call(api, 'POST', '/api/v1/namespaces/team-a/serviceaccounts/builder/token', JSON.stringify({
      apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 600, boundObjectRef: { kind: 'Secret', apiVersion: 'v1', name: 'storageos-api' } },
    }), { 'Content-Type': 'application/json' });
    assert.equal(bound.status, 201, JSON.stringify(bound.body));
    assert.equal(bound.body.spec.boundObjectRef.uid, secret.metadata.uid);
    assert.equal(api.tokens.verify(bound.body.status.token, api.store).boundObject?.name, 'storageos-api');

    const short = await call(api, 'POST', '/api/v1/namespaces/team-a/serviceaccounts/builder/token', JSON.stringify({ spec: { expirationSeconds: 60 } }), { 'Content-Type': 'application/json' });
    assert.equal(short.status, 422);
    assert.match(short.body.message, /may not specify a duration less than 10 minutes/);
    const missing = await call(api, 'POST', '/api/v1/namespaces/team-a/serviceaccounts/nobody/token', JSON.stringify({}), { 'Content-Type': 'application/json' });
    assert.equal(missing.status, 404);
    assert.equal((await call(api, 'GET', '/api/v1/namespaces/team-a/serviceaccounts/builder/token')).status, 405);

    api.store.delete({ resource: '/secrets', namespace: 'team-a', name: 'storageos-api' });
    assert.throws(() => api.tokens.verify(bound.body.status.token, api.store), /bound to the token is gone/);
    api.store.delete({ resource: '/serviceaccounts', namespace: 'team-a', name: 'builder' });
    assert.throws(() => api.tokens.verify(r.body.status.token, api.store), /has been deleted/);
    const jwks = await call(api, 'GET', '/openid/v1/jwks');
    assert.equal(jwks.body.keys[0].kid, api.tokens.keyId);
  });

  it('get and list in protobuf; YAML when asked; Tables stay JSON', async () => {
    const one = await call(api, 'GET', '/api/v1/namespaces/team-a/configmaps/settings', undefined, { Accept: KUBECTL_ACCEPT });
    assert.equal(one.type, PB);
    assert.deepEqual(one.body, api.store.get({ resource: '/configmaps', namespace: 'team-a', name: 'settings' }));
    const list = await call(api, 'GET', '/api/v1/namespaces', undefined, { Accept: PB });
    assert.equal(list.body.kind, 'NamespaceList');
    assert.equal(list.body.metadata.resourceVersion, String(api.store.revision));
    assert.deepEqual(list.body.items.map((n: any) => n.metadata.name), ['default', 'kube-node-lease', 'kube-public', 'kube-system', 'team-a']);
    const yaml = await call(api, 'GET', '/api/v1/namespaces/team-a', undefined, { Accept: 'application/yaml' });
    assert.equal(yaml.type, 'application/yaml');
    assert.equal(parseYaml(yaml.body).metadata.name, 'team-a');
    const table = await call(api, 'GET', '/api/v1/namespaces', undefined, { Accept: `${PB};as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io,application/json` });
    assert.equal(table.body.kind, 'Table');
    const preferJson = await call(api, 'GET', '/api/v1/namespaces/team-a', undefined, { Accept: `${PB};q=0.5,application/json` });
    assert.equal(preferJson.type, 'application/json');
  });

  it('watch in protobuf: length-prefixed WatchEvent frames, ADDED then MODIFIED', async () => {
    const rv = api.store.get({ resource: '/configmaps', namespace: 'team-a', name: 'settings' })!.metadata.resourceVersion;
    const controller = new AbortController();
    const res = await fetch(`${api.url}/api/v1/namespaces/team-a/configmaps?watch=true&resourceVersion=0&allowWatchBookmarks=true`, { headers: { Accept: KUBECTL_ACCEPT }, signal: controller.signal });
    assert.equal(res.headers.get('content-type'), `${PB};stream=watch`);
    const reader = res.body!.getReader();
    let buf = Buffer.alloc(0);
    const events = async (n: number) => {
      while (readWatchFrames(buf).length < n) {
        const { value, done } = await reader.read();
        if (done) break;
        buf = Buffer.concat([buf, value]);
      }
      return readWatchFrames(buf);
    };
    assert.deepEqual((await events(1)).map((e) => [e.type, e.object.metadata.name, e.object.metadata.resourceVersion]), [['ADDED', 'settings', rv]]);
    const cm = api.store.get({ resource: '/configmaps', namespace: 'team-a', name: 'settings' })!;
    api.store.update('/configmaps', { ...cm, data: { mode: 'slow' } });
    const [, modified] = await events(2);
    assert.equal(modified.type, 'MODIFIED');
    assert.deepEqual(modified.object, api.store.get({ resource: '/configmaps', namespace: 'team-a', name: 'settings' }));
    controller.abort();
  });

  it('DeleteOptions in protobuf; 406 for an Accept nothing can serve; 415 for a body type nothing can decode', async () => {
    const cm = api.store.get({ resource: '/configmaps', namespace: 'team-a', name: 'settings' })!;
    const options = encodeObject({ apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: 'not-the-uid' } } as any);
    const conflict = await call(api, 'DELETE', '/api/v1/namespaces/team-a/configmaps/settings', options, { 'Content-Type': PB, Accept: KUBECTL_ACCEPT });
    assert.equal(conflict.status, 409, JSON.stringify(conflict.body));
    assert.match(conflict.body.message, /UID in the precondition \(not-the-uid\)/);
    const ok = await call(api, 'DELETE', '/api/v1/namespaces/team-a/configmaps/settings',
      encodeObject({ apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: cm.metadata.uid } } as any), { 'Content-Type': PB, Accept: KUBECTL_ACCEPT });
    assert.equal(ok.status, 200);
    assert.deepEqual([ok.type, ok.body.kind, ok.body.status], [PB, 'Status', 'Success']);

    const notAcceptable = await call(api, 'GET', '/api/v1/namespaces/team-a', undefined, { Accept: 'text/html' });
    assert.equal(notAcceptable.status, 406);
    assert.equal(notAcceptable.body.reason, 'NotAcceptable');
    const unsupported = await call(api, 'POST', '/api/v1/namespaces/team-a/configmaps', 'data=1', { 'Content-Type': 'text/plain' });
    assert.equal(unsupported.status, 415);
    assert.match(unsupported.body.message, /accepted media types include: application\/json, application\/yaml, application\/vnd.kubernetes.protobuf/);
    const garbage = await call(api, 'POST', '/api/v1/namespaces/team-a/configmaps', Buffer.from('not protobuf'), { 'Content-Type': PB });
    assert.equal(garbage.status, 400);
    const wrongKind = await postPb(api, '/api/v1/namespaces/team-a/configmaps', { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'x' } });
    assert.equal(wrongKind.status, 400);
  });
});

describe('protobuf and a JSON-only (CRD-like) kind', () => {
  let api: KubeApi;
  before(async () => {
    api = await startKubeApi({ kinds: fixtureKinds().map((k) => (k.kind === 'ConfigMap' ? { ...k, protobuf: false } : k)) });
  });
  after(async () => {
    await api.stop();
  });

  it('a protobuf body is 415, a protobuf-first Accept falls through to JSON, protobuf alone is 406', async () => {
    const body = encodeObject({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } });
    const r = await call(api, 'POST', '/api/v1/namespaces/default/configmaps', body, { 'Content-Type': PB, Accept: KUBECTL_ACCEPT });
    assert.equal(r.status, 415);
    assert.match(r.body.message, /accepted media types include: application\/json, application\/yaml$/);
    const created = await call(api, 'POST', '/api/v1/namespaces/default/configmaps', JSON.stringify({ metadata: { name: 'c' } }), { 'Content-Type': 'application/json', Accept: KUBECTL_ACCEPT });
    assert.equal(created.status, 201);
    assert.equal(created.type, 'application/json');
    assert.equal((await call(api, 'GET', '/api/v1/namespaces/default/configmaps', undefined, { Accept: PB })).status, 406);
    const ns = await call(api, 'GET', '/api/v1/namespaces/default', undefined, { Accept: PB });
    assert.equal(ns.type, PB, 'other kinds still speak protobuf');
  });
});
