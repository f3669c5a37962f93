/**
 * Test helpers: start an emulator and get `@kubernetes/client-node` clients for it over real HTTP.
 */
import { CoordinationV1Api, CoreV1Api, KubeConfig, StorageV1Api, Watch } from '@kubernetes/client-node';
import { startKubeApi, type KubeApi, type KubeApiOptions } from '../index.ts';
import { fixtureKinds } from './fixture-kinds.ts';

/** An emulator with clients bound to it. */
export interface Harness {
  api: KubeApi;
  kc: KubeConfig;
  core: CoreV1Api;
  storage: StorageV1Api;
  coordination: CoordinationV1Api;
  watch: Watch;
  /** Raw HTTP against the emulator: status, parsed body (or text), headers. */
  http(path: string, init?: { method?: string; body?: unknown; contentType?: string; accept?: string }): Promise<{ status: number; body: any; headers: Headers }>;
}

/** Starts an emulator (generic fixture kinds unless `options.kinds` is given) and clients for it. */
export async function startHarness(options: KubeApiOptions = {}): Promise<Harness> {
  const api = await startKubeApi({ kinds: fixtureKinds(), ...options });
  const kc = new KubeConfig();
  kc.loadFromString(api.kubeconfig());
  return {
    api, kc,
    core: kc.makeApiClient(CoreV1Api),
    storage: kc.makeApiClient(StorageV1Api),
    coordination: kc.makeApiClient(CoordinationV1Api),
    watch: new Watch(kc),
    async http(path, init = {}) {
      const body = init.body === undefined ? undefined : typeof init.body === 'string' ? init.body : JSON.stringify(init.body);
      const res = await fetch(api.url + path, {
        method: init.method ?? 'GET',
        headers: {
          ...(body !== undefined ? { 'Content-Type': init.contentType ?? 'application/json' } : {}),
          ...(init.accept ? { Accept: init.accept } : {}),
        },
        ...(body !== undefined ? { body } : {}),
      });
      const text = await res.text();
      let parsed: any = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // not JSON: keep the text
      }
      return { status: res.status, body: parsed, headers: res.headers };
    },
  };
}

/** The parsed Status body of a client-node ApiException. */
export function statusOf(err: unknown): { code: number; reason: string; message: string; details?: any } {
  const e = err as { code?: number; body?: unknown };
  const body = typeof e.body === 'string' ? JSON.parse(e.body) : e.body;
  return body as { code: number; reason: string; message: string; details?: any };
}

/** Awaits a rejected promise and returns its Status body. */
export async function rejection(p: Promise<unknown>): Promise<{ code: number; reason: string; message: string; details?: any }> {
  try {
    await p;
  } catch (err) {
    return statusOf(err);
  }
  throw new Error('expected the request to fail');
}

/** Collects watch events through client-node's Watch until `until` returns true or `timeoutMs` passes. */
export async function collectWatch(h: Harness, path: string, query: Record<string, string | number | boolean | undefined>,
  until: (events: Array<{ type: string; object: any }>) => boolean, timeoutMs = 5000, onReady?: () => Promise<void> | void):
  Promise<Array<{ type: string; object: any }>> {
  const events: Array<{ type: string; object: any }> = [];
  let resolveDone!: () => void;
  const done = new Promise<void>((r) => { resolveDone = r; });
  const controller = await h.watch.watch(path, query, (type, object) => {
    events.push({ type, object });
    if (until(events)) resolveDone();
  }, () => resolveDone());
  if (onReady) await onReady();
  if (until(events)) resolveDone();
  const timer = setTimeout(resolveDone, timeoutMs);
  await done;
  clearTimeout(timer);
  controller.abort();
  return events;
}
