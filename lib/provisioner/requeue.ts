/**
 * Sends a PersistentVolume's key back to the provisioner queue as a REQUEUE message, in the PV's own
 * FIFO message group (`<cluster>:PersistentVolume:<name>`, see `messageGroupId`): the PV is then
 * reconciled by its own worker, never beside it. Used when a VolumeAttachment that held a deletion back
 * is gone, so the deletion follows the detach at once instead of at the end of the PV's backoff.
 *
 * The deduplication id carries `cause` (the attachment's uid and deletion resourceVersion), so replays
 * of one attachment event collapse into one requeue. Messages go through the resync function's
 * {@link RequeueSender} (batching, retry of failed entries, FIFO ids of message.ts).
 *
 * @example
 * const requeuer = volumeRequeuerFromEnv();
 * await requeuer?.requeue({ cluster: 'c1', name: 'pvc-1', uid: 'u1', resourceVersion: '42', cause: 'va-u9-57' });
 */
import type { SQSClient } from '@aws-sdk/client-sqs';
import { RequeueSender } from '../resync/sender.ts';
import { MESSAGE_VERSION, type ClusterEvent } from '../runtime/message.ts';
import { ENV } from '../runtime/reconcile.ts';
import { createSqsClient } from '../runtime/sqs.ts';

/** One PV key to look at again. */
export interface VolumeRequeueTarget {
  cluster: string;
  /** The PV name (its key). */
  name: string;
  uid: string;
  resourceVersion: string;
  /** What caused the requeue; part of the deduplication id. */
  cause: string;
}

/** Puts a PV key back on the provisioner queue. */
export interface VolumeRequeuer {
  requeue(target: VolumeRequeueTarget): Promise<void>;
}

export interface SqsVolumeRequeuerOptions {
  sqs: SQSClient;
  /** The provisioner queue. */
  queueUrl: string;
  /** The controller name the REQUEUE is addressed to (default `provisioner`). */
  controller?: string;
  now?: () => number;
}

/** {@link VolumeRequeuer} over SQS. */
export class SqsVolumeRequeuer implements VolumeRequeuer {
  readonly #sqs: SQSClient;
  readonly #queueUrl: string;
  readonly #controller: string;
  readonly #now: () => number;

  constructor(options: SqsVolumeRequeuerOptions) {
    this.#sqs = options.sqs;
    this.#queueUrl = options.queueUrl;
    this.#controller = options.controller ?? 'provisioner';
    this.#now = options.now ?? Date.now;
  }

  async requeue(target: VolumeRequeueTarget): Promise<void> {
    const event: ClusterEvent = {
      v: MESSAGE_VERSION,
      cluster: target.cluster,
      kind: 'PersistentVolume',
      type: 'REQUEUE',
      key: target.name,
      uid: target.uid,
      resourceVersion: target.resourceVersion || '0',
      observedAt: new Date(this.#now()).toISOString(),
      controller: this.#controller,
    };
    const sender = new RequeueSender(this.#sqs, target.cause);
    await sender.add(this.#queueUrl, event);
    await sender.flush();
  }
}

/**
 * The requeuer of a deployed provisioner: its own queue (`PROVISIONER_QUEUE_URL`, which serverless.yml
 * and the local stack set for every function); undefined when that is not set.
 */
export function volumeRequeuerFromEnv(env: NodeJS.ProcessEnv = process.env): VolumeRequeuer | undefined {
  const queueUrl = env[ENV.queueUrl.provisioner];
  return queueUrl ? new SqsVolumeRequeuer({ sqs: createSqsClient({}, env), queueUrl }) : undefined;
}
