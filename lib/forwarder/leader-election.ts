/**
 * Leader election on a `coordination.k8s.io/v1` Lease, with client-go's `leaderelection` semantics:
 *
 * - A candidate tries to acquire every `retryPeriod` (jittered ×1.2). It may take the lease when the lease
 *   is absent, unheld (empty holder: released) or expired — expiry is judged on the local clock from when
 *   this candidate last *observed the record change*, plus `leaseDuration`, never from the holder's
 *   timestamps (clock skew).
 * - The leader renews every `retryPeriod`; if no renewal succeeded for `renewDeadline`, it stops leading.
 * - Every write carries the lease's resourceVersion (optimistic concurrency: a 409 loses the round).
 * - {@link LeaderElector.stop} releases a held lease (empty holder, `leaseDurationSeconds: 1`) so the
 *   standby takes over after one retry period instead of a whole lease duration.
 *
 * @example
 * const elector = new LeaderElector(kube, { namespace: 'claimflow', name: 'forwarder', identity: podName,
 *   onStartedLeading: () => start(), onStoppedLeading: () => stop() });
 * elector.start();
 * await elector.stop(); // releases
 */
import { KubeApiError } from './errors.ts';
import type { KubeTransport } from './kube-transport.ts';

export interface LeaderElectionConfig {
  namespace: string;
  name: string;
  identity: string;
  /** Default 15000 ms. */
  leaseDurationMs?: number;
  /** Default 10000 ms. */
  renewDeadlineMs?: number;
  /** Default 2000 ms. */
  retryPeriodMs?: number;
}

export interface LeaderCallbacks {
  onStartedLeading(): void | Promise<void>;
  onStoppedLeading(): void | Promise<void>;
  onError?(err: unknown): void;
}

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

/** MicroTime as the API server writes it: `2006-01-02T15:04:05.000000Z`. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

const JITTER = 1.2;

/** See the module comment. */
export class LeaderElector {
  #kube: KubeTransport;
  #config: Required<LeaderElectionConfig>;
  #callbacks: LeaderCallbacks;
  #leading = false;
  #observedRecord = '';
  #observedTime = 0;
  #abort = new AbortController();
  #loop: Promise<void> | undefined;
  /** Per-request timeout: a hung request must not outlive the renew deadline. */
  #requestTimeoutMs: number;
  #wakeSleep: (() => void) | undefined;

  constructor(kube: KubeTransport, config: LeaderElectionConfig & LeaderCallbacks) {
    this.#kube = kube;
    this.#config = {
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
      ...config,
    } as Required<LeaderElectionConfig>;
    this.#callbacks = config;
    this.#requestTimeoutMs = Math.max(1, Math.min(5_000, Math.floor(this.#config.renewDeadlineMs / 2)));
    if (this.#config.leaseDurationMs <= this.#config.renewDeadlineMs) throw new RangeError('leaseDuration must be greater than renewDeadline');
    if (this.#config.renewDeadlineMs <= JITTER * this.#config.retryPeriodMs) throw new RangeError('renewDeadline must be greater than retryPeriod*1.2');
  }

  get isLeader(): boolean {
    return this.#leading;
  }

  get #path(): string {
    return `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(this.#config.namespace)}/leases`;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  /** Stops campaigning; releases the lease if held (after `beforeRelease`, e.g. a final flush). */
  async stop(beforeRelease?: () => Promise<void>): Promise<void> {
    this.#abort.abort();
    this.#wakeSleep?.();
    await this.#loop;
    if (this.#leading) {
      await beforeRelease?.();
      await this.#release().catch((err) => this.#callbacks.onError?.(err));
      this.#leading = false;
      await this.#callbacks.onStoppedLeading();
    }
  }

  async #run(): Promise<void> {
    const { retryPeriodMs, renewDeadlineMs } = this.#config;
    while (!this.#abort.signal.aborted) {
      // Acquire.
      let acquired = false;
      while (!this.#abort.signal.aborted && !(acquired = await this.#tryAcquireOrRenew())) {
        await this.#sleep(retryPeriodMs * (1 + Math.random() * (JITTER - 1)));
      }
      if (!acquired) return;
      this.#leading = true;
      await this.#callbacks.onStartedLeading();
      // Renew until a renewal deadline passes without success.
      let lastRenew = Date.now();
      while (!this.#abort.signal.aborted) {
        await this.#sleep(retryPeriodMs);
        if (this.#abort.signal.aborted) return;
        if (await this.#tryAcquireOrRenew()) lastRenew = Date.now();
        else if (Date.now() - lastRenew >= renewDeadlineMs) break;
      }
      if (this.#abort.signal.aborted) return;
      this.#leading = false;
      await this.#callbacks.onStoppedLeading();
    }
  }

  async #tryAcquireOrRenew(): Promise<boolean> {
    const { namespace, name, identity, leaseDurationMs } = this.#config;
    const now = Date.now();
    const desired: LeaseSpec = {
      holderIdentity: identity,
      leaseDurationSeconds: Math.max(1, Math.round(leaseDurationMs / 1000)),
      acquireTime: microTime(now),
      renewTime: microTime(now),
      leaseTransitions: 0,
    };
    try {
      let lease: any;
      try {
        lease = await this.#kube.request('GET', `${this.#path}/${encodeURIComponent(name)}`, undefined, undefined, this.#requestTimeoutMs);
      } catch (err) {
        if (!(err instanceof KubeApiError && err.code === 404)) throw err;
        const created = await this.#kube.request('POST', this.#path, {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name, namespace },
          spec: desired,
        }, undefined, this.#requestTimeoutMs);
        this.#observe(created.spec, now);
        return true;
      }
      const spec: LeaseSpec = lease.spec ?? {};
      if (JSON.stringify(spec) !== this.#observedRecord) this.#observe(spec, now);
      const holder = spec.holderIdentity ?? '';
      if (holder !== '' && holder !== identity && this.#observedTime + leaseDurationMs > now) return false;
      if (holder === identity) {
        desired.acquireTime = spec.acquireTime ?? desired.acquireTime;
        desired.leaseTransitions = spec.leaseTransitions ?? 0;
      } else {
        desired.leaseTransitions = (spec.leaseTransitions ?? 0) + 1;
      }
      const updated = await this.#kube.request('PUT', `${this.#path}/${encodeURIComponent(name)}`, {
        ...lease,
        spec: desired,
      }, undefined, this.#requestTimeoutMs);
      this.#observe(updated.spec, now);
      return true;
    } catch (err) {
      if (!(err instanceof KubeApiError && err.code === 409)) this.#callbacks.onError?.(err);
      return false;
    }
  }

  async #release(): Promise<void> {
    const { name, identity } = this.#config;
    const lease = await this.#kube.request('GET', `${this.#path}/${encodeURIComponent(name)}`, undefined, undefined, this.#requestTimeoutMs);
    if (lease.spec?.holderIdentity !== identity) return;
    const now = microTime(Date.now());
    await this.#kube.request('PUT', `${this.#path}/${encodeURIComponent(name)}`, {
      ...lease,
      spec: { leaseDurationSeconds: 1, acquireTime: now, renewTime: now, leaseTransitions: lease.spec?.leaseTransitions ?? 0 },
    }, undefined, this.#requestTimeoutMs);
  }

  #observe(spec: LeaseSpec, now: number): void {
    this.#observedRecord = JSON.stringify(spec ?? {});
    this.#observedTime = now;
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.#abort.signal.aborted) return resolve();
      const timer = setTimeout(done, ms);
      const wake = () => done();
      this.#wakeSleep = wake;
      function done() {
        clearTimeout(timer);
        resolve();
      }
    });
  }
}
