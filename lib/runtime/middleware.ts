/**
 * The claimflow middy middleware: builds a function's runtime context (clients, tables, API budgets, the
 * controller) once per container, on the first invocation, and hands it to the handler as
 * `context.claimflow`. Powertools' own middlewares do the rest of the chain (`injectLambdaContext`,
 * `logMetrics`).
 *
 * @example
 * export const handler = middy(reconcileBatch)
 *   .use(injectLambdaContext(logger))
 *   .use(logMetrics(metrics, { captureColdStartMetric: true }))
 *   .use(claimflow(() => new SqsRuntime(createBinderController(), { logger, metrics })));
 */
import type { Context } from 'aws-lambda';
import type { MiddlewareObj } from '@middy/core';

/** A Lambda context carrying what {@link claimflow} built. */
export type ClaimflowContext<T> = Context & { claimflow: T };

/** Builds `T` once (at the first invocation) and sets it as `context.claimflow` on every invocation. */
export function claimflow<T>(build: () => T): MiddlewareObj<unknown, unknown, Error, ClaimflowContext<T>> {
  let built: { value: T } | undefined;
  return {
    before: (request) => {
      built ??= { value: build() };
      request.context.claimflow = built.value;
    },
  };
}

/** Lambda's context when there is one: middy hands `{}` to a handler called without a context (tests, scripts). */
export function lambdaContextOf(context: Context | undefined): Context | undefined {
  return typeof context?.getRemainingTimeInMillis === 'function' ? context : undefined;
}

/** What a function exports: Lambda always passes a context, tests and scripts may not (middy then uses `{}`). */
export type EntryPoint<E, R> = (event: E, context?: Context) => Promise<R>;

/** Types a middy chain as an {@link EntryPoint}. */
export function entryPoint<E, R>(chain: (event: E, context: never) => Promise<R>): EntryPoint<E, R> {
  return chain as unknown as EntryPoint<E, R>;
}
