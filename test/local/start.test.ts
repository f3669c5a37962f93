/**
 * `npm start` (infra/local/start.ts) as a user runs it: one ready line, `stack.json` and a kubeconfig
 * that reaches the emulator, and a clean exit on Ctrl-C (SIGINT).
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { PROJECT_ROOT } from '../../infra/build/bundle.ts';

it('starts the stack, writes stack.json and a working kubeconfig, and stops cleanly on SIGINT', async () => {
  const stateDir = await mkdtemp(join(tmpdir(), 'claimflow-start-'));
  const child = spawn(process.execPath, [join(PROJECT_ROOT, 'infra/local/start.ts'), '--state-dir', stateDir, '--no-schedules'], {
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
    while (!/local stack ready/.test(stdout)) {
      if (child.exitCode !== null) assert.fail(`start exited with ${child.exitCode}: ${stderr}`);
      if (Date.now() > deadline) assert.fail(`no ready line: ${stdout}\n${stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(stdout.split('\n').filter((l) => l.includes('local stack ready')).length, 1, 'one ready line');
    assert.match(stdout, /kubectl get pvc/);

    const stack = JSON.parse(await readFile(join(stateDir, 'stack.json'), 'utf8'));
    assert.equal(stack.kubeconfig, join(stateDir, 'kubeconfig'));
    for (const key of ['kubeApi', 'sqs', 'sns', 'dynamodb']) assert.match(stack[key], /^http:\/\/127\.0\.0\.1:\d+$/);
    const kc = new KubeConfig();
    kc.loadFromFile(stack.kubeconfig);
    const namespaces = await kc.makeApiClient(CoreV1Api).listNamespace();
    assert.ok(namespaces.items.some((n) => n.metadata?.name === 'default'));

    child.kill('SIGINT');
    assert.equal(await exited, 0, `exit code (stderr: ${stderr})`);
    assert.match(stdout, /claimflow: stopped/);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    await rm(stateDir, { recursive: true, force: true });
  }
});
