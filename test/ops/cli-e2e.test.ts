/**
 * `claimflow` end to end on the local stack (fauxqs, dynalite, the emulator, the forwarder): the binder
 * queue is served by the real reconcile runtime (createSqsHandler) around a test controller that fails the
 * keys it is told to. The CLI runs in process against the stack's `stack.json`, as `npx claimflow` would
 * (one test runs the bin itself):
 * - `status` is healthy (exit 0) with the forwarder's heartbeat, and flips to 1 when a DLQ fills;
 * - a poison message shows in `dlq list` / `dlq show` with the runtime's reason, and `dlq redrive` brings it
 *   back to the queue exactly once (fauxqs has no StartMessageMoveTask: the copy path, detected);
 * - a parked key shows in `backoff` with its failures and last error, and `retry --wait` reconciles it;
 * - a given-up key makes `status` exit 1; a retry gets one attempt (fails again: exit 1), then reconciles.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { createSqsHandler, type SqsHandler } from '../../lib/runtime/handler.ts';
import { MESSAGE_VERSION, messageAttributes, messageDeduplicationId, messageGroupId, type ClusterEvent } from '../../lib/runtime/message.ts';
import type { Controller, ReconcileRequest } from '../../lib/runtime/reconcile.ts';
import { BackoffStore } from '../../lib/state/backoff.ts';
import { main } from '../../lib/ops/cli.ts';
import { CapturedMetrics, silentLogger } from '../runtime/harness.ts';
import { eventually, startTestStack, type Stack } from '../support/stack.ts';

const execFileAsync = promisify(execFile);
const POISON_BODY = '{"v": 1, "cluster": "local", "kind": "PersistentVolumeClaim"'; // cut short: not JSON

/** Runs the CLI in process; resolves with its exit code and output. */
async function cli(stackFile: string, ...argv: string[]): Promise<{ code: number; stdout: string; stderr: string; json: any }> {
  let stdout = '';
  let stderr = '';
  const code = await main([...argv, '--stack-file', stackFile], {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
  });
  let json: any;
  if (argv.includes('--json')) json = JSON.parse(stdout);
  return { code, stdout, stderr, json };
}

describe('claimflow CLI on the local stack', () => {
  let stack: Stack;
  let stateDir: string;
  let stackFile: string;
  const failing = new Set<string>();
  const reconciled: ReconcileRequest[] = [];
  /** Poison bodies the queue delivered after the first (which the runtime sent to the DLQ). */
  const redelivered: string[] = [];
  let poisoned = false;
  let inner: SqsHandler | undefined;
  let built!: () => void;
  const ready = new Promise<void>((resolve) => (built = resolve));

  const controller: Controller = {
    name: 'binder',
    kinds: ['PersistentVolumeClaim', 'PersistentVolume', 'StorageClass'],
    async reconcile(request) {
      reconciled.push(request);
      if (failing.has(request.key)) throw new Error(`storage backend refused ${request.key}`);
    },
  };

  /** The binder function: poison bodies after the first are counted and acknowledged, the rest go to the runtime. */
  const binder = async (event: SQSEvent, context: any): Promise<SQSBatchResponse> => {
    await ready;
    const again = event.Records.filter((r) => poisoned && r.body === POISON_BODY);
    for (const r of again) redelivered.push(r.body);
    const rest = event.Records.filter((r) => !again.includes(r));
    if (event.Records.some((r) => r.body === POISON_BODY)) poisoned = true;
    return rest.length ? inner!({ Records: rest }, context) : { batchItemFailures: [] };
  };

  before(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'claimflow-ops-'));
    stackFile = join(stateDir, 'stack.json');
    stack = await startTestStack({ functions: { binder }, withForwarder: true, stateDir });
    inner = createSqsHandler(controller, {
      doc: stack.dynamodb.doc,
      tables: stack.tables,
      sqs: stack.sqs.client,
      queueUrl: stack.queues.BinderQueue.url,
      dlqUrl: stack.queues.BinderDlq.url,
      // the first failure waits 2 minutes: longer than a message may stay hidden, so the key is parked
      limiter: { baseDelayMs: 120_000, maxDelayMs: 120_000 },
      maxReceiveCount: 5,
      logger: silentLogger(),
      metrics: new CapturedMetrics(),
      recorderFor: () => ({ event: async () => {}, eventf: async () => {} }),
    });
    built();
  });
  after(async () => {
    await stack?.stop();
    await rm(stateDir, { recursive: true, force: true });
  });

  const send = async (event: ClusterEvent) =>
    stack.sqs.client.send(
      new SendMessageCommand({
        QueueUrl: stack.queues.BinderQueue.url,
        MessageBody: JSON.stringify(event),
        MessageGroupId: messageGroupId(event.cluster, event.kind, event.key),
        MessageDeduplicationId: messageDeduplicationId(event, String(Date.now())),
        MessageAttributes: messageAttributes(event),
      }),
    );
  const requeue = (key: string): ClusterEvent => ({
    v: MESSAGE_VERSION,
    cluster: 'local',
    kind: 'PersistentVolumeClaim',
    type: 'REQUEUE',
    key,
    uid: `uid-${key}`,
    resourceVersion: '7',
    observedAt: new Date().toISOString(),
    controller: 'binder',
  });

  test('status: healthy, with the forwarder leading and every kind listed (exit 0)', async () => {
    // the leader's heartbeat reports each kind's first bookmark within a fraction of a second
    await eventually(async () => (await cli(stackFile, 'status', '--json')).json.clusters[0]?.kinds.every((k: any) => k.bookmarkAgeSeconds !== null), 5000, 'bookmarks in the heartbeat');
    const { code, json } = await cli(stackFile, 'status', '--json');
    assert.equal(code, 0, JSON.stringify(json.attention));
    assert.equal(json.healthy, true);
    assert.deepEqual(json.controllers.map((c: any) => c.controller), ['binder', 'provisioner', 'shared-volume', 'label-sync']);
    const binderRow = json.controllers[0];
    assert.equal(binderRow.dlq.visible, 0);
    assert.equal(binderRow.oldestMessageAgeSeconds !== null, true, 'fauxqs tells the oldest message age without receiving');
    assert.equal(json.queueAgeSource, 'fauxqs');
    const [cluster] = json.clusters;
    assert.equal(cluster.cluster, 'local');
    assert.equal(cluster.forwarder.leading, true);
    assert.ok(cluster.forwarder.heartbeatAgeSeconds < 60);
    assert.ok(cluster.kinds.length >= 5 && cluster.kinds.every((k: any) => k.listComplete), 'every kind listed');

    const human = await cli(stackFile, 'status');
    assert.equal(human.code, 0);
    assert.match(human.stdout, /CONTROLLER +QUEUE +IN FLIGHT +DLQ/);
    assert.match(human.stdout, /^all well$/m);
  });

  test('a poison message: in `dlq list` with its reason, `status` exits 1, `dlq redrive` brings it back exactly once', async () => {
    await stack.sqs.client.send(
      new SendMessageCommand({ QueueUrl: stack.queues.BinderQueue.url, MessageBody: POISON_BODY, MessageGroupId: 'local:PersistentVolumeClaim:default/poison', MessageDeduplicationId: 'poison-1' }),
    );
    await eventually(async () => (await cli(stackFile, 'status', '--json')).json.controllers[0].dlq.visible === 1, 20_000, 'the poison message in the DLQ');

    const status = await cli(stackFile, 'status', '--json');
    assert.equal(status.code, 1);
    assert.deepEqual(status.json.attention.map((f: any) => [f.check, f.subject]), [['dlq', 'binder']]);
    assert.match((await cli(stackFile, 'status')).stdout, /needs attention:\n {2}! binder: DLQ claimflow-local-binder-dlq\.fifo holds 1 message/);

    const list = await cli(stackFile, 'dlq', 'list', 'binder', '--json');
    assert.equal(list.code, 0);
    assert.equal(list.json.messages.length, 1);
    const [message] = list.json.messages;
    assert.equal(message.cause, 'poison');
    assert.match(message.reason, /^body is not JSON/);
    assert.equal(message.body, POISON_BODY);
    assert.equal(message.groupId, 'local:PersistentVolumeClaim:default/poison');
    const human = await cli(stackFile, 'dlq', 'list', 'binder');
    assert.match(human.stdout, /poison: body is not JSON/);
    const shown = await cli(stackFile, 'dlq', 'show', 'binder', message.messageId);
    assert.match(shown.stdout, new RegExp(`message ${message.messageId}\\n`));
    assert.match(shown.stdout, /why: +poison message — body is not JSON/);
    assert.match(shown.stdout, /logged as: +messageId \S+/);
    // listing does not consume: it is still there
    assert.equal((await cli(stackFile, 'dlq', 'list', 'binder', '--json')).json.messages.length, 1);

    const redriven = await cli(stackFile, 'dlq', 'redrive', 'binder', '--json');
    assert.equal(redriven.code, 0, redriven.stderr);
    assert.equal(redriven.json.moved, 1);
    assert.equal(redriven.json.method, 'copy');
    assert.match(redriven.json.fallbackReason, /StartMessageMoveTask not supported/);
    await eventually(() => redelivered.length >= 1, 20_000, 'the redriven message delivered');
    await new Promise((resolve) => setTimeout(resolve, 1500)); // a duplicate would arrive by now
    assert.deepEqual(redelivered, [POISON_BODY], 'delivered exactly once');
    const after = await cli(stackFile, 'status', '--json');
    assert.equal(after.json.controllers[0].dlq.visible + after.json.controllers[0].dlq.inFlight, 0);
    assert.equal(after.code, 0, JSON.stringify(after.json.attention));
  });

  test('a parked key shows in `backoff`; `retry --wait` reconciles it', async () => {
    failing.add('default/parked');
    await send(requeue('default/parked'));
    await eventually(async () => (await cli(stackFile, 'backoff', '--json')).json.some((e: any) => e.key === 'default/parked' && e.state === 'parked'), 20_000, 'the key parked');

    const listed = await cli(stackFile, 'backoff', '--controller', 'binder', '--json');
    const entry = listed.json.find((e: any) => e.key === 'default/parked');
    assert.deepEqual(
      { controller: entry.controller, cluster: entry.cluster, kind: entry.kind, state: entry.state, failures: entry.failures },
      { controller: 'binder', cluster: 'local', kind: 'PersistentVolumeClaim', state: 'parked', failures: 1 },
    );
    assert.match(entry.lastError, /storage backend refused default\/parked/);
    assert.ok(entry.nextAttemptAt > Date.now() + 60_000, 'due in about two minutes');
    const human = await cli(stackFile, 'backoff');
    assert.match(human.stdout, /binder +local +PersistentVolumeClaim +default\/parked +parked +1 +in 1m\d\ds +Error: storage backend refused|binder +local +PersistentVolumeClaim +default\/parked +parked +1 +in 1m\d\ds +storage backend refused/);
    const status = await cli(stackFile, 'status', '--json');
    assert.equal(status.json.controllers[0].parked, 1);
    assert.equal(status.code, 0, 'one parked key is no cause for attention');

    failing.delete('default/parked');
    const before = reconciled.length;
    const retried = await cli(stackFile, 'retry', 'binder', 'pvc', 'default/parked', '--wait', '--timeout', '20s', '--json');
    assert.equal(retried.code, 0, retried.stdout + retried.stderr);
    assert.equal(retried.json.outcome, 'reconciled');
    assert.equal(retried.json.cluster, 'local', 'the cluster found from the record');
    assert.deepEqual(retried.json.before, { failures: 1, givenUp: false, parked: true, lastError: entry.lastError });
    const request = reconciled.slice(before).find((r) => r.key === 'default/parked');
    assert.equal(request?.event.type, 'REQUEUE');
    assert.equal(request?.event.uid, 'uid-default/parked', 'the REQUEUE carries the record’s object reference');
    assert.equal((await cli(stackFile, 'backoff', '--json')).json.some((e: any) => e.key === 'default/parked'), false);
  });

  test('a given-up key makes status exit 1; retry gets one attempt, then reconciles it', async () => {
    const id = { controller: 'binder', cluster: 'local', kind: 'PersistentVolumeClaim', key: 'default/gave-up' };
    await new BackoffStore({ doc: stack.dynamodb.doc, table: stack.tables.control }).recordFailure(id, 'quota exceeded', { uid: 'u-g', resourceVersion: '3' }, undefined, 1);
    const status = await cli(stackFile, 'status', '--json');
    assert.equal(status.code, 1);
    assert.deepEqual(status.json.attention.map((f: any) => f.check), ['given-up']);
    const listed = await cli(stackFile, 'backoff', '--state', 'given-up', '--json');
    assert.deepEqual(listed.json.map((e: any) => [e.key, e.failures, e.nextAttemptAt, e.lastError]), [['default/gave-up', 1, null, 'quota exceeded']]);

    failing.add('default/gave-up');
    const again = await cli(stackFile, 'retry', 'binder', 'PersistentVolumeClaim', 'default/gave-up', '--cluster', 'local', '--wait', '--timeout', '20s');
    assert.equal(again.code, 1);
    assert.match(again.stdout, /failed again \(2 failures\): Error: storage backend refused default\/gave-up|failed again \(2 failures\): storage backend refused default\/gave-up/);
    failing.delete('default/gave-up');
    const fixed = await cli(stackFile, 'retry', 'binder', 'pvc', 'default/gave-up', '--wait', '--timeout', '20s');
    assert.equal(fixed.code, 0, fixed.stdout);
    assert.match(fixed.stdout, /^reconciled$/m);
    assert.equal((await cli(stackFile, 'status')).code, 0);
  });

  test('the bin runs the same CLI (exit codes included); usage errors exit 2', async () => {
    const bin = new URL('../../bin/claimflow.js', import.meta.url).pathname;
    const { stdout } = await execFileAsync(process.execPath, [bin, 'status', '--json', '--stack-file', stackFile]);
    assert.equal(JSON.parse(stdout).healthy, true);
    await assert.rejects(execFileAsync(process.execPath, [bin, 'dlq', 'list', 'nope', '--stack-file', stackFile]), (error: any) => {
      assert.equal(error.code, 2);
      assert.match(error.stderr, /unknown controller "nope"/);
      return true;
    });
    const missing = await cli(join(stateDir, 'absent.json'), 'status');
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /no local stack: .*absent\.json does not exist/);
  });
});
