import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { BadRequestError, StaleVersionError } from '../../lib/storage/errors.ts';
import { retryOnStaleVersion } from '../../lib/storage/retry.ts';
import { LABELS } from '../../lib/storage/types.ts';
import { startStorage, type StorageFixture } from './support.ts';

describe('nodes: labels with version, compute-only', () => {
  let s: StorageFixture;
  before(async () => {
    s = await startStorage({ nodes: ['node-a', 'node-b'] });
  });
  after(() => s.stop());

  const node = async (name: string) => {
    const found = (await s.client.listNodes()).find((n) => n.name === name);
    assert.ok(found, `node ${name} listed`);
    return found;
  };

  test('list nodes: id, name, labels, version, computeOnly', async () => {
    const nodes = await s.client.listNodes();
    assert.deepEqual(nodes.map((n) => n.name).sort(), ['node-a', 'node-b']);
    for (const n of nodes) {
      assert.match(n.id, /^[0-9a-f-]{36}$/);
      assert.deepEqual(n.labels, {});
      assert.equal(n.computeOnly, false);
      assert.equal(n.health, 'online');
      assert.notEqual(n.version, '');
    }
  });

  test('updateNodeLabels replaces unreserved labels with the version; stale → 412', async () => {
    const a = await node('node-a');
    const updated = await s.client.updateNodeLabels({ id: a.id, labels: { rack: 'r1', zone: 'z1' }, version: a.version });
    assert.deepEqual(updated.labels, { rack: 'r1', zone: 'z1' });
    assert.notEqual(updated.version, a.version);
    const removed = await s.client.updateNodeLabels({ id: a.id, labels: { rack: 'r1' }, version: updated.version });
    assert.deepEqual(removed.labels, { rack: 'r1' }, 'labels absent from the body are removed');
    await assert.rejects(s.client.updateNodeLabels({ id: a.id, labels: {}, version: a.version }), StaleVersionError);
    assert.deepEqual((await node('node-a')).labels, { rack: 'r1' }, 'the stale write changed nothing');
  });

  test('setComputeOnly is reflected as the reserved label; false removes it', async () => {
    const b = await node('node-b');
    const on = await s.client.setComputeOnly({ id: b.id, computeOnly: true, version: b.version });
    assert.equal(on.computeOnly, true);
    assert.equal(on.labels[LABELS.computeOnly], 'true');
    // Unreserved updates keep the reserved label (sent or not).
    const labelled = await s.client.updateNodeLabels({ id: b.id, labels: { rack: 'r2' }, version: on.version });
    assert.deepEqual(labelled.labels, { rack: 'r2', [LABELS.computeOnly]: 'true' });
    const off = await s.client.setComputeOnly({ id: b.id, computeOnly: false, version: labelled.version });
    assert.equal(off.computeOnly, false);
    assert.deepEqual(off.labels, { rack: 'r2' });
  });

  test('altering a reserved label through PUT /nodes/{id} is rejected (400)', async () => {
    const a = await node('node-a');
    await assert.rejects(
      s.client.updateNodeLabels({ id: a.id, labels: { [LABELS.computeOnly]: 'true' }, version: a.version }),
      BadRequestError,
    );
    await assert.rejects(
      s.client.updateNodeLabels({ id: a.id, labels: { 'storageos.com/fenced': 'true' }, version: a.version }),
      BadRequestError,
    );
  });

  test('412 → re-read → retry (retryOnStaleVersion)', async () => {
    const a = await node('node-a');
    s.api.faults.add({ method: 'PUT', path: `/v2/nodes/${a.id}`, stale: true });
    let attempts = 0;
    const result = await retryOnStaleVersion(async () => {
      attempts++;
      const fresh = await node('node-a');
      return s.client.updateNodeLabels({ id: fresh.id, labels: { rack: 'r9' }, version: fresh.version });
    });
    assert.equal(attempts, 2);
    assert.deepEqual(result.labels, { rack: 'r9' });
  });
});
