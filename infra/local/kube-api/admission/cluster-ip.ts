/**
 * Service ClusterIP allocation (`pkg/registry/core/service/ipallocator`, `storage/alloc.go`), run as the
 * last admission step so the POST response already carries `spec.clusterIP` and `spec.clusterIPs`.
 *
 * The allocated set is the store itself (every stored Service's clusterIPs): the store admits and
 * commits a write synchronously, so it is rebuilt from the store at start, an IP is free again once its
 * Service is gone, and a create rejected after admission holds nothing. The first address belongs to the `kubernetes` Service; dynamic picks come from the
 * upper part of the range (ServiceIPStaticSubrange), the lower band is kept for requested IPs.
 */
import type { AdmissionPlugin, AdmissionRequest, KubeObject, Store } from '../types.ts';
import { StatusError } from '../types.ts';
import { ipv4ToNumber, numberToIpv4 } from '../kinds/common/ip.ts';
import { invalid as invalidStatus } from '../errors.ts';
import { AllocationError, ServiceCidrError } from './errors.ts';

/**
 * An IPv4 range allocator over a store of Services.
 *
 * @example
 * const allocator = new ClusterIPAllocator('10.96.0.0/12');
 * allocator.kubernetesServiceIP;                          // '10.96.0.1'
 * allocator.allocate(store, 'default/db');                // e.g. '10.101.7.42' (upper band)
 * allocator.allocate(store, 'default/fixed', '10.96.0.10'); // '10.96.0.10', or AllocationError if taken
 */
export class ClusterIPAllocator {
  readonly cidr: string;
  /** First usable address (network + 1) as a number; index 0 of the range. */
  readonly #base: number;
  /** Usable addresses (network and broadcast excluded). */
  readonly #size: number;
  /** Size of the lower band reserved for requested IPs. */
  readonly #offset: number;

  constructor(cidr: string) {
    const m = /^(\d+\.\d+\.\d+\.\d+)\/(\d+)$/.exec(cidr);
    const ip = m ? ipv4ToNumber(m[1]) : undefined;
    const prefix = m ? Number(m[2]) : NaN;
    if (ip === undefined || !(prefix >= 0 && prefix <= 30)) throw new ServiceCidrError(cidr);
    const total = 2 ** (32 - prefix);
    const network = ip - (ip % total);
    this.cidr = `${numberToIpv4(network)}/${prefix}`;
    this.#base = network + 1;
    this.#size = total - 2;
    this.#offset = total <= 16 ? 0 : Math.min(256, Math.max(16, Math.floor(total / 16)));
  }

  /** The address of the `kubernetes` Service (first in range). */
  get kubernetesServiceIP(): string {
    return numberToIpv4(this.#base);
  }

  /** Whether `ip` lies in the usable range. */
  contains(ip: string): boolean {
    const n = ipv4ToNumber(ip);
    return n !== undefined && n >= this.#base && n < this.#base + this.#size;
  }

  /** Every IP held by a stored Service other than `exceptKey` (`namespace/name`). */
  used(store: Store, exceptKey?: string): Set<string> {
    const used = new Set<string>();
    for (const svc of store.list('/services')) {
      if (`${svc.metadata.namespace}/${svc.metadata.name}` === exceptKey) continue;
      for (const ip of clusterIPsOf(svc)) used.add(ip);
    }
    return used;
  }

  /**
   * Allocates `requested` (validated) or the next free address for the Service `key`.
   * Throws {@link AllocationError} when the request cannot be satisfied.
   */
  allocate(store: Store, key: string, requested?: string): string {
    const used = this.used(store, key);
    if (requested !== undefined) {
      if (!this.contains(requested)) {
        throw new AllocationError(`the provided IP (${requested}) is not in the valid range. The range of valid IPs is ${this.cidr}`);
      }
      if (used.has(requested) || (requested === this.kubernetesServiceIP && key !== 'default/kubernetes')) {
        throw new AllocationError('provided IP is already allocated');
      }
      return requested;
    }
    // Index 0 is the kubernetes Service's; dynamic picks start in the upper band at a random point.
    const pick = (from: number, to: number): string | undefined => {
      const span = to - from;
      if (span <= 0) return undefined;
      const start = Math.floor(Math.random() * span);
      for (let i = 0; i < span; i++) {
        const idx = from + ((start + i) % span);
        const ip = numberToIpv4(this.#base + idx);
        if (!used.has(ip)) return ip;
      }
      return undefined;
    };
    const ip = pick(Math.max(this.#offset, 1), this.#size) ?? pick(1, Math.max(this.#offset, 1));
    if (!ip) throw new AllocationError('range is full');
    return ip;
  }
}

/** The cluster IPs a Service holds (`None` excluded). */
export function clusterIPsOf(svc: KubeObject): string[] {
  const ips: string[] = Array.isArray(svc.spec?.clusterIPs) && svc.spec.clusterIPs.length ? svc.spec.clusterIPs : svc.spec?.clusterIP ? [svc.spec.clusterIP] : [];
  return ips.filter((ip) => ip && ip !== 'None');
}

function allocationFailure(svc: KubeObject, ips: string[], ip: string | undefined, err: AllocationError): StatusError {
  const detail = ip === undefined ? `failed to allocate a serviceIP: ${err.message}` : `failed to allocate IP ${ip}: ${err.message}`;
  if (ip === undefined) return new StatusError(500, 'InternalError', `Internal error occurred: ${detail}`, { causes: [{ message: detail }] });
  return invalidStatus('Service', '', svc.metadata.name ?? '', [{ type: 'FieldValueInvalid', field: 'spec.clusterIPs', value: ips, detail }]);
}

/** Creates the ClusterIP allocation step over `serviceCidr`. */
export function clusterIPAllocation(serviceCidr: string): AdmissionPlugin & { allocator: ClusterIPAllocator } {
  const allocator = new ClusterIPAllocator(serviceCidr);
  return {
    name: 'ServiceClusterIPAllocation',
    allocator,
    admit(req: AdmissionRequest): void {
      if (req.resource !== '/services' || req.subresource) return;
      if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return;
      const svc = req.object;
      const spec = (svc.spec ??= {});
      if ((spec.type ?? 'ClusterIP') === 'ExternalName') return;
      if (req.operation === 'UPDATE' && req.old && (req.old.spec?.type ?? 'ClusterIP') !== 'ExternalName') return;
      const requested: string | undefined = spec.clusterIP || (Array.isArray(spec.clusterIPs) ? spec.clusterIPs[0] : undefined) || undefined;
      if (requested === 'None') {
        spec.clusterIP = 'None';
        spec.clusterIPs = ['None'];
        return;
      }
      // Unparseable requests are left for validation to reject.
      if (requested !== undefined && ipv4ToNumber(requested) === undefined) return;
      const key = `${svc.metadata.namespace}/${svc.metadata.name}`;
      try {
        const ip = allocator.allocate(req.store, key, requested);
        spec.clusterIP = ip;
        spec.clusterIPs = [ip, ...(Array.isArray(spec.clusterIPs) ? spec.clusterIPs.slice(1) : [])];
      } catch (err) {
        if (err instanceof AllocationError) throw allocationFailure(svc, spec.clusterIPs ?? [requested], requested, err);
        throw err;
      }
    },
  };
}
