/**
 * What every AWS SDK client of claimflow is built with: the silent logger without `info` or `error`
 * ({@link SDK_LOGGER}) and undici as its HTTP client.
 *
 * The SDK's default Node handler sends each request through `node:http` (an `http.Agent` with keep-alive),
 * arming four timers per request around it. `@smithy/undici-http-handler` (the Smithy team's own) sends the
 * same request through undici's dispatcher API, over undici's global keep-alive pool, the one the
 * Kubernetes client's default also is: less CPU per call. `npm run bench:aws-sdk` (a canned local server,
 * 3,000 calls 10 at a time, median of 5 rounds): GetItem 1,110 → 847 µs, conditional PutItem 1,008 →
 * 874 µs of CPU per call; the SDK alone, without any transport, ~340 µs. Timeouts, retries and abort signals are
 * the SDK's, as with the default handler; a connection the far side closed while idle fails its request
 * with an error the SDK's retry strategy retries.
 *
 * @example
 * new SQSClient({ ...sdkClientConfig(), region });
 */
import { UndiciHttpHandler } from '@smithy/undici-http-handler';
import { SDK_LOGGER } from './sdk-logger.ts';

/** A new client's logger and request handler (a handler each: a client's destroy() ends only its own). */
export function sdkClientConfig(): { logger: typeof SDK_LOGGER; requestHandler: UndiciHttpHandler } {
  return { logger: SDK_LOGGER, requestHandler: new UndiciHttpHandler() };
}
