/**
 * The DynamoDB document client every state module shares. Endpoints come from the standard SDK
 * environment (`AWS_ENDPOINT_URL_DYNAMODB` points it at dynalite locally).
 */
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, DynamoDBDocumentClient, DynamoDBDocumentClientCommand } from '@aws-sdk/lib-dynamodb';
import { onStackChange, sdkClientConfig, withFastConfig } from '../runtime/sdk-client.ts';

export type DocumentClient = DynamoDBDocumentClient;

/** A document client that drops `undefined` attributes and keeps numbers exact where they fit. */
export function createDocumentClient(config: DynamoDBClientConfig = {}): DocumentClient {
  return withFastConfig(
    withCachedDocumentHandlers(
      DynamoDBDocumentClient.from(new DynamoDBClient({ ...sdkClientConfig(), ...config }), {
        marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
        unmarshallOptions: { wrapNumbers: false },
      }),
    ),
  );
}

/** What lib-dynamodb's commands hold (protected in its types): the DynamoDB command their input goes out as. */
interface DocumentCommandParts {
  clientCommand: { resolveMiddleware(stack: unknown, config: unknown, options: undefined): Handler };
  middlewareStack: unknown;
  addMarshallingMiddleware(config: unknown): void;
}
type Handler = (command: unknown) => Promise<{ output: unknown }>;

/**
 * `doc`, building each command class's middleware chain once instead of on every call (what the SDK's
 * `cacheMiddleware` does for a plain client: lib/runtime/sdk-client.ts `withCachedHandlers`).
 *
 * lib-dynamodb refuses `cacheMiddleware`, because its commands' chains close over the command they were
 * built for: a kept chain would send the first command's input again. Its marshalling middlewares
 * themselves read only the call's input and the command class's key paths, so here the chain is built the
 * way the command builds it (its marshalling middlewares, then the DynamoDB command's own resolution over
 * the client's stack), kept per command class, and called with each command's own DynamoDB command: its
 * input, marshalled on the way out, and its output, unmarshalled on the way back. A middleware added to
 * the client's stack afterwards drops the kept chains; a call with options (an abort signal) or a callback,
 * or a command that is not a document command, goes through lib-dynamodb's own `send`. The calls of a class
 * share the chain's handler context, which holds while they all resolve the same endpoint and credentials
 * (`withCachedHandlers` says when).
 */
export function withCachedDocumentHandlers(doc: DynamoDBDocumentClient): DynamoDBDocumentClient {
  const handlers = new Map<unknown, Handler>();
  onStackChange(doc.middlewareStack, () => handlers.clear());
  const send = doc.send.bind(doc) as (...args: unknown[]) => unknown;
  doc.send = ((command: unknown, ...rest: unknown[]) => {
    if (rest.length > 0 || !(command instanceof DynamoDBDocumentClientCommand)) return send(command, ...rest);
    const parts = command as unknown as DocumentCommandParts;
    let handler = handlers.get(command.constructor);
    if (handler === undefined) {
      parts.addMarshallingMiddleware(doc.config);
      handler = parts.clientCommand.resolveMiddleware(doc.middlewareStack.concat(parts.middlewareStack as never), doc.config, undefined);
      handlers.set(command.constructor, handler);
    }
    return handler(parts.clientCommand).then((result) => result.output);
  }) as typeof doc.send;
  return doc;
}

/** What {@link batchGetItems} reads besides the keys. */
export interface BatchGetOptions {
  consistentRead?: boolean;
  projection?: string;
  names?: Record<string, string>;
  /** BatchGetItem calls at most (the first and the retries of unprocessed keys). Default 3. */
  rounds?: number;
  /** Aborts the calls (e.g. `AbortSignal.timeout`). */
  abortSignal?: AbortSignal;
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
    const out = await doc.send(new BatchGetCommand({ RequestItems: { [table]: { Keys: pending, ...request } } }), options.abortSignal ? { abortSignal: options.abortSignal } : {});
    items.push(...(out.Responses?.[table] ?? []));
    pending = out.UnprocessedKeys?.[table]?.Keys ?? [];
  }
  return { items, unprocessed: pending };
}
