/**
 * Service NodePort allocation (`pkg/registry/core/service/portallocator`, `storage/alloc.go`
 * `allocNodePorts`): NodePort and LoadBalancer Services get a port from 30000-32767 per service port
 * inside the create (or the type change), requested ports are checked, and the allocated set is the
 * store itself, so ports are free again once their Service is gone.
 */
import type { AdmissionPlugin, AdmissionRequest, KubeObject, Store } from '../types.ts';
import { invalid as invalidStatus } from '../errors.ts';
import { AllocationError } from './errors.ts';

/** The default `--service-node-port-range`. */
export const DEFAULT_NODE_PORT_RANGE = { base: 30000, size: 2768 };

/** `needsNodePort`: NodePort, and LoadBalancer unless `allocateLoadBalancerNodePorts: false`. */
export function needsNodePort(svc: KubeObject): boolean {
  const type = svc.spec?.type ?? 'ClusterIP';
  return type === 'NodePort' || (type === 'LoadBalancer' && svc.spec?.allocateLoadBalancerNodePorts !== false);
}

/**
 * A node-port range allocator over a store of Services.
 *
 * @example
 * const ports = new NodePortAllocator();
 * ports.allocate(store, 'default/web');        // e.g. 31245 (upper band)
 * ports.allocate(store, 'default/fixed', 30080); // 30080, or AllocationError if taken
 */
export class NodePortAllocator {
  readonly #base: number;
  readonly #size: number;
  /** Static band kept for requested ports (ServiceNodePortStaticSubrange: min(max(16, size/32), 128)). */
  readonly #offset: number;

  constructor(range: { base: number; size: number } = DEFAULT_NODE_PORT_RANGE) {
    this.#base = range.base;
    this.#size = range.size;
    this.#offset = range.size <= 16 ? 0 : Math.min(128, Math.max(16, Math.floor(range.size / 32)));
  }

  /** The range as upstream prints it: `30000-32767`. */
  get range(): string {
    return `${this.#base}-${this.#base + this.#size - 1}`;
  }

  /** Every node port held by a stored Service other than `exceptKey` (`namespace/name`). */
  used(store: Store, exceptKey?: string): Set<number> {
    const used = new Set<number>();
    for (const svc of store.list('/services')) {
      if (`${svc.metadata.namespace}/${svc.metadata.name}` === exceptKey) continue;
      for (const p of svc.spec?.ports ?? []) if (p.nodePort) used.add(p.nodePort);
      if (svc.spec?.healthCheckNodePort) used.add(svc.spec.healthCheckNodePort);
    }
    return used;
  }

  /** Checks a requested port against the range and `used`. */
  claim(port: number, used: Set<number>): number {
    if (port < this.#base || port >= this.#base + this.#size) {
      throw new AllocationError(`provided port is not in the valid range. The range of valid ports is ${this.range}`);
    }
    if (used.has(port)) throw new AllocationError('provided port is already allocated');
    used.add(port);
    return port;
  }

  /** A free port, from the upper band first (random start), then the static band. */
  next(used: Set<number>): number {
    const pick = (from: number, to: number): number | undefined => {
      const span = to - from;
      if (span <= 0) return undefined;
      const start = Math.floor(Math.random() * span);
      for (let i = 0; i < span; i++) {
        const port = this.#base + from + ((start + i) % span);
        if (!used.has(port)) return port;
      }
      return undefined;
    };
    const port = pick(this.#offset, this.#size) ?? pick(0, this.#offset);
    if (port === undefined) throw new AllocationError('range is full');
    used.add(port);
    return port;
  }

  /** Allocates `requested` or a fresh port for `key`. */
  allocate(store: Store, key: string, requested?: number): number {
    const used = this.used(store, key);
    return requested ? this.claim(requested, used) : this.next(used);
  }
}

/** Creates the NodePort allocation step. */
export function nodePortAllocation(): AdmissionPlugin & { allocator: NodePortAllocator } {
  const allocator = new NodePortAllocator();
  return {
    name: 'ServiceNodePortAllocation',
    allocator,
    admit(req: AdmissionRequest): void {
      if (req.resource !== '/services' || req.subresource) return;
      if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return;
      const svc = req.object;
      if (!needsNodePort(svc) || !Array.isArray(svc.spec?.ports)) return;
      const key = `${svc.metadata.namespace}/${svc.metadata.name}`;
      const used = allocator.used(req.store, key);
      // Ports this Service already holds stay its own (an update keeping them is not a clash).
      const own = new Set<number>((req.old?.spec?.ports ?? []).map((p: { nodePort?: number }) => p.nodePort).filter(Boolean));
      // The same port number over TCP and UDP shares one node port, as upstream allows.
      const byPort = new Map<number, number>();
      svc.spec.ports.forEach((p: { port: number; nodePort?: number }, i: number) => {
        try {
          if (p.nodePort) {
            if (!own.has(p.nodePort) && byPort.get(p.port) !== p.nodePort) allocator.claim(p.nodePort, used);
          } else {
            p.nodePort = byPort.get(p.port) ?? allocator.next(used);
          }
          byPort.set(p.port, p.nodePort);
        } catch (err) {
          if (!(err instanceof AllocationError)) throw err;
          throw invalidStatus('Service', '', svc.metadata.name ?? '', [{ type: 'FieldValueInvalid', field: `spec.ports[${i}].nodePort`, value: p.nodePort, detail: err.message }]);
        }
      });
    },
  };
}
