/**
 * The emulator's admission chain, in upstream order: NamespaceLifecycle, DefaultStorageClass,
 * StorageObjectInUseProtection, PersistentVolumeClaimResize, then Service ClusterIP and NodePort
 * allocation (upstream: inside the Service REST create, so the response carries them).
 */
import type { AdmissionPlugin } from '../types.ts';
import { clusterIPAllocation } from './cluster-ip.ts';
import { defaultStorageClass } from './default-storage-class.ts';
import { namespaceLifecycle } from './namespace-lifecycle.ts';
import { nodePortAllocation } from './node-port.ts';
import { persistentVolumeClaimResize } from './persistent-volume-claim-resize.ts';
import { storageObjectInUseProtection } from './storage-object-in-use-protection.ts';

export interface AdmissionOptions {
  /** The service IP range, IPv4 CIDR (default 10.96.0.0/12). */
  serviceCidr?: string;
}

/** The default service CIDR. */
export const DEFAULT_SERVICE_CIDR = '10.96.0.0/12';

/** Creates the admission plugins, in the order they run. */
export function createAdmissionPlugins(options: AdmissionOptions = {}): AdmissionPlugin[] {
  return [
    namespaceLifecycle(),
    defaultStorageClass(),
    storageObjectInUseProtection(),
    persistentVolumeClaimResize(),
    clusterIPAllocation(options.serviceCidr ?? DEFAULT_SERVICE_CIDR),
    nodePortAllocation(),
  ];
}

export { ClusterIPAllocator, clusterIPsOf } from './cluster-ip.ts';
export { AllocationError, ServiceCidrError } from './errors.ts';
export { getDefaultClass } from './default-storage-class.ts';
export { NodePortAllocator, needsNodePort } from './node-port.ts';
export { IMMORTAL_NAMESPACES } from './namespace-lifecycle.ts';
export { PV_PROTECTION_FINALIZER, PVC_PROTECTION_FINALIZER } from './storage-object-in-use-protection.ts';
