/**
 * `EnsureNodeLabels` against the embedded storage control plane (reference storageos.md §5.4, §5.5):
 * the calls each case makes, the labels the node ends with, and upstream's error messages.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { classifyNodeLabels, ensureNodeLabels, ensureUnreservedNodeLabels } from '../../../lib/label-sync/ensure.ts';
import { startStorage, type StorageFixture } from '../../storage/support.ts';

const CO = 'storageos.com/computeonly';

let s: StorageFixture;
before(async () => {
  s = await startStorage();
});
after(() => s.stop());

let seq = 0;
/** A fresh node with `labels` (reserved ones as the control plane reflects them), and the request counter reset. */
async function freshNode(labels: Record<string, string> = {}): Promise<string> {
  const name = `node-${++seq}`;
  await s.api.state.addNode(name, labels);
  await s.client.listNodes(); // log in before counting
  s.api.requests.reset();
  return name;
}
const calls = () => ({ list: s.api.requests.get('GET', '/v2/nodes'), update: s.api.requests.get('PUT', '/v2/nodes/{id}'), computeOnly: s.api.requests.get('PUT', '/v2/nodes/{id}/compute-only') });
const labelsOf = async (name: string) => (await s.client.listNodes()).find((n) => n.name === name)!.labels;

describe('ensureNodeLabels (TestClient_EnsureNodeLabels)', () => {
  const cases: { name: string; current: Record<string, string>; desired: Record<string, string>; computeOnly: number; update: number; result: Record<string, string>; error?: string }[] = [
    { name: 'add unrestricted', current: {}, desired: { foo: 'bar' }, computeOnly: 0, update: 1, result: { foo: 'bar' } },
    { name: 'remove unrestricted', current: { foo: 'bar' }, desired: {}, computeOnly: 0, update: 1, result: {} },
    { name: 'add computeonly', current: {}, desired: { [CO]: 'true' }, computeOnly: 1, update: 0, result: { [CO]: 'true' } },
    { name: 'disable computeonly', current: { [CO]: 'true' }, desired: { [CO]: 'false' }, computeOnly: 1, update: 0, result: {} },
    { name: 'remove computeonly', current: { [CO]: 'true' }, desired: {}, computeOnly: 1, update: 0, result: {} },
    { name: 'non-bool computeonly', current: {}, desired: { [CO]: 'not-a-boolean' }, computeOnly: 0, update: 0, result: {}, error: `${CO}: strconv.ParseBool: parsing "not-a-boolean": invalid syntax` },
    { name: 'mixed', current: {}, desired: { foo: 'bar', boo: 'baz', [CO]: 'true' }, computeOnly: 1, update: 1, result: { foo: 'bar', boo: 'baz', [CO]: 'true' } },
    { name: 'bad reserved + unreserved', current: {}, desired: { foo: 'bar', boo: 'baz', 'storageos.com/badlabelname': 'x' }, computeOnly: 0, update: 1, result: { foo: 'bar', boo: 'baz' }, error: 'storageos.com/badlabelname: unrecognized reserved label' },
    { name: 'replicas on a node', current: {}, desired: { 'storageos.com/replicas': '1' }, computeOnly: 0, update: 0, result: {}, error: 'storageos.com/replicas: invalid reserved label for this object type' },
    { name: 'nocache on a node', current: {}, desired: { 'storageos.com/nocache': 'true' }, computeOnly: 0, update: 0, result: {}, error: 'storageos.com/nocache: invalid reserved label for this object type' },
    { name: 'nocompress on a node', current: {}, desired: { 'storageos.com/nocompress': 'true' }, computeOnly: 0, update: 0, result: {}, error: 'storageos.com/nocompress: invalid reserved label for this object type' },
    { name: 'failure-mode on a node', current: {}, desired: { 'storageos.com/failure-mode': 'soft' }, computeOnly: 0, update: 0, result: {}, error: 'storageos.com/failure-mode: invalid reserved label for this object type' },
    { name: 'CSI keys are reserved and unrecognized', current: {}, desired: { 'csi.storage.k8s.io/pv/name': 'x', a: 'b' }, computeOnly: 0, update: 1, result: { a: 'b' }, error: 'csi.storage.k8s.io/pv/name: unrecognized reserved label' },
    { name: 'computeonly kept while unreserved labels change', current: { [CO]: 'true', a: '1' }, desired: { [CO]: 'true', a: '2' }, computeOnly: 0, update: 1, result: { [CO]: 'true', a: '2' } },
    { name: 'already in sync: no writes', current: { a: '1' }, desired: { a: '1' }, computeOnly: 0, update: 0, result: { a: '1' } },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const name = await freshNode(c.current);
      const outcome = await ensureNodeLabels(s.client, name, c.desired);
      assert.deepEqual(outcome.failures, []);
      assert.equal(outcome.nodeNotFound, false);
      assert.deepEqual(outcome.invalid.map((e) => e.message), c.error ? [c.error] : []);
      assert.deepEqual(calls(), { list: 2, update: c.update, computeOnly: c.computeOnly }, 'ListNodes ×2 per Ensure, writes as upstream');
      assert.equal(outcome.computeOnlyWritten, c.computeOnly === 1);
      assert.equal(outcome.labelsWritten, c.update === 1);
      assert.deepEqual(await labelsOf(name), c.result);
    });
  }

  it('a node unknown to the control plane is nothing to do', async () => {
    await freshNode();
    const outcome = await ensureNodeLabels(s.client, 'not-a-storage-node', { a: '1', [CO]: 'true' });
    assert.deepEqual(outcome, { nodeNotFound: true, computeOnlyWritten: false, labelsWritten: false, invalid: [], failures: [] });
    assert.deepEqual(calls(), { list: 1, update: 0, computeOnly: 0 });
  });

  it('a failing call is reported while the other step still runs', async () => {
    const name = await freshNode();
    s.api.faults.add({ method: 'PUT', path: '/v2/nodes/*/compute-only', status: 400, times: 1 });
    const outcome = await ensureNodeLabels(s.client, name, { a: '1', [CO]: 'true' });
    assert.equal(outcome.failures.length, 1);
    assert.equal(outcome.labelsWritten, true);
    assert.deepEqual(await labelsOf(name), { a: '1' });
    const retried = await ensureNodeLabels(s.client, name, { a: '1', [CO]: 'true' });
    assert.deepEqual(retried.failures, []);
    assert.deepEqual(await labelsOf(name), { a: '1', [CO]: 'true' });
  });

  it('a stale version is re-read and written again', async () => {
    const name = await freshNode({ a: '1' });
    s.api.faults.add({ method: 'PUT', path: '/v2/nodes/*', status: 412, times: 1 });
    const outcome = await ensureNodeLabels(s.client, name, { a: '2' });
    assert.deepEqual(outcome.failures, []);
    assert.equal(calls().update, 2);
    assert.deepEqual(await labelsOf(name), { a: '2' });
  });
});

describe('ensureUnreservedNodeLabels (TestClient_EnsureUnreservedNodeLabels)', () => {
  const cases: { name: string; current: Record<string, string>; desired: Record<string, string>; update: number }[] = [
    { name: 'add', current: {}, desired: { foo: 'bar' }, update: 1 },
    { name: 'change', current: { foo: 'bar' }, desired: { foo: 'baz' }, update: 1 },
    { name: 'remove', current: { foo: 'bar' }, desired: {}, update: 1 },
    { name: 'nothing on either side', current: {}, desired: {}, update: 0 },
    { name: 'current reserved preserved in the comparison', current: { [CO]: 'true' }, desired: {}, update: 0 },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const name = await freshNode(c.current);
      await ensureUnreservedNodeLabels(s.client, name, c.desired);
      assert.deepEqual(calls(), { list: 1, update: c.update, computeOnly: 0 });
      const reserved = Object.fromEntries(Object.entries(c.current).filter(([k]) => k.startsWith('storageos.com/')));
      assert.deepEqual(await labelsOf(name), { ...c.desired, ...reserved });
    });
  }
});

it('classifyNodeLabels: reserved keys never reach the unreserved set', () => {
  const out = classifyNodeLabels({ a: '1', 'storageos.com/': 'x', [CO]: 'T', 'csi.storage.k8s.io/pvc/name': 'p' });
  assert.deepEqual(out.unreserved, { a: '1' });
  assert.equal(out.computeOnly, true);
  assert.deepEqual(out.invalid.map((e) => e.key), ['storageos.com/', 'csi.storage.k8s.io/pvc/name']);
});
