/**
 * The `local` Provisioner: a directory on the local storage control plane exposed as a `local` PV with
 * node affinity to the node that holds it (the volume's master node). For a WaitForFirstConsumer claim
 * the scheduler's node is the placement hint; if that node is not a storage node (or the control plane
 * placed the volume elsewhere) the claim is rescheduled (`Reschedule`), so the scheduler picks again;
 * a volume an earlier attempt left is removed first, since `Reschedule` promises none is left.
 * A claim with `spec.selector` is refused (`claim Selector is not supported`), as csi-provisioner does.
 *
 * @example
 * const provisioner = new LocalProvisioner(createStorageClientFromEnv());
 */
import { IgnoredError } from '../errors.ts';
import type { PersistentVolume } from '../../kube/objects.ts';
import type { ProvisionContext, ProvisionOptions, ProvisionResult, Provisioner } from '../types.ts';
import type { NodeLabels, VolumeProvisioner } from '../../storage/types.ts';
import { basePersistentVolume, createFailure, createOrAdopt, csiLabels, madeForVolume, mapStorageError, refuseSelector, requestedBytes } from './common.ts';

/** Annotation on the PV recording the backing volume (`<namespace>/<id>`), used by `delete`. */
export const annLocalVolume = 'claimflow.io/local-volume';
/** The node label the affinity matches. */
export const hostnameLabel = 'kubernetes.io/hostname';

export class LocalProvisioner implements Provisioner {
  #storage: VolumeProvisioner & NodeLabels;

  constructor(storage: VolumeProvisioner & NodeLabels) {
    this.#storage = storage;
  }

  async provision(ctx: ProvisionContext, options: ProvisionOptions): Promise<ProvisionResult> {
    const refused = refuseSelector(options);
    if (refused) return refused;
    const { bytes, quantity } = requestedBytes(options.pvc);
    const nodes = await this.#storage.listNodes({ signal: ctx.signal }).catch((err: unknown) => { throw mapStorageError(err); });
    const selected = options.selectedNodeName;
    const namespace = options.pvc.metadata.namespace ?? 'default';
    if (selected && !nodes.some((n) => n.name === selected && n.health === 'online')) {
      const reschedule: ProvisionResult = { state: 'Reschedule', error: new Error(`node "${selected}" holds no local storage`) };
      // `Reschedule` promises that no volume is left, and an earlier attempt cut short (its invocation
      // killed after the create) may have made one while the node was usable: it is looked up and removed
      // first. Without an answer, whether it exists is unknown, so the claim stays in progress.
      let earlier;
      try {
        earlier = await this.#storage.getVolumeByName(namespace, options.pvName, { signal: ctx.signal });
      } catch (err) {
        return { state: 'InBackground', error: new Error(`${reschedule.error!.message}; looking up an earlier attempt's volume failed, retrying: ${String(err instanceof Error ? err.message : err)}`, { cause: err }) };
      }
      return earlier && madeForVolume(earlier, options.pvName) ? await this.#discard(ctx, namespace, earlier.id, reschedule) : reschedule;
    }
    let volume;
    try {
      volume = await createOrAdopt(this.#storage, {
        namespace,
        name: options.pvName,
        sizeBytes: bytes,
        labels: csiLabels(options),
        ...(selected ? { nodeName: selected } : {}),
      }, ctx);
    } catch (err) {
      return createFailure(err);
    }
    const node = nodes.find((n) => n.id === volume.masterNodeID);
    if (!node || !volume.localPath) {
      return await this.#discard(ctx, namespace, volume.id, { state: 'Finished', error: new Error(`volume ${namespace}/${options.pvName} was not placed on a node`) });
    }
    if (selected && node.name !== selected) {
      return await this.#discard(ctx, namespace, volume.id, { state: 'Reschedule', error: new Error(`volume was placed on "${node.name}", not on the selected node "${selected}"`) });
    }
    const pv = basePersistentVolume(options, quantity);
    pv.metadata.annotations = { [annLocalVolume]: `${namespace}/${volume.id}` };
    pv.spec.local = { path: volume.localPath };
    pv.spec.nodeAffinity = { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: hostnameLabel, operator: 'In', values: [node.name] }] }] } };
    return { pv, state: 'Finished' };
  }

  /**
   * Removes a volume this claim cannot use and answers `result`. If the removal fails the volume still
   * exists: the answer is `InBackground` instead, so the claim stays in progress (even if it is deleted
   * meanwhile) and the next attempt adopts the volume and removes it again; answering `result` would let a
   * claim deleted before that attempt leak it.
   */
  async #discard(ctx: ProvisionContext, namespace: string, id: string, result: ProvisionResult): Promise<ProvisionResult> {
    try {
      await this.#storage.deleteVolume({ namespace, id }, { signal: ctx.signal });
      return result;
    } catch (err) {
      return { state: 'InBackground', error: new Error(`${result.error?.message ?? 'unusable volume'}; removing it failed, retrying: ${String(err instanceof Error ? err.message : err)}`, { cause: err }) };
    }
  }

  async delete(ctx: ProvisionContext, pv: PersistentVolume): Promise<void> {
    const ref = pv.metadata.annotations?.[annLocalVolume];
    if (!ref || !pv.spec.local) throw new IgnoredError(`PV ${pv.metadata.name} is not a local control plane volume`);
    const slash = ref.indexOf('/');
    try {
      await this.#storage.deleteVolume({ namespace: ref.slice(0, slash), id: ref.slice(slash + 1) }, { signal: ctx.signal });
    } catch (err) {
      throw mapStorageError(err);
    }
  }
}
