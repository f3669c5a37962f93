/**
 * No secret in any log line or error message. Every function runs from source (as deployed, in its own
 * worker) with its logs captured, and is fed the failures that carry secrets nearby:
 * - a storage login failure (a wrong password), and a storage secret in Secrets Manager that is not JSON;
 * - a kubeconfig error: a kubeconfig secret (CLUSTERS → kubeconfigSecretArn) and a kubeconfig file that are
 *   not valid YAML, each with a token inside;
 * - a 401 from the Kubernetes API (a token it does not know);
 * through the SQS path (reconcile failures, retries, event recording), the scheduled paths (shared-volume
 * poll, node label resync, resync) and the stack's own warnings. Each failure must be logged — and neither
 * the password nor any token may appear in anything written.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { readFile, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { KubeClients } from '../../lib/kube/client.ts';
import { parseStorageSecret } from '../../lib/storage/credentials.ts';
import { eventually, startTestStack, type Stack } from '../support/stack.ts';
import { coreV1 } from '../../lib/kube/core-v1.ts';

const PASSWORD = 'pw-5ecret-Qx7-storage';
const TOKEN = 'tok-5ecret-Zr4-kubeconfig';
const API_TOKEN = 'tok-5ecret-Hm2-unknown-to-the-api';
const SECRETS = [PASSWORD, TOKEN, API_TOKEN];

/** A Secrets Manager stand-in: GetSecretValue of the secrets given (AWS JSON 1.1 protocol). */
async function fakeSecretsManager(secrets: Record<string, string>): Promise<{ url: string; reads: string[]; server: Server }> {
  const reads: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      const { SecretId } = JSON.parse(body || '{}') as { SecretId?: string };
      reads.push(String(SecretId));
      const value = SecretId === undefined ? undefined : secrets[SecretId];
      res.setHeader('content-type', 'application/x-amz-json-1.1');
      if (value === undefined) {
        res.statusCode = 400;
        res.end(JSON.stringify({ __type: 'ResourceNotFoundException', message: 'Secrets Manager can\'t find the specified secret.' }));
        return;
      }
      res.end(JSON.stringify({ ARN: SecretId, Name: SecretId, SecretString: value, VersionId: 'v1', VersionStages: ['AWSCURRENT'], CreatedDate: 1.7e9 }));
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, reads, server };
}

/** Starts a stack whose functions' output (and the stack's warnings) is captured. */
async function startCaptured(functionEnv: Record<string, string>): Promise<{ stack: Stack; output: Map<string, string>; all: () => string }> {
  const output = new Map<string, string>();
  const append = (name: string, text: string) => output.set(name, (output.get(name) ?? '') + text);
  const stack = await startTestStack({
    withForwarder: true,
    storageNodeAnnotation: true,
    functionEnv: {
      POWERTOOLS_LOG_LEVEL: 'DEBUG',
      BACKOFF_BASE_DELAY_MS: '100',
      BACKOFF_MAX_DELAY_MS: '1000',
      SHARED_VOLUME_SCHEDULE_INTERVAL_MS: '2500',
      SHARED_VOLUME_SCHEDULE_MARGIN_MS: '500',
      ...functionEnv,
    },
    functionOutput: (name, _stream, text) => append(name, text),
    warn: (message) => append('stack', `${message}\n`),
  });
  return { stack, output, all: () => [...output.values()].join('\n') };
}

/**
 * Feeds every function work that reaches the failing dependency, and runs the scheduled paths; what a
 * scheduled invocation returns or throws is output too (as Lambda would log it), under `invoke <function>`.
 */
async function feed(stack: Stack, output: Map<string, string>): Promise<void> {
  const kc = new KubeConfig();
  kc.loadFromFile(stack.kubeconfigPath);
  const core = kc.makeApiClient(CoreV1Api);
  // binder and provisioner: a claim of the default class, already handed to the provisioner (as the binder
  // would have annotated it) so the provisioner acts even while the binder fails; labelSync: a label on the storage node
  const handedOver = { 'volume.kubernetes.io/storage-provisioner': 'claimflow.io/local', 'volume.beta.kubernetes.io/storage-provisioner': 'claimflow.io/local' };
  await core.createNamespacedPersistentVolumeClaim({
    namespace: 'default',
    body: { metadata: { name: `claim-${Date.now()}`, annotations: handedOver }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'local', resources: { requests: { storage: '1Gi' } } } },
  });
  await core.createNamespacedPersistentVolumeClaim({
    namespace: 'default',
    body: { metadata: { name: `plain-${Date.now()}` }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } },
  });
  await core.patchNode({ name: 'local-node', body: { metadata: { labels: { 'topology.example.com/rack': `r${Date.now()}` } } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  const scheduled: Array<[string, unknown]> = [
    ['sharedVolume', { action: 'poll' }],
    ['labelSync', { source: 'claimflow.label-sync', 'detail-type': 'Node label resync' }],
    ['resync', { source: 'aws.events', 'detail-type': 'Scheduled Event' }],
  ];
  await Promise.all(scheduled.map(async ([fn, event]) => {
    let text: string;
    try {
      text = JSON.stringify(await stack.invoke(fn, event));
    } catch (error) {
      text = `${(error as Error).name}: ${(error as Error).message}\n${(error as Error).stack ?? ''}`;
    }
    output.set(`invoke ${fn}`, `${output.get(`invoke ${fn}`) ?? ''}${text}\n`);
  }));
}

function assertNoSecret(text: string, where: string): void {
  for (const secret of SECRETS) assert.ok(!text.includes(secret), `${where} must not contain ${secret}:\n${text.split('\n').filter((l) => l.includes(secret)).slice(0, 3).join('\n')}`);
}

describe('no secret in any log line or error message', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  after(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => {});
  });

  it('a storage login failure and a 401 from the Kubernetes API, through every function', async () => {
    const { stack, output, all } = await startCaptured({ STORAGE_API_PASSWORD: PASSWORD });
    cleanups.push(() => stack.stop());
    // each function's token is one the API does not know (functions read their kubeconfig on first use)
    for (const id of Object.values(stack.identities!.functions)) {
      const text = await readFile(id.kubeconfigPath, 'utf8');
      const token = /token: (\S+)/.exec(text)![1];
      await writeFile(id.kubeconfigPath, text.replace(token, API_TOKEN));
    }
    await feed(stack, output);
    const saw = (fn: string, pattern: RegExp) => pattern.test(output.get(fn) ?? '');
    await eventually(() => saw('binder', /HTTP-Code: 401/), 30_000, 'the binder logs the 401');
    await eventually(() => saw('provisioner', /auth\/login: 401 invalid credentials/), 30_000, 'the provisioner logs the login failure');
    await eventually(() => saw('labelSync', /auth\/login: 401 invalid credentials/), 30_000, 'label sync logs the login failure');
    await eventually(() => saw('sharedVolume', /auth\/login: 401 invalid credentials/) || saw('invoke sharedVolume', /auth\/login: 401 invalid credentials/), 30_000, 'the shared-volume poll reports the login failure');
    await eventually(() => saw('binder', /event not recorded|reconcile failed/), 30_000, 'the binder logs a failed reconcile');
    await stack.stop();
    for (const [fn, text] of output) assertNoSecret(text, `${fn}'s output`);
    assert.ok(all().length > 1000, 'there was output to check');
  });

  it('a kubeconfig error and a storage secret that is not JSON, both from Secrets Manager', async () => {
    const kubeconfigArn = 'arn:aws:secretsmanager:eu-west-1:000000000000:secret:claimflow/local/local-AbCdEf';
    const storageArn = 'arn:aws:secretsmanager:eu-west-1:000000000000:secret:storageos-api-AbCdEf';
    const sm = await fakeSecretsManager({
      // YAML that does not parse, a token on the line the parser would quote
      [kubeconfigArn]: `apiVersion: v1\nkind: Config\nusers:\n- name: claimflow\n  user:\n    token: ${TOKEN}: {\n`,
      // JSON.parse quotes the start of what it could not parse: the password
      [storageArn]: `{"username": "storageos", "password": "${PASSWORD}"`,
    });
    cleanups.push(() => new Promise((ok) => sm.server.close(ok)));
    const { stack, output } = await startCaptured({
      AWS_ENDPOINT_URL_SECRETS_MANAGER: sm.url,
      CLUSTERS: JSON.stringify({ local: { kubeconfigSecretArn: kubeconfigArn } }),
      STORAGE_API_SECRET_ARN: storageArn,
    });
    cleanups.push(() => stack.stop());
    await feed(stack, output);
    const saw = (fn: string, pattern: RegExp) => pattern.test(output.get(fn) ?? '');
    const invalidKubeconfig = /is not a valid kubeconfig: [^"]*at line 6/;
    await eventually(() => saw('binder', invalidKubeconfig), 30_000, 'the binder logs the kubeconfig error');
    // the provisioner reaches the cluster before the storage API: the kubeconfig error is what it meets
    await eventually(() => saw('provisioner', invalidKubeconfig), 30_000, 'the provisioner logs the kubeconfig error');
    await eventually(() => saw('labelSync', /storageos-api-AbCdEf is not JSON/), 30_000, 'label sync logs the storage secret error');
    await eventually(() => saw('sharedVolume', /storageos-api-AbCdEf is not JSON|not a valid kubeconfig/) || saw('invoke sharedVolume', /storageos-api-AbCdEf is not JSON|not a valid kubeconfig/), 30_000, 'the shared-volume poll reports a failure');
    assert.ok(sm.reads.includes(kubeconfigArn) && sm.reads.includes(storageArn), 'both secrets were read');
    await stack.stop();
    for (const [fn, text] of output) assertNoSecret(text, `${fn}'s output`);
  });

  it('the same errors as messages: kubeconfig files, the storage secret parser, an ApiException for a 401', async () => {
    const stack = await startTestStack({ storageApi: false });
    cleanups.push(() => stack.stop());
    const file = `${stack.identities!.functions.binder.kubeconfigPath}.broken`;
    await writeFile(file, `apiVersion: v1\nusers:\n- name: u\n  user:\n    token: ${TOKEN}: x\n  bad\n`);
    const messages: string[] = [];
    const capture = async (p: Promise<unknown>) => {
      try {
        await p;
        assert.fail('expected a failure');
      } catch (error) {
        messages.push(String(error), (error as Error).stack ?? '', JSON.stringify(error, Object.getOwnPropertyNames(error)));
        for (let c = (error as Error).cause; c; c = (c as Error).cause) messages.push(String(c));
      }
    };
    await capture(new KubeClients({ env: { KUBECONFIG: file } }).kubeConfig('local'));
    await capture(Promise.resolve().then(() => parseStorageSecret(`{"password": "${PASSWORD}" oops`, 'storage-secret')));
    const bad = (await readFile(stack.identities!.functions.binder.kubeconfigPath, 'utf8')).replace(/token: \S+/, `token: ${API_TOKEN}`);
    await writeFile(file, bad);
    const core = await coreV1(new KubeClients({ env: { KUBECONFIG: file } }), 'local');
    await capture(core.listNode());
    assert.match(messages[0], /is not a valid kubeconfig: bad indentation of a mapping entry at line 5/);
    assert.match(messages.join('\n'), /HTTP-Code: 401/);
    assertNoSecret(messages.join('\n'), 'the error messages');
  });
});
