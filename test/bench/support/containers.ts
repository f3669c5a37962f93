/**
 * The controller benchmarks' function containers: one function run as Lambda runs it (a pool of
 * containers, each with its own runtime, clients and API-budget handle), metered, and built from plain
 * data ({@link ContainerSpec}) so the same code runs in the bench's main thread or in the functions' own
 * thread (function-thread.ts).
 */
import { performance } from 'node:perf_hooks';
import { createSqsClient } from '../../../lib/runtime/sqs.ts';
import type { Context, SQSEvent } from 'aws-lambda';
import { createSqsHandler, type SqsHandler } from '../../../lib/runtime/handler.ts';
import { createDocumentClient } from '../../../lib/state/client.ts';
import { ApiBudget, budgetFromEnv } from '../../../lib/state/bucket.ts';
import { COMPONENT as BINDER_COMPONENT } from '../../../lib/binder/constants.ts';
import { createBinderController } from '../../../lib/binder/controller.ts';
import { createProvisionerController, runtimeOptionsFor } from '../../../lib/provisioner/controller.ts';
import { provisionerOptionsFromEnv } from '../../../lib/provisioner/options.ts';
import { LocalProvisioner } from '../../../lib/provisioner/provisioners/local.ts';
import { StorageOSProvisioner } from '../../../lib/provisioner/provisioners/storageos.ts';
import { StorageOSClient } from '../../../lib/storage/storageos/client.ts';
import { sharedVolumeConfigFromEnv } from '../../../lib/shared-volume/config.ts';
import { createSharedVolumeController, sharedVolumeRuntimeOptions } from '../../../lib/shared-volume/controller.ts';
import { labelSyncConfigFromEnv } from '../../../lib/label-sync/config.ts';
import { CONTROLLER_NAME as LABEL_SYNC, createLabelSyncController, labelSyncContext } from '../../../lib/label-sync/controller.ts';
import { LOCAL_CREDENTIALS, STORAGE_API_CREDENTIALS } from '../../../infra/local/stack/stack.ts';
import { type BucketWrite, type KubeRequestLog, MeteredKubeClients, meterDynamo, meterSqs, type Tally } from './meter.ts';

export type FunctionName = 'binder' | 'provisioner' | 'sharedVolume' | 'labelSync';

/** The queue (and dead-letter queue) each function's event source mapping reads, by logical id in the template. */
export const QUEUE_OF: Record<FunctionName, { queue: string; dlq: string }> = {
  binder: { queue: 'BinderQueue', dlq: 'BinderDlq' },
  provisioner: { queue: 'ProvisionerQueue', dlq: 'ProvisionerDlq' },
  sharedVolume: { queue: 'SharedVolumeQueue', dlq: 'SharedVolumeDlq' },
  labelSync: { queue: 'LabelSyncQueue', dlq: 'LabelSyncDlq' },
};

/** A record as a function received it. */
export interface Delivery {
  at: number;
  fn: FunctionName;
  kind: string;
  type: string;
  key: string;
  firstReceive: boolean;
  /** When SQS accepted the message (its SentTimestamp), on the `performance.now()` clock. */
  sentAt: number;
}

/** Everything a function's containers need, as plain data (it crosses to a worker thread). */
export interface ContainerSpec {
  fn: FunctionName;
  region: string;
  kubeconfigPath: string;
  tables: { cache: string; control: string };
  dynamodbEndpoint: string;
  sqsEndpoint: string;
  queueUrl: string;
  dlqUrl: string;
  /** The function's environment as the template makes it. */
  env: Record<string, string>;
  /** The per-cluster API budget every container spends (`KUBE_API_QPS`, `KUBE_API_BURST`). */
  budget: { qps: number; burst: number };
  storageApiUrl?: string;
}

/** Where a function's containers count what they do. */
export interface ContainerMeters {
  /** `dynamo …` (its document client), its runtime's SQS calls, `storage calls`/`storage ms`. */
  tally: Tally;
  log: KubeRequestLog;
  bucketWrites: BucketWrite[];
}

/**
 * `target` with every method timed: `<prefix> calls` and `<prefix> ms` (wall time until the returned
 * promise settles) in `tally`. Methods run on the target itself (private fields keep working).
 */
export function timed<T extends object>(target: T, tally: Tally, prefix: string): T {
  return new Proxy(target, {
    get(t, prop, receiver) {
      const value = Reflect.get(t, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const started = performance.now();
        const result = (value as (...a: unknown[]) => unknown).apply(t, args);
        if (!(result instanceof Promise)) return result;
        tally.add(`${prefix} calls`);
        return result.finally(() => tally.add(`${prefix} ms`, performance.now() - started));
      };
    },
  });
}

/**
 * A builder of one function's containers, as lib/runtime/handler.ts's init() builds one: each call is a
 * new container with its own runtime and API-budget handle; the document and SQS clients (metered) are
 * shared by the function's containers. `clients` are to be destroyed when the bench stops.
 */
export function containerBuilder(spec: ContainerSpec, meters: ContainerMeters): { build: () => SqsHandler; clients: Array<{ destroy(): void }> } {
  const { fn, env, tally } = { ...spec, tally: meters.tally };
  const clientConfig = { region: spec.region, credentials: LOCAL_CREDENTIALS };
  const doc = createDocumentClient({ ...clientConfig, endpoint: spec.dynamodbEndpoint });
  meterDynamo(doc, tally, 'dynamo ', { onBucketWrite: (w) => meters.bucketWrites.push(w) });
  const sqs = createSqsClient({ ...clientConfig, endpoint: spec.sqsEndpoint });
  meterSqs(sqs, tally);
  const budget = budgetFromEnv({ KUBE_API_QPS: String(spec.budget.qps), KUBE_API_BURST: String(spec.budget.burst) });
  const common = { doc, tables: spec.tables, sqs, queueUrl: spec.queueUrl, dlqUrl: spec.dlqUrl, maxReceiveCount: Number(env.MAX_RECEIVE_COUNT ?? 5) };
  const build = (): SqsHandler => {
    const budgets = new Map<string, ApiBudget>();
    const kube = new MeteredKubeClients(
      {
        env: { KUBECONFIG: spec.kubeconfigPath },
        budget: (cluster) => {
          let b = budgets.get(cluster);
          if (!b) budgets.set(cluster, (b = new ApiBudget({ doc, table: spec.tables.control, cluster, ...budget })));
          return b;
        },
      },
      meters.log,
      fn,
    );
    if (fn === 'binder') {
      return createSqsHandler(createBinderController({ sqs, queueUrl: spec.queueUrl }), {
        ...common,
        kube,
        component: BINDER_COMPONENT,
        requiresSynced: ['PersistentVolumeClaim', 'PersistentVolume', 'StorageClass'],
      });
    }
    if (!spec.storageApiUrl) throw new Error(`the ${fn} bench needs the storage control plane`);
    const storage = timed(new StorageOSClient({ endpoint: spec.storageApiUrl, ...STORAGE_API_CREDENTIALS }), tally, 'storage');
    if (fn === 'sharedVolume') {
      return createSqsHandler(createSharedVolumeController({ storage, config: sharedVolumeConfigFromEnv(env) }), { ...sharedVolumeRuntimeOptions(), ...common, kube });
    }
    if (fn === 'labelSync') {
      // as functions/label-sync.ts builds its reconciler
      return createSqsHandler(createLabelSyncController(), { component: LABEL_SYNC, ...common, kube, context: labelSyncContext(() => storage, labelSyncConfigFromEnv(env)) });
    }
    const provisionerOptions = provisionerOptionsFromEnv(env);
    const provisioner = provisionerOptions.backend === 'local' ? new LocalProvisioner(storage) : new StorageOSProvisioner(storage, provisionerOptions.provisionerName);
    return createSqsHandler(createProvisionerController({ options: provisionerOptions, provisioner }), {
      ...runtimeOptionsFor(provisionerOptions),
      ...common,
      kube,
    });
  };
  return { build, clients: [doc, sqs] };
}

/** The figures of a function the harness reads: {@link FunctionPool} here, or its mirror for a pool in the functions' thread. */
export interface PoolView {
  readonly name: FunctionName;
  readonly memoryMB: number;
  readonly architecture: 'arm64' | 'x86_64';
  readonly queue: string;
  readonly tally: Tally;
  readonly inFlight: number;
  readonly lastActivity: number;
  readonly handler: (event: SQSEvent, context: Context) => Promise<unknown>;
}

/** One function run as Lambda runs it: a pool of containers, metered. */
export class FunctionPool implements PoolView {
  readonly name: FunctionName;
  readonly memoryMB: number;
  readonly architecture: 'arm64' | 'x86_64';
  readonly queue: string;
  /** invocations, records, billedMs, containers, firstReceives; plus what the containers count. */
  readonly tally: Tally;
  readonly #containers: Array<{ handler: SqsHandler; busy: boolean }> = [];
  readonly #build: () => SqsHandler;
  readonly #deliveries: Delivery[];
  inFlight = 0;
  lastActivity = 0;

  constructor(options: { name: FunctionName; memoryMB: number; architecture: 'arm64' | 'x86_64'; queue: string; build: () => SqsHandler; deliveries: Delivery[]; tally: Tally }) {
    this.name = options.name;
    this.tally = options.tally;
    this.memoryMB = options.memoryMB;
    this.architecture = options.architecture;
    this.queue = options.queue;
    this.#build = options.build;
    this.#deliveries = options.deliveries;
  }

  get containers(): number {
    return this.#containers.length;
  }

  readonly handler = async (event: SQSEvent, context: Context): Promise<unknown> => {
    let container = this.#containers.find((c) => !c.busy);
    if (!container) {
      container = { handler: this.#build(), busy: false };
      this.#containers.push(container);
      this.tally.add('containers');
    }
    container.busy = true;
    this.inFlight++;
    const started = performance.now();
    this.lastActivity = started;
    this.tally.add('invocations');
    this.tally.add('records', event.Records.length);
    for (const record of event.Records) {
      let body: { kind?: string; type?: string; key?: string } = {};
      try {
        body = JSON.parse(record.body) as typeof body;
      } catch {
        // not a cluster event: counted, not described
      }
      const firstReceive = record.attributes.ApproximateReceiveCount === '1';
      if (firstReceive) this.tally.add('firstReceives');
      const sentAt = Number(record.attributes.SentTimestamp) - (Date.now() - performance.now());
      this.#deliveries.push({ at: started, fn: this.name, kind: body.kind ?? '?', type: body.type ?? '?', key: body.key ?? '?', firstReceive, sentAt });
    }
    try {
      return await container.handler(event, context);
    } finally {
      const ms = performance.now() - started;
      this.tally.add('billedMs', Math.ceil(ms));
      container.busy = false;
      this.inFlight--;
      this.lastActivity = performance.now();
    }
  };
}
