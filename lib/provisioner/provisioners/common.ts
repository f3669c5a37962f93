/**
 * What both storage-backed Provisioners share: the selector refusal, the requested size, the CSI labels, create-or-adopt
 * (idempotent provisioning), the PV skeleton, and the mapping of storage errors to provisioning outcomes.
 */
import { quantityBytes } from '../../kube/quantity.ts';
import { AlreadyExistsError, BadRequestError, LicenceError, RetriesExhaustedError, StorageApiError } from '../../storage/errors.ts';
import { LABELS, type CreateVolumeRequest, type Volume, type VolumeProvisioner } from '../../storage/types.ts';
import { InfeasibleError } from '../errors.ts';
import type { PersistentVolume, PersistentVolumeClaim } from '../../kube/objects.ts';
import type { ProvisionContext, ProvisionOptions, ProvisionResult } from '../types.ts';

/** csi-provisioner's error text for a claim with `spec.selector`. */
export const claimSelectorNotSupported = 'claim Selector is not supported';

/**
 * Refuses a claim with a label selector, as the CSI external-provisioner does (`prepareProvision`, checked
 * before the size is read): a selector asks for an existing volume with those labels, which a fresh volume
 * cannot honour. Upstream answers `ProvisioningFinished` with a plain error: a `ProvisioningFailed` event
 * with the error's text, no in-progress record, and retries with the normal backoff (it is not an
 * `InvalidArgument`, so no slow retry). Any selector counts, even an empty one (`!= nil` upstream).
 */
export function refuseSelector(options: ProvisionOptions): ProvisionResult | undefined {
  const selector = options.pvc.spec.selector;
  if (selector === undefined || selector === null) return undefined;
  return { state: 'Finished', error: new Error(claimSelectorNotSupported) };
}

/** The claim's requested storage in bytes; an absent or unusable request is infeasible. */
export function requestedBytes(claim: PersistentVolumeClaim): { bytes: number; quantity: string } {
  const quantity = claim.spec.resources?.requests?.storage;
  if (quantity === undefined) throw new InfeasibleError('claim does not request storage (spec.resources.requests.storage)');
  let bytes: bigint;
  try {
    bytes = quantityBytes(quantity);
  } catch {
    throw new InfeasibleError(`invalid storage request "${quantity}"`);
  }
  if (bytes <= 0n) throw new InfeasibleError(`storage request must be positive, got "${quantity}"`);
  if (bytes > BigInt(Number.MAX_SAFE_INTEGER)) throw new InfeasibleError(`storage request "${quantity}" is too large`);
  return { bytes: Number(bytes), quantity };
}

/** The labels the CSI external-provisioner passes (`--extra-create-metadata`): PV name, PVC name and namespace. */
export function csiLabels(options: ProvisionOptions): Record<string, string> {
  return {
    [LABELS.pvName]: options.pvName,
    [LABELS.pvcName]: options.pvc.metadata.name ?? '',
    [LABELS.pvcNamespace]: options.pvc.metadata.namespace ?? '',
  };
}

/** StorageClass parameters that are StorageOS volume labels (`storageos.com/replicas`, `storageos.com/nocache`, …). */
export function storageosLabelParameters(parameters: Record<string, string> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(parameters ?? {}).filter(([k]) => k.startsWith(LABELS.reservedPrefix)));
}

/** The filesystem to format: `csi.storage.k8s.io/fstype` (or legacy `fsType`) parameter, `block` for Block claims, else ext4. */
export function fsTypeFor(options: ProvisionOptions): string {
  if (options.pvc.spec.volumeMode === 'Block') return 'block';
  const p = options.storageClass.parameters ?? {};
  return p['csi.storage.k8s.io/fstype'] ?? p.fsType ?? 'ext4';
}

/** Whether a volume named after `pvName` is that PV's: labelled for it, or not labelled at all. */
export function madeForVolume(volume: Volume, pvName: string): boolean {
  const owner = volume.labels[LABELS.pvName];
  return owner === undefined || owner === pvName;
}

/**
 * Creates the volume, or adopts the one a previous attempt created (the name is the PV name, unique in
 * the namespace). A same-named volume made for another PV is refused.
 */
export async function createOrAdopt(storage: VolumeProvisioner, request: CreateVolumeRequest, ctx: ProvisionContext): Promise<Volume> {
  try {
    return await storage.createVolume(request, { signal: ctx.signal });
  } catch (err) {
    if (!(err instanceof AlreadyExistsError)) throw mapStorageError(err);
    const existing = await storage.getVolumeByName(request.namespace, request.name, { signal: ctx.signal });
    if (!existing) throw err;
    if (!madeForVolume(existing, request.name)) {
      throw new Error(`volume ${request.namespace}/${request.name} exists and belongs to PV ${existing.labels[LABELS.pvName]}`, { cause: err });
    }
    return existing;
  }
}

/**
 * Whether a failed create may have made the volume or still be making it (the CSI external-provisioner's
 * `checkError`): no answer (connection dropped, timeout, the response lost after the create), a 5xx or 429
 * after the call's own retries, the call cancelled, or anything unknown. Only an answer that says the create
 * did not happen is final: a 4xx, an infeasible request, a name owned by another PV.
 */
export function createMayBeUnderWay(err: unknown): boolean {
  const last = err instanceof RetriesExhaustedError ? err.cause : err;
  if (last instanceof InfeasibleError || (last instanceof Error && last.cause instanceof AlreadyExistsError)) return false;
  if (last instanceof StorageApiError) return last.status >= 500 || last.status === 429;
  return true;
}

/**
 * A failed create as a provision result: `InBackground` when it may be under way ({@link createMayBeUnderWay}),
 * so the claim stays in progress and is provisioned to the end even if it is deleted meanwhile (its PV is
 * then released and, with `Delete`, the volume deleted: nothing leaks); otherwise `Finished`.
 */
export function createFailure(err: unknown): ProvisionResult {
  const error = err instanceof Error ? err : new Error(String(err));
  return { state: createMayBeUnderWay(error) ? 'InBackground' : 'Finished', error };
}

/** 400 (bad request) and 451 (licence) will not succeed by retrying: infeasible; everything else is retried. */
export function mapStorageError(err: unknown): Error {
  if (err instanceof BadRequestError || err instanceof LicenceError) return new InfeasibleError(err.message, { cause: err });
  if (err instanceof StorageApiError) return err;
  return err instanceof Error ? err : new Error(String(err));
}

/** The PV skeleton every Provisioner returns: name, capacity, modes, policy and mount options from the class. */
export function basePersistentVolume(options: ProvisionOptions, quantity: string): PersistentVolume {
  const pv: PersistentVolume = {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: options.pvName },
    spec: {
      capacity: { storage: quantity },
      accessModes: [...(options.pvc.spec.accessModes ?? ['ReadWriteOnce'])],
      persistentVolumeReclaimPolicy: options.storageClass.reclaimPolicy ?? 'Delete',
      volumeMode: options.pvc.spec.volumeMode ?? 'Filesystem',
    },
  };
  if (options.storageClass.mountOptions?.length) pv.spec.mountOptions = [...options.storageClass.mountOptions];
  return pv;
}
