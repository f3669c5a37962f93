/**
 * Deadlines as abort signals: every storage and Kubernetes call of a pass or a volume step carries a signal
 * that fires at the step's deadline, so a slow API ends in a clean abort before the Lambda timeout instead of
 * a killed invocation.
 *
 * @example
 * const signal = signalUntil(stopAt, parent);
 * await storage.listSharedVolumes({ signal });
 * await core.readNamespacedService({ name, namespace }, kubeCallOptions(signal));
 */
import { Observable, type CoreV1Api, type ObservableMiddleware, type RequestContext, type ResponseContext } from '@kubernetes/client-node';
import { BudgetTimeoutError } from '../state/bucket.ts';

/** A signal that aborts at `deadline` (epoch ms; `Infinity` = never) or when `parent` aborts. */
export function signalUntil(deadline: number, parent?: AbortSignal, now: () => number = Date.now): AbortSignal | undefined {
  if (!Number.isFinite(deadline)) return parent;
  const timeout = AbortSignal.timeout(Math.max(0, Math.floor(deadline - now())));
  return parent ? AbortSignal.any([parent, timeout]) : timeout;
}

/** The per-call options of a client-node API method. */
export type KubeCallOptions = Parameters<CoreV1Api['readNamespacedService']>[1];

/**
 * Per-call options of a client-node API method that attach `signal` to the request; the client's own
 * middleware (the request budget) still runs first. The object-parameter API hands per-call middleware to the
 * Observable API as it is, so this one is an Observable middleware.
 */
export function kubeCallOptions(signal: AbortSignal | undefined): KubeCallOptions {
  if (signal === undefined) return undefined;
  const attach: ObservableMiddleware = {
    pre: (context: RequestContext): Observable<RequestContext> => {
      context.setSignal(signal);
      return new Observable(Promise.resolve(context));
    },
    post: (context: ResponseContext): Observable<ResponseContext> => new Observable(Promise.resolve(context)),
  };
  return { middleware: [attach], middlewareMergeStrategy: 'append' };
}

/** Whether `error` came from running out of time: the step's signal fired, or the API budget would wait past it. */
export function isOutOfTime(error: unknown, signal: AbortSignal | undefined): boolean {
  if (signal?.aborted) return true;
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof BudgetTimeoutError) return true;
  }
  return false;
}
