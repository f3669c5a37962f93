/**
 * The logger every AWS SDK client of claimflow is given: silent, and without `info` or `error`.
 *
 * The SDK's logger middleware builds a redacted copy of each request's input and of its response's output
 * (walking the whole item of a DynamoDB read or write against the operation's schema) to hand to
 * `logger.info`, on every call, even with the SDK's default no-op logger; it calls `logger?.info?.(…)`,
 * so a logger without `info` skips the copy (and `logger?.error?.(…)` likewise on a failure, which the
 * caller sees and reports anyway). `debug`, `trace` and `warn` are called unguarded by parts of the SDK,
 * so they stay, as no-ops. Measured on a PutItem + GetItem of a PersistentVolume-sized item: ~10 % less
 * CPU per request, client and dynalite in one process (`npm run bench:binder` has the system-wide figure).
 *
 * @example
 * new SQSClient({ logger: SDK_LOGGER, ...config }); // every client of ours: sdkClientConfig() (sdk-client.ts)
 */
import type { DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';

type Logger = NonNullable<DynamoDBClientConfig['logger']>;

export const SDK_LOGGER = {
  trace: () => {},
  debug: () => {},
  warn: () => {},
} as unknown as Logger;
