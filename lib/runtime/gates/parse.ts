/**
 * Gate `parse`: the body must be a {@link ClusterEventSchema} event (raw, or inside an SNS envelope). A
 * malformed one is a poison message: sent to the DLQ (`DLQ_URL`) at once with a `poisonReason` attribute,
 * counted in `PoisonMessages`, logged, and reported processed so it does not bounce `maxReceiveCount` times.
 * A kind the controller does not reconcile, or a version it wrote itself (`OwnWriteSkipped`), ends here too.
 *
 * @example
 * // body 'not json' ⇒ DLQ, { kind: 'done' }; a valid PVC event ⇒ job.parsed set, next()
 */
import type { SQSRecord } from 'aws-lambda';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import type { Gate, Outcome } from '../job.ts';
import { ClusterEventSchema, type ClusterEvent } from '../message.ts';
import { METRIC, recordLogger } from '../observability.ts';
import { ENV } from '../reconcile.ts';
import type { SqsRuntime } from '../runtime.ts';

/**
 * The cluster event inside an SNS notification envelope (a subscription without raw message delivery);
 * anything else is returned as it is.
 */
export function unwrapSnsEnvelope(body: unknown): unknown {
  const envelope = body as { Type?: unknown; Message?: unknown; TopicArn?: unknown } | null;
  if (envelope && envelope.Type === 'Notification' && typeof envelope.Message === 'string' && typeof envelope.TopicArn === 'string') {
    try {
      return JSON.parse(envelope.Message);
    } catch {
      return body;
    }
  }
  return body;
}

/** Why a body is not a cluster event, or the event. */
export function parseBody(body: string): { reason: string } | { event: ClusterEvent } {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (error) {
    return { reason: `body is not JSON: ${(error as Error).message}` };
  }
  const parsed = ClusterEventSchema.safeParse(unwrapSnsEnvelope(json));
  if (parsed.success) return { event: parsed.data };
  const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
  return { reason: `body does not match the cluster event schema: ${issues}` };
}

/** Sends a malformed record to the DLQ; the record then counts as processed. */
async function poison<Ctx>(rt: SqsRuntime<Ctx>, record: SQSRecord, reason: string): Promise<Outcome> {
  const dlqUrl = rt.dlqUrl;
  if (!dlqUrl) throw new Error(`poison message ${record.messageId} (${reason}) and no ${ENV.dlqUrl} to send it to`);
  await rt.services.sqs.send(
    new SendMessageCommand({
      QueueUrl: dlqUrl,
      MessageBody: record.body,
      MessageGroupId: record.attributes.MessageGroupId ?? 'poison',
      MessageDeduplicationId: record.messageId.replace(/[^\w-]/g, '_').slice(0, 128),
      MessageAttributes: {
        poisonReason: { DataType: 'String', StringValue: reason.slice(0, 1024) || 'invalid' },
        controller: { DataType: 'String', StringValue: rt.controller.name },
        sourceMessageId: { DataType: 'String', StringValue: record.messageId },
      },
    }),
  );
  rt.metrics.addMetric(METRIC.poisonMessages, MetricUnit.Count, 1);
  rt.logger.error('poison message sent to the DLQ', { messageId: record.messageId, reason, dlqUrl });
  return { kind: 'done' };
}

export function parse<Ctx>(rt: SqsRuntime<Ctx>): Gate {
  return async (job, next) => {
    const { record } = job;
    const body = parseBody(record.body);
    if ('reason' in body) return poison(rt, record, body.reason);
    const { event } = body;
    if (!rt.controller.kinds.includes(event.kind)) {
      rt.logger.warn('ignoring a kind this controller does not reconcile', { kind: event.kind, messageId: record.messageId });
      return { kind: 'done' };
    }
    if (event.writer === rt.controller.name) {
      // A version this controller wrote and wrote back itself; its subscription normally filters these out.
      rt.metrics.addMetric(METRIC.ownWriteSkipped, MetricUnit.Count, 1);
      return { kind: 'done' };
    }
    const { cluster, kind, key } = event;
    job.parsed = { event, request: { cluster, kind, key, event }, id: { controller: rt.controller.name, cluster, kind, key } };
    // Groups run concurrently: each record logs with its own keys (recordLogger, observability.ts).
    job.log = recordLogger(rt.logger, { cluster, kind, key, messageId: record.messageId, eventType: event.type });
    return next();
  };
}
