/**
 * The `storageos` Provisioner: what the StorageOS CSI driver does behind the external-provisioner.
 * `provision` creates (or adopts) a StorageOS volume named after the PV in the StorageOS namespace named
 * after the claim's namespace, and returns a CSI PV for driver `csi.storageos.com`; `delete` deletes the
 * volume (already gone is success). A create that may be under way (no answer, a 5xx, a timeout) is
 * `ProvisioningInBackground`, as the external-provisioner reads such a CreateVolume error.
 *
 * Class parameters: `csi.storage.k8s.io/fstype` (or `fsType`), and every `storageos.com/*` key (e.g.
 * `storageos.com/replicas: "1"`) passed as a volume label. A selected node becomes the master placement
 * hint. A claim with `spec.selector` is refused before anything else is read (`claim Selector is not
 * supported`, `ProvisioningFinished`), as the external-provisioner's `prepareProvision` does.
 *
 * @example
 * const provisioner = new StorageOSProvisioner(createStorageClientFromEnv());
 * const { pv } = await provisioner.provision({ signal }, { storageClass, pvName: 'pvc-1', pvc, selectedNodeName: '' });
 */
import { IgnoredError } from '../errors.ts';
import type { PersistentVolume } from '../../kube/objects.ts';
import type { BlockProvisioner, ProvisionContext, ProvisionOptions, ProvisionResult, Provisioner } from '../types.ts';
import type { VolumeProvisioner, VolumeRef } from '../../storage/types.ts';
import { basePersistentVolume, createFailure, createOrAdopt, csiLabels, fsTypeFor, mapStorageError, refuseSelector, requestedBytes, storageosLabelParameters } from './common.ts';

/** The StorageOS CSI driver name: the provisioner name and `spec.csi.driver`. */
export const STORAGEOS_DRIVER = 'csi.storageos.com';

/** `spec.csi.volumeHandle`: `<StorageOS namespace name>/<volume ID>`. */
export function volumeHandle(ref: VolumeRef): string {
  return `${ref.namespace}/${ref.id}`;
}

/** Parses a {@link volumeHandle}; undefined when it is not one. */
export function parseVolumeHandle(handle: string): VolumeRef | undefined {
  const slash = handle.indexOf('/');
  if (slash <= 0 || slash === handle.length - 1) return undefined;
  return { namespace: handle.slice(0, slash), id: handle.slice(slash + 1) };
}

export class StorageOSProvisioner implements Provisioner, BlockProvisioner {
  #storage: VolumeProvisioner;
  #driver: string;

  constructor(storage: VolumeProvisioner, driver: string = STORAGEOS_DRIVER) {
    this.#storage = storage;
    this.#driver = driver;
  }

  /** StorageOS serves raw block volumes. */
  supportsBlock(): boolean {
    return true;
  }

  async provision(ctx: ProvisionContext, options: ProvisionOptions): Promise<ProvisionResult> {
    const refused = refuseSelector(options);
    if (refused) return refused;
    const { bytes, quantity } = requestedBytes(options.pvc);
    const fsType = fsTypeFor(options);
    const labels = { ...storageosLabelParameters(options.storageClass.parameters), ...csiLabels(options) };
    let volume;
    try {
      volume = await createOrAdopt(this.#storage, {
        namespace: options.pvc.metadata.namespace ?? 'default',
        name: options.pvName,
        sizeBytes: bytes,
        fsType,
        labels,
        ...(options.selectedNodeName ? { nodeName: options.selectedNodeName } : {}),
      }, ctx);
    } catch (err) {
      return createFailure(err);
    }
    const pv = basePersistentVolume(options, quantity);
    pv.spec.csi = {
      driver: this.#driver,
      volumeHandle: volumeHandle({ namespace: volume.namespace, id: volume.id }),
      ...(options.pvc.spec.volumeMode === 'Block' ? {} : { fsType }),
      volumeAttributes: { ...csiLabels(options), 'storageos.com/volume-id': volume.id },
    };
    return { pv, state: 'Finished' };
  }

  async delete(ctx: ProvisionContext, pv: PersistentVolume): Promise<void> {
    const csi = pv.spec.csi;
    if (!csi || csi.driver !== this.#driver) throw new IgnoredError(`PV ${pv.metadata.name} is not a ${this.#driver} volume`);
    const ref = parseVolumeHandle(csi.volumeHandle);
    if (!ref) throw new Error(`PV ${pv.metadata.name}: malformed volume handle "${csi.volumeHandle}"`);
    try {
      await this.#storage.deleteVolume(ref, { signal: ctx.signal });
    } catch (err) {
      throw mapStorageError(err);
    }
  }
}
