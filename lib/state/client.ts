/**
 * The DynamoDB document client every state module shares. Endpoints come from the standard SDK
 * environment (`AWS_ENDPOINT_URL_DYNAMODB` points it at dynalite locally).
 */
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { sdkClientConfig, withFastConfig } from '../runtime/sdk-client.ts';

export type DocumentClient = DynamoDBDocumentClient;

/** A document client that drops `undefined` attributes and keeps numbers exact where they fit. */
export function createDocumentClient(config: DynamoDBClientConfig = {}): DocumentClient {
  return withFastConfig(
    DynamoDBDocumentClient.from(new DynamoDBClient({ ...sdkClientConfig(), ...config }), {
      marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
      unmarshallOptions: { wrapNumbers: false },
    }),
  );
}

/** What {@link batchGetItems} reads besides the keys. */
export interface BatchGetOptions {
  consistentRead?: boolean;
  projection?: string;
  names?: Record<string, string>;
  /** BatchGetItem calls at most (the first and the retries of unprocessed keys). Default 3. */
  rounds?: number;
}

/**
 * The items of one table's `keys` (at most 100) from BatchGetItem, asking again for the keys DynamoDB leaves
 * unprocessed, `rounds` calls at most; `unprocessed` holds the keys still unread then (throttling), for the
 * caller to decide what their absence means.
 */
export async function batchGetItems(
  doc: DocumentClient,
  table: string,
  keys: ReadonlyArray<Record<string, unknown>>,
  options: BatchGetOptions = {},
): Promise<{ items: Array<Record<string, unknown>>; unprocessed: Array<Record<string, unknown>> }> {
  const items: Array<Record<string, unknown>> = [];
  let pending = [...keys];
  const request = {
    ...(options.consistentRead ? { ConsistentRead: true } : {}),
    ...(options.projection ? { ProjectionExpression: options.projection } : {}),
    ...(options.names ? { ExpressionAttributeNames: options.names } : {}),
  };
  for (let round = 0; pending.length > 0 && round < (options.rounds ?? 3); round++) {
    const out = await doc.send(new BatchGetCommand({ RequestItems: { [table]: { Keys: pending, ...request } } }));
    items.push(...(out.Responses?.[table] ?? []));
    pending = out.UnprocessedKeys?.[table]?.Keys ?? [];
  }
  return { items, unprocessed: pending };
}
