import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { QueueCollector, eventually, startStandIns, type StandIns } from './harness.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../support/dynalite.ts';

describe('forwarder entry point (node lib/forwarder/main.ts)', () => {
  let env: StandIns;
  const dir = mkdtempSync(join(tmpdir(), 'forwarder-main-'));
  before(async () => {
    env = await startStandIns();
  });
  after(async () => {
    await env?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs from env configuration, forwards, and on SIGTERM flushes, releases the lease and exits 0', async () => {
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, env.kube.kubeconfig());
    const child = spawn(process.execPath, ['lib/forwarder/main.ts'], {
      cwd: new URL('../../', import.meta.url),
      env: {
        PATH: process.env.PATH,
        CLUSTER_ID: 'c1',
        EVENTS_TOPIC_ARN: env.messaging.topicArn,
        CACHE_TABLE: env.db.tables.cache,
        CONTROL_TABLE: env.db.tables.control,
        KUBECONFIG: kubeconfig,
        AWS_REGION: LOCAL_REGION,
        AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
        AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
        AWS_ENDPOINT_URL_SNS: env.messaging.endpoint,
        AWS_ENDPOINT_URL_DYNAMODB: env.db.endpoint,
        WATCH_KINDS: 'Node',
        HTTP_PORT: '0',
        POD_NAME: 'main-test',
        POD_NAMESPACE: 'default',
        LEASE_DURATION: '3s',
        RENEW_DEADLINE: '2s',
        RETRY_PERIOD: '500ms',
        POWERTOOLS_LOG_LEVEL: 'INFO',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const logs: any[] = [];
    createInterface(child.stdout!).on('line', (line) => {
      try {
        logs.push(JSON.parse(line));
      } catch {
        logs.push({ message: line });
      }
    });
    let stderr = '';
    child.stderr!.on('data', (chunk) => (stderr += chunk));
    try {
      await eventually(() => logs.some((l) => l.message === 'forwarder started') || child.exitCode !== null, 20_000, 'started');
      const started = logs.find((l) => l.message === 'forwarder started');
      assert.ok(started, `started (stderr: ${stderr})`);
      const base = `http://127.0.0.1:${started.port}`;
      await eventually(async () => (await fetch(`${base}/readyz`)).status === 200 && /is_leader 1/.test(await (await fetch(`${base}/metrics`)).text()), 20_000, 'leading and ready');
      assert.match(await (await fetch(`${base}/metrics`)).text(), /process_cpu_user_seconds_total/, 'default process metrics');

      env.kube.store.create('/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'from-main' } });
      const collector = new QueueCollector(env.messaging);
      await collector.until(() => collector.received['label-sync'].some((e) => e.key === 'from-main'), 20_000, 'the node event');
      assert.equal(env.kube.store.get({ resource: 'coordination.k8s.io/leases', namespace: 'default', name: 'claimflow-forwarder' })?.spec.holderIdentity, 'main-test');
    } finally {
      child.kill('SIGTERM');
    }
    assert.equal(await exited, 0);
    assert.ok(logs.some((l) => l.message === 'shutting down' && l.signal === 'SIGTERM'));
    assert.equal(env.kube.store.get({ resource: 'coordination.k8s.io/leases', namespace: 'default', name: 'claimflow-forwarder' })?.spec.holderIdentity ?? '', '', 'lease released');
  });
});
