/**
 * `npm start` (infra/local/start.ts) as a user runs it, schedules and all: one ready line, `stack.json` and a
 * kubeconfig that reaches the emulator; the seeded storage node carries the CSI driver annotation, so
 * labelling it reaches the storage control plane; our own manifests apply (`kubectl apply -k infra/k8s`,
 * when kubectl is installed); and Ctrl-C (SIGINT) stops everything cleanly and promptly — exit 0, no
 * worker error, no step left running, even with the shared-volume poll in the middle of its run.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { PROJECT_ROOT } from '../../infra/build/bundle.ts';
import { isStorageOSNode } from '../../lib/label-sync/predicate.ts';
import { StorageOSClient } from '../../lib/storage/storageos/client.ts';
import { STORAGE_API_CREDENTIALS } from '../../infra/local/stack/stack.ts';
import { eventually } from '../support/stack.ts';

const hasKubectl = spawnSync('kubectl', ['version', '--client'], { stdio: 'ignore' }).status === 0;

it('starts the stack, seeds an annotated storage node, takes our manifests, and stops cleanly and promptly on SIGINT', async () => {
  const stateDir = await mkdtemp(join(tmpdir(), 'claimflow-start-'));
  const child = spawn(process.execPath, [join(PROJECT_ROOT, 'infra/local/start.ts'), '--state-dir', stateDir], {
    cwd: PROJECT_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    const deadline = Date.now() + 60_000;
    // the hint (kubectl get pvc …) follows the ready line, possibly in a later chunk of output
    while (!/local stack ready[\s\S]*kubectl get pvc/.test(stdout)) {
      if (child.exitCode !== null) assert.fail(`start exited with ${child.exitCode}: ${stderr}`);
      if (Date.now() > deadline) assert.fail(`no ready line: ${stdout}\n${stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(stdout.split('\n').filter((l) => l.includes('local stack ready')).length, 1, 'one ready line');
    assert.match(stdout, /kubectl get pvc/);

    const stack = JSON.parse(await readFile(join(stateDir, 'stack.json'), 'utf8'));
    assert.equal(stack.kubeconfig, join(stateDir, 'kubeconfig'));
    for (const key of ['sqs', 'sns', 'dynamodb', 'storageApi']) assert.match(stack[key], /^http:\/\/127\.0\.0\.1:\d+$/);
    // the emulator authenticates, so it serves https (kubectl sends credentials only over TLS)
    assert.match(stack.kubeApi, /^https:\/\/127\.0\.0\.1:\d+$/);
    const kc = new KubeConfig();
    kc.loadFromFile(stack.kubeconfig);
    const core = kc.makeApiClient(CoreV1Api);
    const namespaces = await core.listNamespace();
    assert.ok(namespaces.items.some((n) => n.metadata?.name === 'default'));

    // the storage node is one for label sync: labelling it reaches the storage control plane
    const node = await core.readNode({ name: 'local-node' });
    assert.ok(isStorageOSNode(node), `CSI driver annotation on local-node: ${JSON.stringify(node.metadata?.annotations)}`);
    const storage = new StorageOSClient({ endpoint: stack.storageApi, ...STORAGE_API_CREDENTIALS });
    const nodeId = JSON.parse(node.metadata!.annotations!['csi.volume.kubernetes.io/nodeid'])['csi.storageos.com'];
    assert.ok((await storage.listNodes()).some((n) => n.id === nodeId && n.name === 'local-node'), 'the annotation names the storage node');
    await core.patchNode({ name: 'local-node', body: { metadata: { labels: { 'topology.example.com/rack': 'r1' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    await eventually(async () => (await storage.listNodes()).find((n) => n.name === 'local-node')?.labels?.['topology.example.com/rack'] === 'r1',
      30_000, 'the new label on the storage node');

    if (hasKubectl) {
      const { stdout: applied } = await promisify(execFile)('kubectl', ['apply', '-k', join(PROJECT_ROOT, 'infra/k8s')],
        { env: { PATH: process.env.PATH, KUBECONFIG: stack.kubeconfig, HOME: stateDir }, timeout: 60_000 });
      assert.match(applied, /deployment\.apps\/claimflow-forwarder created/);
      // the stack applied the RBAC as kubectl would at start
      assert.match(applied, /serviceaccount\/claimflow-forwarder unchanged/);
      assert.match(applied, /clusterrolebinding\.rbac\.authorization\.k8s\.io\/claimflow-forwarder unchanged/);
    }

    // the shared-volume poll fired at start and is mid-run now: the stop must not wait for it
    const stopAt = Date.now();
    child.kill('SIGINT');
    assert.equal(await exited, 0, `exit code (stderr: ${stderr})`);
    const stopMs = Date.now() - stopAt;
    assert.match(stdout, /claimflow: stopped/);
    const all = `${stdout}\n${stderr}`;
    assert.doesNotMatch(all, /function worker exited/);
    assert.doesNotMatch(all, /still running after/);
    assert.doesNotMatch(all, /^(stopping|schedule) .*:/m);
    assert.ok(stopMs < 10_000, `stopped in ${stopMs} ms`);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    await rm(stateDir, { recursive: true, force: true });
  }
});
