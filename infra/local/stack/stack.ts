/**
 * The local stack: the stand-ins (Kubernetes API emulator, fauxqs, dynalite, the storage control
 * plane), the topic/queues/subscriptions/tables of serverless.yml created on them, and each function
 * run as Lambda runs it (its SQS event source mapping and its schedules).
 *
 * Everything is derived from the template compiled from serverless.yml ({@link compileTemplate}); the
 * function code is the same code that is deployed (the TypeScript entry, in a worker thread with the
 * function's own environment), or, for tests and benchmarks, handlers they register themselves.
 *
 * @example
 * const stack = await startStack({ functions: { binder: async (event) => ({ batchItemFailures: [] }) } });
 * // ... write to stack.kubeApi, watch the handler run ...
 * await stack.stop();
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SNSClient } from '@aws-sdk/client-sns';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { Context } from 'aws-lambda';
import { Logger } from '@aws-lambda-powertools/logger';
import { KubeConfig } from '@kubernetes/client-node';
import { startFauxqs, type FauxqsServer } from 'fauxqs';
import type { Forwarder, ForwarderOptions } from '../../../lib/forwarder/forwarder.ts';
import type { KubeApi, KubeApiOptions } from '../kube-api/index.ts';
import type { StorageApiHandle } from '../storage-api/server.ts';
import { PROJECT_ROOT } from '../../build/bundle.ts';
import { kebabCase } from '../../build/functions.ts';
import { createDocumentClient, type DocumentClient } from '../../../lib/state/client.ts';
import { startAwsStandInsProcess } from '../fault-proxy/stand-ins-process.ts';
import { SqsEventSource, invokeWithTimeout, type BatchOutcome, type SqsHandler } from './event-source.ts';
import { FunctionWorker } from './function-worker.ts';
import { NODE_ID_ANNOTATION, STORAGEOS_DRIVER } from '../../../lib/label-sync/predicate.ts';
import { resolveIntrinsics } from './intrinsics.ts';
import { createResources, type LocalQueue, type LocalResources } from './resources.ts';
import { forgetCluster } from './cluster-state.ts';
import { checkParams, knownParams, ParamError } from './params.ts';
import { Scheduler, type ScheduledTarget } from './schedule.ts';
import { seedLocalCluster } from './local-cluster.ts';
import { listenDynalite, stopDynalite } from '../dynalite.ts';
import { applyShippedRbac, forwarderServiceAccount, manifestsDir, planIdentities, requestServiceAccountToken, tokenKubeconfig, type IdentityPlan } from './identities.ts';
import type { KubeObject } from '../kube-api/types.ts';
import { compileTemplate, type CfnTemplate } from './template.ts';
import { readWiring, type FunctionDef, type Wiring } from './wiring.ts';
import { sdkClientConfig, withCachedHandlers, withFastConfig } from '../../../lib/runtime/sdk-client.ts';

/** Any async Lambda handler (SQS batches, scheduled events). */
export type LambdaHandler = (event: any, context: Context) => Promise<any>;

/** How long startStack waits for the forwarder's initial list of every kind. */
const FORWARDER_SYNC_TIMEOUT_MS = 30_000;

/** How long one component may take to stop before the stack moves on (and says so). */
const STOP_STEP_TIMEOUT_MS = 15_000;

/**
 * On stop, how long SQS batches already running may take to settle before their functions are shut down.
 * A scheduled run is not waited for: the shared-volume poll runs for most of a minute and is simply ended
 * (its next start polls again), as a Lambda sandbox is when its function is removed.
 */
const STOP_GRACE_MS = 2_000;

/** The embedded storage control plane's user. */
export const STORAGE_API_CREDENTIALS = { username: 'storageos', password: 'storageos' } as const;

/** Static credentials the stand-ins accept. */
export const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' } as const;

/** `awsEndpoint` meaning a real account: no endpoint override, the default credential chain. */
export const REAL_AWS = 'aws';

/** Host variables a function keeps on real AWS: how the default credential chain finds credentials. */
const CREDENTIAL_CHAIN_ENV = /^AWS_(PROFILE|ACCESS_KEY_ID|SECRET_ACCESS_KEY|SESSION_TOKEN|CONFIG_FILE|SHARED_CREDENTIALS_FILE|SDK_LOAD_CONFIG|ROLE_ARN|ROLE_SESSION_NAME|WEB_IDENTITY_TOKEN_FILE|CONTAINER_CREDENTIALS_FULL_URI|CONTAINER_CREDENTIALS_RELATIVE_URI|CONTAINER_AUTHORIZATION_TOKEN|EC2_METADATA_DISABLED|STS_REGIONAL_ENDPOINTS)$/;

/** `awsEndpoint` checked: `aws`, or an http(s) URL without a trailing slash. */
function parseAwsEndpoint(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (value === REAL_AWS) return REAL_AWS;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new StackStartError(`awsEndpoint ${JSON.stringify(value)}: expected an http(s) URL (e.g. http://localhost:4566) or "${REAL_AWS}" for a real account`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new StackStartError(`awsEndpoint ${value}: expected an http(s) URL`);
  return value.replace(/\/+$/, '');
}

export interface StackOptions {
  /** Project root (serverless.yml, functions/). */
  root?: string;
  /** serverless.yml stage (default `local`). */
  stage?: string;
  /** Stage parameters over serverless.yml's `params` (e.g. `{ resyncSchedule: 'rate(5 minutes)' }`). */
  params?: Record<string, string>;
  region?: string;
  /**
   * Where SQS, SNS and DynamoDB are. Absent: the embedded fauxqs and dynalite, fresh at every start. A URL
   * (`http://localhost:4566`, LocalStack's edge port): that AWS-compatible endpoint serves all three, with
   * the static credentials `local`/`local`. `aws` ({@link REAL_AWS}): no endpoint override, the SDK's default
   * credential chain and `region` — a real account. Either way the topic, queues, subscriptions and tables
   * are ensured there (created when missing, reused when present, never deleted, see resources.ts), and on
   * the emulator (a new cluster at every start) the previous run's state of the same cluster id is
   * forgotten (cluster-state.ts).
   */
  awsEndpoint?: string;
  /**
   * Without `awsEndpoint`, where fauxqs and dynalite run: `embedded` (default) in this process; `process` in
   * a child process of their own (fault-proxy/stand-ins-process.ts), reached on their own ports, so this
   * process's CPU goes to the emulator, the forwarder and the functions (the benchmarks; on AWS the queues
   * and tables are not in the functions' process either). Otherwise the same: fresh at every start, nothing
   * but the endpoints differs, and gone on stop (the child also exits if this process dies).
   */
  awsStandIns?: 'embedded' | 'process';
  /**
   * Handlers by serverless.yml function name, run in process: only these functions run. Without it,
   * every function whose `functions/<name>.ts` exists runs from source in its own worker thread.
   */
  functions?: Record<string, LambdaHandler>;
  /**
   * A folder of bundles as `npm run build` makes them (`<dir>/<name>/index.mjs`, infra/build/bundle.ts
   * `outDir`): each function runs from its bundle, the code that is deployed, instead of from source.
   */
  functionBundles?: string;
  /** A real cluster's kubeconfig: no emulator is started, functions and forwarder use this file. */
  kubeconfig?: string;
  /** Start the Kubernetes API emulator (default: true unless `kubeconfig` is given). */
  kubeApi?: boolean;
  /** Options for `startKubeApi` (e.g. `{ watchHistory: 50 }`). */
  kubeApiOptions?: KubeApiOptions;
  /**
   * On the emulator, authenticate and authorize with RBAC (default true): `infra/k8s` RBAC applied as shipped,
   * the forwarder on its ServiceAccount's token, each function as its EKS access entry maps it, the user's
   * kubeconfig an admin one (identities.ts). `false`: every request is allowed, as before.
   */
  rbac?: boolean;
  /** Start the embedded storage control plane when its module exists (default true). */
  storageApi?: boolean;
  /**
   * With the emulator and the control plane both started: create the Node `local-node` (also a storage
   * node, like every Node created later) and the default StorageClass `local` (default true).
   */
  seedCluster?: boolean;
  /**
   * With the seed: give `local-node` the CSI driver annotation the StorageOS node registrar sets
   * (`csi.volume.kubernetes.io/nodeid` = `{"csi.storageos.com": "<storage node id>"}`), so label sync treats
   * it as a storage node and a label change on it is synced (default false; `npm start` turns it on).
   */
  storageNodeAnnotation?: boolean;
  /** Run the forwarder against the cluster (default false; `npm start` turns it on). */
  withForwarder?: boolean;
  /** Options for `startForwarder` over the stack's defaults (single replica, no leader election). */
  forwarderOptions?: Partial<ForwarderOptions>;
  /** Forwarder log level (default WARN). */
  forwarderLogLevel?: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' | 'SILENT';
  /** Extra environment for every function (e.g. `POWERTOOLS_LOG_LEVEL`), over the template's. */
  functionEnv?: Record<string, string>;
  /** Receives the logs (stdout/stderr) of functions run from source, instead of the process's streams. */
  functionOutput?: (functionName: string, stream: 'stdout' | 'stderr', text: string) => void;
  /** Arm the EventBridge schedules (default true). */
  schedules?: boolean;
  /** Divides schedule delays (tests). */
  scheduleSpeedup?: number;
  /** Batches in flight per event source mapping (default: the mapping's MaximumConcurrency, else 4). */
  maxConcurrency?: number;
  /** Where `kubeconfig` and `stack.json` are written (default: a temp dir, removed on stop). */
  stateDir?: string;
  /** Observes every settled batch. */
  onSettled?: (functionName: string, outcome: BatchOutcome) => void;
  /** Observes every schedule firing. */
  onScheduled?: (rule: string, outcome: { event: unknown; result?: unknown; error?: unknown }) => void;
  /** Warnings (default console.warn). */
  warn?: (message: string) => void;
}

export interface Stack {
  /** The emulator, when started. */
  kubeApi?: KubeApi;
  /**
   * The user's kubeconfig: an admin one on the emulator (`system:masters`); the given file against a real
   * cluster (then also what the functions and the forwarder use).
   */
  kubeconfigPath: string;
  /** With RBAC on the emulator: who each component is, and its kubeconfig. */
  identities?: StackIdentities;
  sqs: { endpoint: string; client: SQSClient };
  sns: { endpoint: string; client: SNSClient };
  dynamodb: { endpoint: string; client: DynamoDBClient; doc: DocumentClient };
  /** The embedded control plane: URL, fault injection, state (volumes, nodes) and request counts. */
  storageApi?: Pick<StorageApiHandle, 'url' | 'faults' | 'state' | 'requests' | 'auth'>;
  /** The embedded SQS/SNS stand-in; absent with `awsEndpoint` or `awsStandIns: 'process'`. */
  fauxqs?: FauxqsServer;
  /** The process id of the AWS stand-ins with `awsStandIns: 'process'` (benches read its CPU time). */
  awsStandInsPid?: number;
  /** `awsEndpoint` as given (a URL, or `aws`); absent on the embedded stand-ins. */
  awsEndpoint?: string;
  template: CfnTemplate;
  wiring: Wiring;
  resources: LocalResources;
  /** Environment every function shares (template values resolved, plus the AWS endpoint variables). */
  env: Record<string, string>;
  /** Each function's whole environment. */
  functionEnv: Record<string, Record<string, string>>;
  /** Queues by logical id (`BinderQueue`, `BinderDlq`, ...). */
  queues: Record<string, LocalQueue>;
  topicArn: string;
  tables: { cache: string; control: string };
  /** Running event source mappings by function name. */
  eventSources: Record<string, SqsEventSource>;
  scheduler?: Scheduler;
  forwarder?: Forwarder;
  /** Invokes a function directly (as `aws lambda invoke` would). */
  invoke(functionName: string, event: unknown): Promise<unknown>;
  stop(): Promise<void>;
}

/** The identities the local stack runs its components under (see identities.ts). */
export interface StackIdentities {
  admin: { username: string; kubeconfigPath: string };
  forwarder?: { username: string; namespace: string; serviceAccount: string; kubeconfigPath: string };
  /** Functions with an EKS access entry, by serverless.yml name. */
  functions: Record<string, { username: string; groups: string[]; kubeconfigPath: string }>;
}

/** Lifetime of the forwarder's ServiceAccount token (a long-running `npm start` outlives the 1 h default). */
const FORWARDER_TOKEN_SECONDS = 365 * 24 * 3600;

/** Raised when the stack cannot be started as asked. */
export class StackStartError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'StackStartError';
  }
}

/** Imports an optional module; undefined when the module itself is absent (not when it fails inside). */
async function importOptional<T>(path: string): Promise<T | undefined> {
  if (!existsSync(path)) return undefined;
  return (await import(path)) as T;
}

function stringEnv(values: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.entries(values).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]));
}

/**
 * Starts the local stack.
 *
 * @example
 * const stack = await startStack({ stateDir: '.local', withForwarder: true });
 */
export async function startStack(options: StackOptions = {}): Promise<Stack> {
  const root = options.root ?? PROJECT_ROOT;
  const stage = options.stage ?? 'local';
  const region = options.region ?? 'eu-west-1';
  const warn = options.warn ?? ((m: string) => console.warn(m));
  const cleanups: { name: string; stop: () => Promise<unknown> }[] = [];
  const stopAll = async (): Promise<void> => {
    const steps = cleanups.splice(0).reverse();
    for (const step of steps) {
      let timer: NodeJS.Timeout | undefined;
      const slow = new Promise<'slow'>((ok) => {
        timer = setTimeout(() => ok('slow'), STOP_STEP_TIMEOUT_MS);
      });
      try {
        const outcome = await Promise.race([step.stop(), slow]);
        if (outcome === 'slow') warn(`stopping ${step.name}: still running after ${STOP_STEP_TIMEOUT_MS} ms; moving on`);
      } catch (e) {
        warn(`stopping ${step.name}: ${(e as Error).message}`);
      } finally {
        clearTimeout(timer);
      }
    }
  };
  const onStop = (name: string, stop: () => Promise<unknown>): void => {
    cleanups.push({ name, stop });
  };

  try {
    const awsEndpoint = parseAwsEndpoint(options.awsEndpoint);
    if (options.params) {
      try {
        checkParams(options.params, await knownParams(root));
      } catch (error) {
        if (error instanceof ParamError) throw new StackStartError(error.message, { cause: error });
        throw error;
      }
    }
    const template = await compileTemplate({ root, stage, region, params: options.params });
    const wiring = readWiring(template);

    const stateDir = options.stateDir ? resolve(options.stateDir) : await mkdtemp(join(tmpdir(), 'claimflow-stack-'));
    await mkdir(stateDir, { recursive: true });
    if (!options.stateDir) onStop('state dir', () => rm(stateDir, { recursive: true, force: true }));

    // --- SQS/SNS/DynamoDB: the stand-ins, or the endpoint given (undefined endpoint: real AWS)
    let fauxqs: FauxqsServer | undefined;
    let sqsEndpoint: string | undefined;
    let dynamoEndpoint: string | undefined;
    let awsStandInsPid: number | undefined;
    if (awsEndpoint !== undefined && options.awsStandIns === 'process') {
      throw new StackStartError('awsStandIns: process starts fauxqs and dynalite; with awsEndpoint there are none to start');
    }
    if (awsEndpoint === undefined && options.awsStandIns === 'process') {
      const aws = await startAwsStandInsProcess({
        region,
        onUnexpectedExit: (code, signal) => warn(`aws stand-ins process: exited (code ${code}, signal ${signal}); SQS, SNS and DynamoDB are gone`),
      });
      onStop('aws stand-ins process', () => aws.stop());
      awsStandInsPid = aws.pid;
      // each service straight on its stand-in, as in process (the child's one-URL proxy is not in the way)
      sqsEndpoint = aws.upstreams.sqs;
      dynamoEndpoint = aws.upstreams.dynamodb;
    } else if (awsEndpoint === undefined) {
      const q = await startFauxqs({ port: 0, logger: false, defaultRegion: region });
      fauxqs = q;
      onStop('fauxqs', () => q.stop());
      sqsEndpoint = `http://127.0.0.1:${q.port}`;
      const dynalite = await listenDynalite();
      onStop('dynalite', () => stopDynalite(dynalite));
      dynamoEndpoint = `http://127.0.0.1:${(dynalite.address() as AddressInfo).port}`;
    } else if (awsEndpoint !== REAL_AWS) {
      sqsEndpoint = awsEndpoint;
      dynamoEndpoint = awsEndpoint;
    }
    const realAws = awsEndpoint === REAL_AWS;
    const clientConfig = realAws ? { region } : { region, credentials: LOCAL_CREDENTIALS };
    const sqs = withFastConfig(withCachedHandlers(new SQSClient({ ...sdkClientConfig(), ...clientConfig, ...(sqsEndpoint ? { endpoint: sqsEndpoint } : {}), cacheMiddleware: true })));
    const sns = withFastConfig(withCachedHandlers(new SNSClient({ ...sdkClientConfig(), ...clientConfig, ...(sqsEndpoint ? { endpoint: sqsEndpoint } : {}), cacheMiddleware: true })));
    const dynamodb = withFastConfig(new DynamoDBClient({ ...sdkClientConfig(), ...clientConfig, ...(dynamoEndpoint ? { endpoint: dynamoEndpoint } : {}) }));
    const doc = createDocumentClient({ ...clientConfig, ...(dynamoEndpoint ? { endpoint: dynamoEndpoint } : {}) });
    /** What the stack reports as each service's endpoint (on real AWS, the region's). */
    const shown = {
      sqs: sqsEndpoint ?? `https://sqs.${region}.amazonaws.com`,
      sns: sqsEndpoint ?? `https://sns.${region}.amazonaws.com`,
      dynamodb: dynamoEndpoint ?? `https://dynamodb.${region}.amazonaws.com`,
    };
    onStop('aws clients', async () => {
      sqs.destroy();
      sns.destroy();
      dynamodb.destroy();
      doc.destroy();
    });

    let kubeApi: KubeApi | undefined;
    let kubeconfigPath: string;
    let plan: IdentityPlan | undefined;
    let applied: KubeObject[] = [];
    if (options.kubeconfig) {
      kubeconfigPath = resolve(options.kubeconfig);
    } else {
      kubeconfigPath = join(stateDir, 'kubeconfig');
      if (options.kubeApi !== false) {
        const { startKubeApi, formatTokenFile } = await import('../kube-api/index.ts');
        let auth: KubeApiOptions['auth'];
        if (options.rbac !== false) {
          const first = wiring.functions[0];
          plan = planIdentities(wiring, first ? first.functionName.slice(0, -(first.name.length + 1)) : `claimflow-${stage}`);
          const tokenAuthFile = join(stateDir, 'tokens.csv');
          await writeFile(tokenAuthFile, formatTokenFile(plan.tokens), { mode: 0o600 });
          auth = { tokenAuthFile, authorizationMode: 'RBAC' };
        }
        kubeApi = await startKubeApi({ port: 0, ...(auth ? { auth } : {}), ...options.kubeApiOptions });
        const api = kubeApi;
        onStop('kube-api', () => api.stop());
        await api.writeKubeconfig(kubeconfigPath, plan?.admin.token);
        if (plan && existsSync(manifestsDir(root))) applied = await applyShippedRbac(api.store, manifestsDir(root));
      }
    }

    let storageApi: StorageApiHandle | undefined;
    if (options.storageApi !== false) {
      const mod = await importOptional<{ startStorageApi(o?: Record<string, unknown>): Promise<StorageApiHandle> }>(
        join(root, 'infra/local/storage-api/index.ts'),
      );
      if (mod) {
        // in memory like the emulator, fauxqs and dynalite: every start is a fresh cluster
        const volumeRoot = join(stateDir, 'volumes');
        await rm(volumeRoot, { recursive: true, force: true });
        await mkdir(volumeRoot, { recursive: true });
        storageApi = await mod.startStorageApi({
          port: 0,
          volumeRoot,
          username: STORAGE_API_CREDENTIALS.username,
          password: STORAGE_API_CREDENTIALS.password,
        });
        const s = storageApi;
        onStop('storage-api', () => s.stop());
      }
    }
    if (kubeApi && storageApi && options.seedCluster !== false) {
      const seeded = await seedLocalCluster({ kubeconfigPath, store: kubeApi.store, storage: storageApi.state, warn });
      onStop('node sync', async () => seeded.stop());
      if (options.storageNodeAnnotation) {
        // as the CSI node registrar does once the driver runs on the node: an update of the existing Node
        const storageNode = await storageApi.state.addNode(seeded.nodeName);
        const node = kubeApi.store.get({ resource: '/nodes', namespace: '', name: seeded.nodeName });
        if (node) {
          node.metadata.annotations = { ...node.metadata.annotations, [NODE_ID_ANNOTATION]: JSON.stringify({ [STORAGEOS_DRIVER]: storageNode.id }) };
          kubeApi.store.update('/nodes', node);
        }
      }
    }

    // --- resources from the template
    const resources = await createResources(wiring, {
      sqs,
      sns,
      dynamodb,
      region,
      sqsEndpoint,
      // on an endpoint that outlives the stack, as a deploy would: SNS may deliver to the queues, TTL on
      queuePolicies: awsEndpoint !== undefined,
      timeToLive: awsEndpoint !== undefined,
      warn,
    });
    const ctx = { resources: resources.physical, region, accountId: resources.accountId };
    const awsEnv: Record<string, string> = {
      AWS_REGION: region,
      AWS_DEFAULT_REGION: region,
      ...(realAws
        ? {}
        : {
            AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
            AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
            AWS_ENDPOINT_URL_SQS: sqsEndpoint!,
            AWS_ENDPOINT_URL_SNS: sqsEndpoint!,
            AWS_ENDPOINT_URL_DYNAMODB: dynamoEndpoint!,
          }),
      KUBECONFIG: kubeconfigPath,
    };
    const functionEnv: Record<string, Record<string, string>> = {};
    const identities: StackIdentities | undefined = plan && kubeApi ? { admin: { username: plan.admin.username, kubeconfigPath }, functions: {} } : undefined;
    for (const fn of wiring.functions) {
      const env = { ...stringEnv(resolveIntrinsics(fn.environment, ctx) as Record<string, unknown>), ...awsEnv };
      if (identities && plan && kubeApi) {
        // each function as its EKS access entry maps it; none without one (it does not reach the cluster)
        const id = plan.functions.find((f) => f.function === fn.name);
        if (id) {
          const path = join(stateDir, `kubeconfig-${fn.name}`);
          await writeFile(path, tokenKubeconfig(kubeApi.url, id.token, id.username, kubeApi.caCert), { mode: 0o600 });
          env.KUBECONFIG = path;
          identities.functions[fn.name] = { username: id.username, groups: id.groups, kubeconfigPath: path };
        } else {
          delete env.KUBECONFIG;
        }
      }
      if (storageApi) {
        env.STORAGE_API_URL = storageApi.url;
        env.STORAGE_API_USERNAME = STORAGE_API_CREDENTIALS.username;
        env.STORAGE_API_PASSWORD = STORAGE_API_CREDENTIALS.password;
      }
      Object.assign(env, options.functionEnv);
      env.AWS_LAMBDA_FUNCTION_NAME = fn.functionName;
      env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE = String(fn.memorySize);
      functionEnv[fn.name] = env;
    }
    const envs = Object.values(functionEnv);
    const env = Object.fromEntries(
      Object.entries(envs[0] ?? awsEnv).filter(([k, v]) => k !== 'AWS_LAMBDA_FUNCTION_NAME' && envs.every((e) => e[k] === v)),
    );
    const tableOf = (envName: string): string => env[envName] ?? '';
    const topic = [...resources.topics.values()][0];
    if (awsEndpoint !== undefined && kubeApi && env.CLUSTER_ID) {
      // the emulator is a new cluster: its id's state from an earlier run on these tables would shadow it
      const forgotten = await forgetCluster(doc, { cache: tableOf('CACHE_TABLE'), control: tableOf('CONTROL_TABLE') }, env.CLUSTER_ID);
      if (forgotten > 0) warn(`cluster ${env.CLUSTER_ID}: forgot ${forgotten} items of an earlier emulator run on ${awsEndpoint}`);
    }

    // --- functions
    const handlers = new Map<string, { def: FunctionDef; handler: LambdaHandler }>();
    const workers: FunctionWorker[] = [];
    for (const def of wiring.functions) {
      if (options.functions) {
        const h = options.functions[def.name];
        if (h) handlers.set(def.name, { def, handler: h });
        continue;
      }
      const entry = options.functionBundles ? join(options.functionBundles, def.name, 'index.mjs') : join(root, 'functions', `${kebabCase(def.name)}.ts`);
      if (!existsSync(entry)) {
        warn(`function ${def.name}: ${entry} does not exist yet; not running it`);
        continue;
      }
      const worker = await FunctionWorker.start({
        entry,
        exportName: def.exportName,
        functionName: def.functionName,
        region,
        memorySize: def.memorySize,
        // the host's environment minus its AWS settings (no real credentials or profiles leak in), except on
        // real AWS, where the functions find credentials as the host does (the default chain, refreshed)
        env: {
          ...Object.fromEntries(
            Object.entries(process.env).filter(([k, v]) => v !== undefined && (!k.startsWith('AWS_') || (realAws && CREDENTIAL_CHAIN_ENV.test(k)))) as [string, string][],
          ),
          ...functionEnv[def.name],
        },
        ...(options.functionOutput ? { onOutput: (stream: 'stdout' | 'stderr', text: string) => options.functionOutput!(def.name, stream, text) } : {}),
      });
      onStop(`function ${def.name}`, () => worker.stop());
      workers.push(worker);
      handlers.set(def.name, { def, handler: worker.handler });
    }
    for (const name of Object.keys(options.functions ?? {})) {
      if (!wiring.functions.some((f) => f.name === name)) throw new StackStartError(`serverless.yml declares no function ${name}`);
    }

    const eventSources: Record<string, SqsEventSource> = {};
    for (const es of wiring.eventSources) {
      const h = handlers.get(es.functionName);
      const queue = resources.queues.get(es.queue);
      if (!h || !es.enabled) continue;
      if (!queue) throw new StackStartError(`${es.logicalId}: queue ${es.queue} is not in the template`);
      const source = new SqsEventSource({
        sqs,
        queueUrl: queue.url,
        queueArn: queue.arn,
        region,
        functionName: h.def.functionName,
        handler: h.handler as SqsHandler,
        batchSize: es.batchSize,
        fifo: queue.fifo,
        reportBatchItemFailures: es.reportBatchItemFailures,
        timeoutMs: h.def.timeoutSeconds * 1000,
        memorySize: h.def.memorySize,
        maxConcurrency: options.maxConcurrency ?? es.maximumConcurrency,
        onSettled: options.onSettled && ((o) => options.onSettled!(es.functionName, o)),
        warn,
      });
      eventSources[es.functionName] = source;
    }

    const invoke = (name: string, event: unknown): Promise<unknown> => {
      const h = handlers.get(name);
      if (!h) return Promise.reject(new Error(`function ${name} is not running`));
      return invokeWithTimeout(h.handler, event, {
        functionName: h.def.functionName,
        region,
        timeoutMs: h.def.timeoutSeconds * 1000,
        memorySize: h.def.memorySize,
      });
    };

    let scheduler: Scheduler | undefined;
    if (options.schedules !== false) {
      const targets: ScheduledTarget[] = [];
      for (const rule of wiring.schedules) {
        if (!rule.enabled) continue;
        for (const t of rule.targets) {
          if (!handlers.has(t.functionName)) continue;
          targets.push({ rule: rule.logicalId, expression: rule.expression, input: t.input, invoke: (event) => invoke(t.functionName, event) });
        }
      }
      scheduler = new Scheduler(targets, {
        region,
        speedup: options.scheduleSpeedup,
        onFired:
          options.onScheduled ??
          ((rule, o) => {
            // a run ended by the stack stopping is not an error of the function
            if (o.error && (o.error as Error).name !== 'FunctionStoppedError') warn(`schedule ${rule}: ${(o.error as Error).message}`);
          }),
      });
    }

    // --- the forwarder, against the emulator or the given cluster
    let forwarder: Forwarder | undefined;
    if (options.withForwarder) {
      const { startForwarder } = await import('../../../lib/forwarder/forwarder.ts');
      const kubeConfig = new KubeConfig();
      if (identities && kubeApi && applied.length > 0) {
        // the forwarder's ServiceAccount token, as the kubelet requests it for the pod
        const sa = forwarderServiceAccount(applied);
        const admin = new KubeConfig();
        admin.loadFromFile(kubeconfigPath);
        const token = await requestServiceAccountToken(admin, sa.namespace, sa.name, FORWARDER_TOKEN_SECONDS);
        const path = join(stateDir, 'kubeconfig-forwarder');
        const username = `system:serviceaccount:${sa.namespace}:${sa.name}`;
        await writeFile(path, tokenKubeconfig(kubeApi.url, token, username, kubeApi.caCert), { mode: 0o600 });
        identities.forwarder = { username, namespace: sa.namespace, serviceAccount: sa.name, kubeconfigPath: path };
        kubeConfig.loadFromFile(path);
      } else {
        kubeConfig.loadFromFile(kubeconfigPath);
      }
      forwarder = await startForwarder({
        cluster: env.CLUSTER_ID,
        kubeConfig,
        sns,
        topicArn: topic.arn,
        doc,
        tables: { cache: tableOf('CACHE_TABLE'), control: tableOf('CONTROL_TABLE') },
        lease: false,
        logger: new Logger({ serviceName: 'claimflow-forwarder', logLevel: options.forwarderLogLevel ?? 'WARN' }),
        ...options.forwarderOptions,
      });
      const f = forwarder;
      onStop('forwarder', () => f.stop());
      // ready means the forwarder has listed every kind into the cache (functions gate on it too)
      const deadline = Date.now() + FORWARDER_SYNC_TIMEOUT_MS;
      while (!f.isReady() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
      if (!f.isReady()) warn(`forwarder: initial sync not complete after ${FORWARDER_SYNC_TIMEOUT_MS} ms; continuing`);
    }

    for (const source of Object.values(eventSources)) source.start();
    scheduler?.start();
    // One step, first of all: no new polls or firings; SQS batches in flight get STOP_GRACE_MS to settle;
    // then the functions' workers are shut down, which ends whatever still runs (a scheduled poll) at once.
    onStop('event source mappings and schedules', async () => {
      const sources = Promise.allSettled(Object.values(eventSources).map((s) => s.stop()));
      const schedules = scheduler?.stop();
      if (workers.length > 0) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([sources, new Promise((ok) => { timer = setTimeout(ok, STOP_GRACE_MS); })]);
        clearTimeout(timer);
        await Promise.all(workers.map((w) => w.stop()));
      }
      await Promise.all([sources, schedules]);
    });

    const stackJson = {
      kubeconfig: kubeconfigPath,
      kubeApi: kubeApi?.url ?? null,
      // null on real AWS: clients use the region's endpoints and the default credential chain
      sqs: sqsEndpoint ?? null,
      sns: sqsEndpoint ?? null,
      dynamodb: dynamoEndpoint ?? null,
      storageApi: storageApi?.url ?? null,
      stage,
      region,
      awsEndpoint: awsEndpoint ?? null,
    };
    await writeFile(join(stateDir, 'stack.json'), `${JSON.stringify(stackJson, null, 2)}\n`);

    return {
      kubeApi,
      kubeconfigPath,
      ...(identities ? { identities } : {}),
      sqs: { endpoint: shown.sqs, client: sqs },
      sns: { endpoint: shown.sns, client: sns },
      dynamodb: { endpoint: shown.dynamodb, client: dynamodb, doc },
      storageApi: storageApi && {
        url: storageApi.url,
        faults: storageApi.faults,
        state: storageApi.state,
        requests: storageApi.requests,
        auth: storageApi.auth,
      },
      ...(fauxqs ? { fauxqs } : {}),
      ...(awsStandInsPid !== undefined ? { awsStandInsPid } : {}),
      ...(awsEndpoint ? { awsEndpoint } : {}),
      template,
      wiring,
      resources,
      env,
      functionEnv,
      queues: Object.fromEntries(resources.queues),
      topicArn: topic?.arn ?? '',
      tables: { cache: tableOf('CACHE_TABLE'), control: tableOf('CONTROL_TABLE') },
      eventSources,
      scheduler,
      forwarder,
      invoke,
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}
