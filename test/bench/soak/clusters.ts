/**
 * The soak's clusters. Cluster A is the stack's own emulator and control plane; cluster B is a second
 * emulator (same RBAC as shipped, the same function identities — one IAM role with an access entry in
 * each cluster) and a second storage control plane, seeded like the stack seeds A. Both forwarders run as
 * child processes (`node lib/forwarder/main.ts`, so they can be SIGKILLed) with their own cluster id.
 *
 * Every request either emulator authorizes is written to an audit log (user, verb, resource, namespace,
 * name, time): the emulator's `/_emulator/requests` only counts per verb and resource, so the log is taken
 * from its authorizer (`kubeApi.auth.authorize`), which sees every request with the user it runs as.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { formatTokenFile, startKubeApi, type KubeApi } from '../../../infra/local/kube-api/index.ts';
import { startStorageApi, type StorageApiHandle } from '../../../infra/local/storage-api/server.ts';
import {
  applyShippedRbac,
  forwarderServiceAccount,
  manifestsDir,
  planIdentities,
  readKustomization,
  requestServiceAccountToken,
  tokenKubeconfig,
  type IdentityPlan,
} from '../../../infra/local/stack/identities.ts';
import { seedLocalCluster, type SeededCluster } from '../../../infra/local/stack/local-cluster.ts';
import { STORAGE_API_CREDENTIALS, type Stack } from '../../../infra/local/stack/stack.ts';
import type { Wiring } from '../../../infra/local/stack/wiring.ts';
import { PROJECT_ROOT } from '../../../infra/build/bundle.ts';

/** One authorized request. */
export interface AuditEntry {
  t: number;
  user: string;
  verb: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
}

/** Records every request the emulator authorizes (see the module doc). */
export function auditRequests(api: KubeApi): AuditEntry[] {
  const log: AuditEntry[] = [];
  const auth = api.auth;
  if (!auth) throw new Error('the soak needs the emulator with authentication and RBAC on');
  const authorize = auth.authorize.bind(auth);
  auth.authorize = (attrs) => {
    const a = attrs as unknown as { user: { username: string }; verb: string; resource: string; subresource: string; namespace: string; name: string; resourceRequest: boolean };
    if (a.resourceRequest) log.push({ t: Date.now(), user: a.user.username, verb: a.verb, resource: a.resource, subresource: a.subresource, namespace: a.namespace, name: a.name });
    return authorize(attrs);
  };
  return log;
}

/** What the soak needs of one cluster. */
export interface SoakCluster {
  id: string;
  /** Prefix of every object name the workload creates in this cluster. */
  prefix: string;
  kubeApi: KubeApi;
  storage: Pick<StorageApiHandle, 'url' | 'faults' | 'state'>;
  adminKubeconfig: string;
  /** Each function's kubeconfig for this cluster (by serverless.yml name). */
  functionKubeconfigs: Record<string, string>;
  forwarderKubeconfig: string;
  audit: AuditEntry[];
  /** Usernames of the functions (their API requests are the budgeted ones). */
  functionUsers: Set<string>;
}

/** Cluster A: the stack's emulator and control plane (started with RBAC), plus the forwarder's token. */
export async function clusterFromStack(stack: Stack, id: string, prefix: string, stateDir: string): Promise<SoakCluster> {
  if (!stack.kubeApi || !stack.storageApi || !stack.identities) throw new Error('the soak needs the stack with its emulator, control plane and RBAC');
  const audit = auditRequests(stack.kubeApi);
  const forwarderKubeconfig = await forwarderKubeconfigFor(stack.kubeApi, stack.kubeconfigPath, join(stateDir, `kubeconfig-forwarder-${id}`));
  const functionKubeconfigs = Object.fromEntries(Object.entries(stack.identities.functions).map(([fn, i]) => [fn, i.kubeconfigPath]));
  const functionUsers = new Set(Object.values(stack.identities.functions).map((i) => i.username));
  return { id, prefix, kubeApi: stack.kubeApi, storage: stack.storageApi, adminKubeconfig: stack.kubeconfigPath, functionKubeconfigs, forwarderKubeconfig, audit, functionUsers };
}

async function forwarderKubeconfigFor(api: KubeApi, adminKubeconfig: string, path: string): Promise<string> {
  const sa = forwarderServiceAccount(await readKustomization(manifestsDir(PROJECT_ROOT)));
  const admin = new KubeConfig();
  admin.loadFromFile(adminKubeconfig);
  const token = await requestServiceAccountToken(admin, sa.namespace, sa.name, 24 * 3600);
  await writeFile(path, tokenKubeconfig(api.url, token, `system:serviceaccount:${sa.namespace}:${sa.name}`, api.caCert), { mode: 0o600 });
  return path;
}

/** Cluster B: a second emulator and control plane, seeded and secured as the stack does cluster A. */
export async function startSecondCluster(options: { id: string; prefix: string; wiring: Wiring; stackName: string; stateDir: string }): Promise<SoakCluster & { stop(): Promise<void> }> {
  const dir = join(options.stateDir, `cluster-${options.id}`);
  await mkdir(dir, { recursive: true });
  const plan: IdentityPlan = planIdentities(options.wiring, options.stackName);
  const tokenAuthFile = join(dir, 'tokens.csv');
  await writeFile(tokenAuthFile, formatTokenFile(plan.tokens), { mode: 0o600 });
  const kubeApi = await startKubeApi({ port: 0, auth: { tokenAuthFile, authorizationMode: 'RBAC' } });
  const adminKubeconfig = join(dir, 'kubeconfig');
  await kubeApi.writeKubeconfig(adminKubeconfig, plan.admin.token);
  await applyShippedRbac(kubeApi.store, manifestsDir(PROJECT_ROOT));
  const audit = auditRequests(kubeApi);
  const volumeRoot = join(dir, 'volumes');
  await rm(volumeRoot, { recursive: true, force: true });
  await mkdir(volumeRoot, { recursive: true });
  const storage = await startStorageApi({ port: 0, volumeRoot, ...STORAGE_API_CREDENTIALS });
  let seeded: SeededCluster | undefined;
  try {
    seeded = await seedLocalCluster({ kubeconfigPath: adminKubeconfig, store: kubeApi.store, storage: storage.state });
    const functionKubeconfigs: Record<string, string> = {};
    for (const f of plan.functions) {
      const path = join(dir, `kubeconfig-${f.function}`);
      await writeFile(path, tokenKubeconfig(kubeApi.url, f.token, f.username, kubeApi.caCert), { mode: 0o600 });
      functionKubeconfigs[f.function] = path;
    }
    const forwarderKubeconfig = await forwarderKubeconfigFor(kubeApi, adminKubeconfig, join(dir, 'kubeconfig-forwarder'));
    const s = seeded;
    return {
      id: options.id,
      prefix: options.prefix,
      kubeApi,
      storage,
      adminKubeconfig,
      functionKubeconfigs,
      forwarderKubeconfig,
      audit,
      functionUsers: new Set(plan.functions.map((f) => f.username)),
      async stop() {
        s.stop();
        await storage.stop();
        await kubeApi.stop();
      },
    };
  } catch (error) {
    seeded?.stop();
    await storage.stop();
    await kubeApi.stop();
    throw error;
  }
}

/** A free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', () => ok()));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((ok) => server.close(() => ok()));
  return port;
}

/** A forwarder run as a child process (`node lib/forwarder/main.ts`), restartable and SIGKILLable. */
export class ForwarderProcess {
  readonly cluster: string;
  readonly #env: Record<string, string>;
  readonly #log: (text: string) => void;
  #child: ChildProcess | undefined;
  #port = 0;
  starts = 0;

  constructor(options: { cluster: string; kubeconfig: string; stack: Stack; log?: (text: string) => void }) {
    this.cluster = options.cluster;
    this.#log = options.log ?? (() => {});
    const e = options.stack.env;
    this.#env = {
      PATH: process.env.PATH ?? '',
      CLUSTER_ID: options.cluster,
      EVENTS_TOPIC_ARN: options.stack.topicArn,
      CACHE_TABLE: options.stack.tables.cache,
      CONTROL_TABLE: options.stack.tables.control,
      KUBECONFIG: options.kubeconfig,
      LEADER_ELECT: 'false',
      HEARTBEAT_INTERVAL: '0',
      // the topic's subscriptions read every 15 s (1 minute by default), so that the plan's spell of failing
      // subscription reads (faults.ts) fails some of them in the short runs too
      SUBSCRIPTIONS_REFRESH: '15s',
      POWERTOOLS_LOG_LEVEL: 'WARN',
      POWERTOOLS_METRICS_DISABLED: 'true',
      AWS_REGION: e.AWS_REGION,
      AWS_ACCESS_KEY_ID: e.AWS_ACCESS_KEY_ID,
      AWS_SECRET_ACCESS_KEY: e.AWS_SECRET_ACCESS_KEY,
      AWS_ENDPOINT_URL_SNS: e.AWS_ENDPOINT_URL_SNS,
      AWS_ENDPOINT_URL_DYNAMODB: e.AWS_ENDPOINT_URL_DYNAMODB,
    };
  }

  get running(): boolean {
    return this.#child !== undefined && this.#child.exitCode === null && this.#child.signalCode === null;
  }

  /** Starts the process and waits until it is ready (every kind listed into the cache), up to `timeoutMs`. */
  async start(timeoutMs = 30_000): Promise<void> {
    this.#port = await freePort();
    const child = spawn(process.execPath, [join(PROJECT_ROOT, 'lib/forwarder/main.ts')], {
      env: { ...this.#env, HTTP_PORT: String(this.#port), POD_NAME: `forwarder-${this.cluster}-${++this.starts}` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.setEncoding('utf8').on('data', (t: string) => this.#log(`[forwarder ${this.cluster}] ${t}`));
    child.stderr!.setEncoding('utf8').on('data', (t: string) => this.#log(`[forwarder ${this.cluster}] ${t}`));
    this.#child = child;
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (!this.running) throw new Error(`forwarder ${this.cluster} exited (${child.exitCode ?? child.signalCode}) while starting`);
      const ok = await fetch(`http://127.0.0.1:${this.#port}/readyz`).then((r) => r.ok, () => false);
      if (ok) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`forwarder ${this.cluster} not ready after ${timeoutMs} ms`);
  }

  /** SIGKILL: no flush, no lease release, watches dropped mid-stream. */
  kill(): void {
    this.#child?.kill('SIGKILL');
  }

  /** SIGTERM and wait for the graceful exit. */
  async stop(): Promise<void> {
    const child = this.#child;
    if (!child || !this.running) return;
    const exited = new Promise<void>((ok) => child.once('exit', () => ok()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
}
