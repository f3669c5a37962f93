/**
 * Stand-ins for the forwarder's tests: the Kubernetes API emulator, dynalite, and fauxqs with the events
 * topic and one FIFO queue per controller subscribed with the kind filters of serverless.yml.
 */
import { KubeConfig } from '@kubernetes/client-node';
import { CreateTopicCommand, SNSClient, SubscribeCommand } from '@aws-sdk/client-sns';
import { CreateQueueCommand, DeleteMessageBatchCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { Logger } from '@aws-lambda-powertools/logger';
import { startFauxqs, type FauxqsServer } from 'fauxqs';
import { startKubeApi, type KubeApi, type KubeApiOptions } from '../../infra/local/kube-api/index.ts';
import { startDynalite, type Dynalite, LOCAL_CREDENTIALS, LOCAL_REGION } from '../support/dynalite.ts';
import { ClusterEventSchema, type ClusterEvent, type WatchedKind } from '../../lib/runtime/message.ts';
import { startForwarder, type Forwarder, type ForwarderOptions } from '../../lib/forwarder/forwarder.ts';

/** The controller queues and the kinds their subscription filters admit (as serverless.yml declares). */
export const QUEUE_FILTERS: Record<string, WatchedKind[]> = {
  binder: ['PersistentVolume', 'PersistentVolumeClaim', 'StorageClass'],
  'label-sync': ['Node'],
  'shared-volume': ['VolumeAttachment', 'PersistentVolumeClaim', 'Service', 'Endpoints'],
};

export interface Messaging {
  fauxqs: FauxqsServer;
  endpoint: string;
  sns: SNSClient;
  sqs: SQSClient;
  topicArn: string;
  queues: Record<string, string>;
  stop(): Promise<void>;
}

const aws = (endpoint: string) => ({ endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });

/** fauxqs with the topic, queues and subscriptions, created over the wire. */
export async function startMessaging(options: { port?: number; dataDir?: string } = {}): Promise<Messaging> {
  const fauxqs = await startFauxqs({ port: options.port ?? 0, logger: false, host: 'localhost', ...(options.dataDir ? { dataDir: options.dataDir } : {}) });
  const endpoint = `http://localhost:${fauxqs.port}`;
  const sns = new SNSClient({ ...aws(endpoint), maxAttempts: 1 });
  const sqs = new SQSClient(aws(endpoint));
  const { TopicArn } = await sns.send(new CreateTopicCommand({ Name: 'cluster-events.fifo', Attributes: { FifoTopic: 'true' } }));
  const queues: Record<string, string> = {};
  for (const [name, kinds] of Object.entries(QUEUE_FILTERS)) {
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: `${name}.fifo`, Attributes: { FifoQueue: 'true', VisibilityTimeout: '30' } }));
    queues[name] = QueueUrl!;
    const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }));
    await sns.send(
      new SubscribeCommand({
        TopicArn,
        Protocol: 'sqs',
        Endpoint: Attributes!.QueueArn,
        Attributes: { RawMessageDelivery: 'true', FilterPolicyScope: 'MessageAttributes', FilterPolicy: JSON.stringify({ kind: kinds }) },
      }),
    );
  }
  const messaging: Messaging = {
    fauxqs,
    endpoint,
    sns,
    sqs,
    topicArn: TopicArn!,
    queues,
    async stop() {
      sns.destroy();
      sqs.destroy();
      // A test may have replaced the server (an outage and a restart on the same port).
      await messaging.fauxqs.stop();
    },
  };
  return messaging;
}

/** Receives and deletes every message currently deliverable from a queue (FIFO order per group). */
export async function drainOnce(sqs: SQSClient, queueUrl: string): Promise<ClusterEvent[]> {
  const out: ClusterEvent[] = [];
  while (true) {
    const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }));
    if (Messages.length === 0) return out;
    for (const message of Messages) out.push(ClusterEventSchema.parse(JSON.parse(message.Body!)));
    await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: queueUrl, Entries: Messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })) }));
  }
}

/** A collector that keeps draining every queue into per-queue arrays. */
export class QueueCollector {
  readonly received: Record<string, ClusterEvent[]> = {};
  #messaging: Messaging;
  constructor(messaging: Messaging) {
    this.#messaging = messaging;
    for (const name of Object.keys(messaging.queues)) this.received[name] = [];
  }
  set messaging(messaging: Messaging) {
    this.#messaging = messaging;
  }
  async drain(): Promise<void> {
    for (const [name, url] of Object.entries(this.#messaging.queues)) this.received[name].push(...(await drainOnce(this.#messaging.sqs, url)));
  }
  /** Drains until `done()` holds (or throws after `timeoutMs`). */
  async until(done: () => boolean, timeoutMs = 30_000, what = 'messages'): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (true) {
      await this.drain();
      if (done()) return;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

export const silentLogger = () => new Logger({ serviceName: 'forwarder-test', logLevel: 'SILENT' });

export interface StandIns {
  kube: KubeApi;
  db: Dynalite;
  messaging: Messaging;
  kubeConfig: KubeConfig;
  forwarder(overrides?: Partial<ForwarderOptions>): Promise<Forwarder>;
  stop(): Promise<void>;
}

/** All stand-ins, plus a factory for forwarders wired to them (stopped by `stop()`). */
export async function startStandIns(options: { kube?: KubeApiOptions; cluster?: string; messaging?: { dataDir?: string } } = {}): Promise<StandIns> {
  const kube = await startKubeApi({ bookmarkIntervalMs: 500, ...options.kube });
  const db = await startDynalite();
  const messaging = await startMessaging(options.messaging);
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(kube.kubeconfig());
  const started: Forwarder[] = [];
  const standIns: StandIns = {
    kube,
    db,
    messaging,
    kubeConfig,
    async forwarder(overrides = {}) {
      const forwarder = await startForwarder({
        cluster: options.cluster ?? 'c1',
        kubeConfig,
        sns: standIns.messaging.sns,
        topicArn: standIns.messaging.topicArn,
        doc: db.doc,
        tables: db.tables,
        lease: false,
        // The queues here subscribe by kind alone, not with serverless.yml's policies: publish what they take.
        publishAll: true,
        publishRetryInitialMs: 50,
        publishRetryMaxMs: 500,
        watchBackoffInitialMs: 50,
        watchBackoffMaxMs: 500,
        watchSilenceMs: 10_000,
        logger: silentLogger(),
        ...overrides,
      });
      started.push(forwarder);
      return forwarder;
    },
    async stop() {
      for (const forwarder of started) await forwarder.stop();
      await standIns.messaging.stop();
      await kube.stop();
      await db.stop();
    },
  };
  return standIns;
}

/** Polls `check` until it holds. */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 20_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
