/**
 * What every AWS SDK client of claimflow is built with: the silent logger without `info` or `error`
 * ({@link SDK_LOGGER}), undici as its HTTP client and a SHA-256 whose HMACs skip Node 24's slow key check
 * ({@link Sha256}, `sdk-sha256.ts`).
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
import { Sha256 } from './sdk-sha256.ts';

/** A new client's logger, request handler (a handler each: a client's destroy() ends only its own) and hash. */
export function sdkClientConfig(): { logger: typeof SDK_LOGGER; requestHandler: UndiciHttpHandler; sha256: typeof Sha256 } {
  return { logger: SDK_LOGGER, requestHandler: new UndiciHttpHandler(), sha256: Sha256 };
}

/**
 * Returns `client` with its resolved configuration held by V8 as a fast-properties object again.
 *
 * The SDK builds a client's configuration as a plain object, then redefines its `credentials` as an
 * accessor, which makes V8 keep the whole object as a dictionary. Every request copies that object into
 * new ones four times (`{ ...config, ...context }` in the serializer, the deserializer and the endpoint
 * middleware, and once more for the SigV4 signer built per request): ~17 µs a copy from a dictionary here,
 * ~2.5 µs from a fast object. V8 makes an object fast again when a property is first read through it as a
 * prototype from code that keeps feedback, which a function gets after a few calls; so the probe below
 * reads through it sixteen times. The object is the same one the
 * client's middlewares hold, changed only in how V8 stores it; if V8 ever stops doing this, the cost comes
 * back and nothing else changes (`test/state/client.test.ts` checks it with V8's own test hook).
 * Call it last, after anything that adds to the configuration (the document client adds its
 * `translateConfig`).
 */
export function withFastConfig<C extends { config: object }>(client: C): C {
  const probe: unknown = Object.create(client.config);
  for (let i = 0; i < 16; i++) readThrough(probe);
  return client;
}

function readThrough(probe: unknown): unknown {
  return (probe as { region?: unknown }).region;
}

/** The part of a client's middleware stack that changes it (each takes the stack's own arguments). */
const STACK_CHANGES = ['add', 'addRelativeTo', 'remove', 'removeByTag', 'use'] as const;

/**
 * Calls `changed` after every later change of `stack` (a middleware added or removed), so a handler built
 * from the stack before the change is not used after it.
 */
export function onStackChange(stack: object, changed: () => void): void {
  const methods = stack as Record<string, (...args: unknown[]) => unknown>;
  for (const name of STACK_CHANGES) {
    const original = methods[name];
    if (typeof original !== 'function') continue;
    methods[name] = (...args: unknown[]) => {
      try {
        return original.apply(stack, args);
      } finally {
        changed();
      }
    };
  }
}

/**
 * Returns `client` building each command class's middleware chain once instead of on every call.
 *
 * Without it, each `send` copies the client's middleware stack, adds the command's own middlewares to the
 * copy (endpoint, serializer, deserializer), sorts it and wraps the result into a chain of closures, to be
 * thrown away when the call ends. The SDK's `cacheMiddleware` option keeps the chain per command class
 * instead: it is built from the same stack and takes the command as its argument, so every call still
 * sends its own input. The SDK keeps a chain until the client is destroyed; here a middleware added to
 * (or removed from) the client's stack afterwards drops the kept chains, as the SDK documents one should
 * not do but our own meters and tests do. A call with options (an abort signal) builds a chain of its own,
 * as the SDK's does, but leaves the kept ones as they are (the SDK's `send` would drop them all).
 *
 * A kept chain shares one handler context among the calls of its class, and the SDK's middlewares write
 * what they resolve for a call there (endpoint, signing region, the chosen credentials) for its later
 * steps to read. That holds while every call of a class resolves the same: one region and endpoint per
 * client, tables and queues named rather than given as ARNs of other regions or accounts, as everywhere
 * in claimflow (two calls racing a credentials refresh may sign with each other's, equally valid, keys).
 *
 * `npm run bench:aws-sdk`: with no transport, CPU per GetItem / PutItem ~20 % less (the document client,
 * lib/state/client.ts, which does the same for its commands).
 */
export function withCachedHandlers<C extends { config: object; middlewareStack: object; send: unknown }>(client: C): C {
  if ((client.config as { cacheMiddleware?: boolean }).cacheMiddleware !== true) throw new Error('withCachedHandlers: build the client with cacheMiddleware: true');
  onStackChange(client.middlewareStack, () => delete (client as { handlers?: unknown }).handlers);
  const send = (client.send as (...args: unknown[]) => unknown).bind(client);
  client.send = ((command: OwnChain, options?: unknown, callback?: unknown) => {
    if (options === undefined || typeof options === 'function' || callback !== undefined) return send(command, options, callback);
    return command.resolveMiddleware(client.middlewareStack, client.config, options)(command).then((result) => result.output);
  }) as C['send'];
  return client;
}

/** What a command builds its chain with (the SDK's `Command`). */
interface OwnChain {
  resolveMiddleware(stack: object, config: object, options: unknown): (command: unknown) => Promise<{ output: unknown }>;
}
