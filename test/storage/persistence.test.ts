import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { StorageOSClient } from '../../lib/storage/storageos/client.ts';
import { LABELS } from '../../lib/storage/types.ts';
import { csiLabels, startStorage } from './support.ts';

describe('persistence: the data file survives a restart', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'claimflow-storage-test-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  test('volumes, versions, shared state, nodes and labels come back; old tokens re-login', async () => {
    const dataFile = join(dir, 'state.json');
    const volumeRoot = join(dir, 'volumes');
    const first = await startStorage({ dataFile, volumeRoot, nodes: ['w1'] });
    const client = first.client;
    let volumeID: string;
    let version: string;
    try {
      const v = await first.client.createVolume({ namespace: 'app', name: 'pvc-keep', sizeBytes: 3 * 2 ** 30, labels: csiLabels('pvc-keep', 'keep', 'app') });
      const gone = await first.client.createVolume({ namespace: 'app', name: 'pvc-gone', sizeBytes: 2 ** 30 });
      await first.client.deleteVolume({ namespace: 'app', id: gone.id });
      await first.api.state.shareVolume(v.id, '10.1.2.3:25000');
      const shared = (await first.client.listSharedVolumes())[0];
      await first.client.setExternalEndpoint({ id: v.id, namespace: 'app', endpoint: '10.96.1.1:2049', version: shared.version });
      const node = (await first.client.listNodes())[0];
      const labelled = await first.client.updateNodeLabels({ id: node.id, labels: { rack: 'r1' }, version: node.version });
      await first.client.setComputeOnly({ id: node.id, computeOnly: true, version: labelled.version });
      const final = await first.client.getVolume({ namespace: 'app', id: v.id });
      volumeID = final.id;
      version = final.version;
      // The file on disk is complete JSON at every point (atomic rename), already holding the volume.
      const onDisk = JSON.parse(await readFile(dataFile, 'utf8')) as { volumes: Array<{ id: string }> };
      assert.deepEqual(onDisk.volumes.map((x) => x.id), [v.id]);
    } finally {
      await first.stop();
    }

    // Same port, so the first client (holding the first server's token) talks to the second server.
    const second = await startStorage({ dataFile, volumeRoot, port: first.api.port });
    try {
      assert.equal(client.transport.logins, 1);
      const v = await client.getVolume({ namespace: 'app', id: volumeID });
      assert.equal(client.transport.logins, 2, 'tokens do not survive a restart: 401 → re-login, transparently');
      assert.equal(v.version, version);
      assert.equal(v.sizeBytes, 3 * 2 ** 30);
      assert.equal(v.nfsServiceEndpoint, '10.1.2.3:25000');
      assert.equal(v.labels[LABELS.nfsMountEndpoint], '10.96.1.1:2049');
      assert.ok(v.localPath);
      assert.ok((await stat(v.localPath)).isDirectory());
      assert.deepEqual(await readdir(volumeRoot), [volumeID], 'the deleted volume left no directory');
      assert.equal((await second.client.listVolumes('app')).length, 1);
      const nodes = await second.client.listNodes();
      assert.equal(nodes.length, 1);
      assert.deepEqual(nodes[0].labels, { rack: 'r1', [LABELS.computeOnly]: 'true' });
      assert.equal(nodes[0].computeOnly, true);
      // The restored version is live: a write with it succeeds once, then is stale.
      await second.client.setExternalEndpoint({ id: volumeID, namespace: 'app', endpoint: '10.96.1.2:2049', version });
    } finally {
      await second.stop();
    }
  });

  test('stop cancels requests held by a latency fault: they change nothing', async () => {
    const s = await startStorage({ dataFile: join(dir, 'held.json') }, { backoff: { attempts: 1 } });
    await s.client.listNamespaces();
    s.api.faults.add({ method: 'POST', path: '/v2/namespaces/*/volumes', latencyMs: 60_000 });
    const held = s.client.createVolume({ namespace: 'default', name: 'pvc-held', sizeBytes: 2 ** 30 });
    // Wait until the request is at the server (counted) before stopping.
    while (s.api.requests.get('POST', '/v2/namespaces/{namespaceID}/volumes') === 0) await new Promise((r) => setTimeout(r, 5));
    await s.stop();
    await assert.rejects(held);
    assert.deepEqual(s.api.state.allVolumes(), []);
    const saved = JSON.parse(await readFile(join(dir, 'held.json'), 'utf8')) as { volumes: unknown[] };
    assert.deepEqual(saved.volumes, []);
  });

  test('main.ts: prints one listening line, serves, exits 0 on SIGTERM', async () => {
    const dataFile = join(dir, 'main.json');
    const child = spawn(process.execPath, ['infra/local/storage-api/main.ts', '--port', '0', '--data', dataFile, '--volume-root', join(dir, 'main-volumes'), '--node', 'cli-node'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const lines = createInterface({ input: child.stdout });
      const [line] = (await once(lines, 'line')) as [string];
      const match = /^storage-api listening on (http:\/\/127\.0\.0\.1:\d+)$/.exec(line);
      assert.ok(match, `unexpected first line: ${line}`);
      const client = new StorageOSClient({ endpoint: match[1], username: 'storageos', password: 'storageos' });
      assert.deepEqual((await client.listNodes()).map((n) => n.name), ['cli-node']);
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      const [code] = (await exited) as [number | null];
      assert.equal(code, 0);
      const saved = JSON.parse(await readFile(dataFile, 'utf8')) as { nodes: Array<{ name: string }> };
      assert.deepEqual(saved.nodes.map((n) => n.name), ['cli-node']);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
