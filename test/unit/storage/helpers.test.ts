import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  AlreadyExistsError,
  BadRequestError,
  ConflictError,
  ForbiddenError,
  InvalidStateTransitionError,
  LicenceError,
  LockedError,
  NotFoundError,
  RetriesExhaustedError,
  ServerError,
  StaleVersionError,
  StorageApiError,
  StorageTransportError,
  UnauthorizedError,
  isRetryable,
  mapApiError,
} from '../../../lib/storage/errors.ts';
import { isReservedLabel, parseBool } from '../../../lib/storage/labels.ts';
import { splitHostPort, toSharedVolume } from '../../../lib/storage/shared-volume.ts';
import { backoffDelay, resolveBackoff } from '../../../lib/storage/storageos/backoff.ts';
import { bearerToken, normalizeEndpoint } from '../../../lib/storage/storageos/transport.ts';
import type { Volume } from '../../../lib/storage/types.ts';
import { FaultInjector } from '../../../infra/local/storage-api/faults.ts';
import { encodeVersion } from '../../../infra/local/storage-api/version.ts';

// api-manager TestSplitAddressPort.
const hostPorts: Array<[string, { host: string; port: number } | undefined]> = [
  ['localhost:80', { host: 'localhost', port: 80 }],
  ['[::1]:80', { host: '::1', port: 80 }],
  ['[::1%lo0]:80', { host: '::1%lo0', port: 80 }],
  [':80', { host: '', port: 80 }],
  ['10.0.0.1:25805', { host: '10.0.0.1', port: 25805 }],
  ['localhost', undefined],
  ['::1:80', undefined],
  ['localhost:', undefined],
  ['[::1]80', undefined],
  ['[::1:80', undefined],
  ['::1]:80', undefined],
  ['host:http', undefined],
];
for (const [input, expected] of hostPorts) {
  test(`splitHostPort(${JSON.stringify(input)})`, () => assert.deepEqual(splitHostPort(input), expected));
}

// api-manager TestIsReservedLabel.
const reserved: Array<[string, boolean]> = [
  ['not-storage-os', false],
  ['storageos.com/', true],
  ['storageos.com/foo', true],
  ['csi.storage.k8s.io/pvc/namespace', true],
  ['csi.storage.k8s.io/pvc/name', true],
  ['csi.storage.k8s.io/pv/name', true],
  ['csi.storage.k8s.io/other', false],
];
for (const [key, expected] of reserved) {
  test(`isReservedLabel(${JSON.stringify(key)}) = ${expected}`, () => assert.equal(isReservedLabel(key), expected));
}

test('parseBool follows strconv.ParseBool', () => {
  for (const t of ['1', 't', 'T', 'true', 'TRUE', 'True']) assert.equal(parseBool(t), true, t);
  for (const f of ['0', 'f', 'F', 'false', 'FALSE', 'False']) assert.equal(parseBool(f), false, f);
  for (const bad of ['', 'yes', 'tRuE', 'not-a-boolean']) assert.equal(parseBool(bad), undefined, bad);
});

// go-api MapAPIError (reference §3.4).
const statuses: Array<[number, string, new (...args: never[]) => StorageApiError]> = [
  [400, 'bad', BadRequestError],
  [401, 'auth', UnauthorizedError],
  [403, 'denied', ForbiddenError],
  [404, 'volume not found', NotFoundError],
  [409, 'volume is in use', ConflictError],
  [409, 'volume with name "x" already exists', AlreadyExistsError],
  [412, 'stale', StaleVersionError],
  [422, 'transition', InvalidStateTransitionError],
  [423, 'locked', LockedError],
  [451, 'licence', LicenceError],
  [500, 'server', ServerError],
  [503, 'store', ServerError],
  [418, 'teapot', StorageApiError],
];
for (const [status, text, type] of statuses) {
  test(`mapApiError ${status} ${text} → ${type.name}`, () => {
    const err = mapApiError(status, text, 'GET /v2/x');
    assert.ok(err instanceof type);
    assert.equal(err.status, status);
    assert.equal(err.apiMessage, text);
    assert.equal(err.message, `GET /v2/x: ${status} ${text}`);
  });
}

test('isRetryable: 5xx, 429, transport, and exhausted retries of those', () => {
  assert.equal(isRetryable(mapApiError(503, 'x', 'op')), true);
  assert.equal(isRetryable(mapApiError(429, 'x', 'op')), true);
  assert.equal(isRetryable(new StorageTransportError('op', true)), true);
  assert.equal(isRetryable(new RetriesExhaustedError('op', 4, mapApiError(500, 'x', 'op'))), true);
  assert.equal(isRetryable(mapApiError(412, 'x', 'op')), false);
  assert.equal(isRetryable(mapApiError(404, 'x', 'op')), false);
  assert.equal(isRetryable(new Error('other')), false);
});

// api-manager -api-endpoint handling.
const endpoints: Array<[string, string]> = [
  ['storageos', 'http://storageos:5705'],
  ['storageos:1234', 'http://storageos:1234'],
  ['http://10.0.0.1', 'http://10.0.0.1:5705'],
  ['https://api.example.com:8443/', 'https://api.example.com:8443'],
  ['http://storageos:80', 'http://storageos'],
  ['[fd00::1]', 'http://[fd00::1]:5705'],
  ['http://[fd00::1]:6000', 'http://[fd00::1]:6000'],
];
for (const [input, expected] of endpoints) {
  test(`normalizeEndpoint(${input}) = ${expected}`, () => assert.equal(normalizeEndpoint(input), expected));
}

test('bearerToken reads "Bearer <jwt>" and nothing else', () => {
  assert.equal(bearerToken('Bearer abc.def'), 'abc.def');
  assert.equal(bearerToken('bearer xyz'), 'xyz');
  assert.equal(bearerToken('abc'), undefined);
  assert.equal(bearerToken(null), undefined);
});

test('backoff doubles and caps; resolveBackoff rejects zero attempts', () => {
  const b = resolveBackoff({ baseDelayMs: 100, maxDelayMs: 1000, jitter: false });
  assert.deepEqual([0, 1, 2, 3, 4, 5].map((n) => backoffDelay(b, n)), [100, 200, 400, 800, 1000, 1000]);
  const jittered = resolveBackoff({ baseDelayMs: 100 });
  for (let i = 0; i < 50; i++) {
    const d = backoffDelay(jittered, 2);
    assert.ok(d >= 200 && d <= 400, String(d));
  }
  assert.throws(() => resolveBackoff({ attempts: 0 }), RangeError);
});

function volume(labels: Record<string, string>, endpoint: string | null): Volume {
  return {
    id: 'v1', name: 'pvc-1', namespaceID: 'ns1', namespace: 'default', description: '', sizeBytes: 1, fsType: 'ext4',
    labels, attachmentType: 'nfs', attachedOn: '', nfsServiceEndpoint: endpoint, masterNodeID: '', version: 'NQ', createdAt: '', updatedAt: '',
  };
}
const k8s = { 'csi.storage.k8s.io/pv/name': 'pvc-1', 'csi.storage.k8s.io/pvc/name': 'data', 'csi.storage.k8s.io/pvc/namespace': 'app' };

test('toSharedVolume maps labels and endpoints (api-manager toSharedVolume)', () => {
  assert.deepEqual(toSharedVolume(volume({ ...k8s, 'storageos.com/nfs/mount-endpoint': '10.96.0.1:2049' }, '10.0.0.1:25805')), {
    id: 'v1', namespaceID: 'ns1', serviceName: 'pvc-1', pvcName: 'data', namespace: 'app',
    internalEndpoint: '10.0.0.1:25805', externalEndpoint: '10.96.0.1:2049', version: 'NQ',
  });
  assert.equal(toSharedVolume(volume(k8s, null)), undefined, 'not shared');
  assert.equal(toSharedVolume(volume(k8s, '')), undefined, 'empty endpoint is present but does not parse');
  assert.equal(toSharedVolume(volume({ ...k8s, 'csi.storage.k8s.io/pvc/name': '' }, '10.0.0.1:1')), undefined, 'not Kubernetes');
});

test('fault rules: method, * and ** patterns, times, order', () => {
  const faults = new FaultInjector();
  faults.add({ method: 'put', path: '/v2/nodes/*', status: 503, times: 2 });
  faults.add({ path: '/v2/namespaces/**', stale: true });
  faults.add({ path: '/v2/nodes', drop: true, times: -1 });
  assert.equal(faults.take('GET', '/v2/nodes/abc'), undefined, 'method must match');
  assert.deepEqual(faults.take('PUT', '/v2/nodes/abc'), { latencyMs: 0, failure: { status: 503, message: 'injected fault 503' } });
  assert.equal(faults.take('PUT', '/v2/nodes/abc/compute-only'), undefined, '* is one segment');
  faults.take('PUT', '/v2/nodes/abc');
  assert.equal(faults.take('PUT', '/v2/nodes/abc'), undefined, 'used up after 2');
  assert.equal(faults.take('DELETE', '/v2/namespaces/n1/volumes/v1')?.failure && 'stale', 'stale');
  assert.deepEqual(faults.take('GET', '/v2/nodes'), { latencyMs: 0, failure: 'drop' });
  assert.deepEqual(faults.take('GET', '/v2/nodes'), { latencyMs: 0, failure: 'drop' }, 'unlimited');
  assert.equal(faults.fired, 5);
  assert.deepEqual(faults.list().map((r) => r.remaining), [Infinity]);
  faults.clear();
  assert.equal(faults.take('GET', '/v2/nodes'), undefined);
  assert.throws(() => faults.add({ path: 'v2/nodes' }), TypeError);
});

test('versions are short opaque base64 strings, as StorageOS shows them', () => {
  assert.equal(encodeVersion(5), 'NQ');
  assert.equal(encodeVersion(12), 'MTI');
});
