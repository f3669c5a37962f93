/**
 * What happens to an unbound claim no volume matches (`pv_controller.go`): the retroactive default
 * StorageClass, WaitForFirstConsumer (`IsDelayBindingMode`, `emitEventForUnboundDelayBindingClaim`)
 * and the hand-off to an external provisioner (`provisionClaim`, `setClaimProvisioner`).
 *
 * claimflow has no in-tree volume plugins: a provisioner named `kubernetes.io/...` (including
 * `kubernetes.io/no-provisioner`) cannot be found and is reported as upstream reports a missing
 * plugin; every other provisioner is external.
 */
import {
  ANN_BETA_IS_DEFAULT_CLASS,
  ANN_BETA_STORAGE_PROVISIONER,
  ANN_IS_DEFAULT_CLASS,
  ANN_MIGRATED_TO,
  ANN_SELECTED_NODE,
  ANN_STORAGE_PROVISIONER,
  BindingMode,
  IN_TREE_PREFIX,
  Message,
  Reason,
} from './constants.ts';
import { BindingModeNotSetError } from './errors.ts';
import { clone, getPersistentVolumeClaimClass, hasAnnotation, persistentVolumeClaimHasClass } from './helpers.ts';
import type { SyncPlan } from './plan.ts';
import type { PersistentVolumeClaim, Pod, StorageClass } from './types.ts';

/**
 * `IsDelayBindingMode`: class `""` or not found ⇒ false; found without a volumeBindingMode ⇒
 * {@link BindingModeNotSetError}; else whether it is WaitForFirstConsumer.
 */
export function isDelayBindingMode(claim: PersistentVolumeClaim, classes: readonly StorageClass[]): boolean {
  const className = getPersistentVolumeClaimClass(claim);
  if (className === '') return false;
  const sc = classes.find((c) => c.metadata.name === className);
  if (!sc) return false;
  if (!sc.volumeBindingMode) throw new BindingModeNotSetError(Message.volumeBindingModeNotSet(className));
  return sc.volumeBindingMode === BindingMode.WaitForFirstConsumer;
}

/** `IsDelayBindingProvisioning`: the scheduler picked a node (`volume.kubernetes.io/selected-node`). */
export const isDelayBindingProvisioning = (claim: PersistentVolumeClaim): boolean =>
  hasAnnotation(claim.metadata, ANN_SELECTED_NODE);

/**
 * `GetDefaultClass`: the classes annotated default (`"true"`, GA or beta key); several ⇒ the newest
 * creationTimestamp, then the lowest name.
 */
export function getDefaultClass(classes: readonly StorageClass[]): StorageClass | undefined {
  const isDefault = (c: StorageClass): boolean =>
    c.metadata.annotations?.[ANN_IS_DEFAULT_CLASS] === 'true' || c.metadata.annotations?.[ANN_BETA_IS_DEFAULT_CLASS] === 'true';
  const time = (c: StorageClass): number => (c.metadata.creationTimestamp ? Date.parse(String(c.metadata.creationTimestamp)) : 0);
  return classes
    .filter(isDefault)
    .sort((a, b) => time(b) - time(a) || (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0))[0];
}

/**
 * `assignDefaultStorageClass`: a claim with no class at all gets the default class (PUT). Returns the
 * updated claim, or undefined when nothing was assigned.
 */
export function assignDefaultStorageClass(
  plan: SyncPlan,
  claim: PersistentVolumeClaim,
  classes: readonly StorageClass[],
): PersistentVolumeClaim | undefined {
  if (persistentVolumeClaimHasClass(claim)) return undefined;
  const sc = getDefaultClass(classes);
  if (!sc) return undefined;
  const next = clone(claim);
  next.spec.storageClassName = sc.metadata.name;
  return plan.updateClaim(next, 'assignDefaultStorageClass');
}

/**
 * `findNonScheduledPodsByPVC`: names of non-terminated pods that use the claim and have no node.
 */
export function findNonScheduledPodsByPVC(claim: PersistentVolumeClaim, pods: readonly Pod[]): string[] {
  const names: string[] = [];
  for (const pod of pods) {
    if ((pod.metadata.namespace ?? '') !== (claim.metadata.namespace ?? '')) continue;
    if (!(pod.spec?.volumes ?? []).some((v) => v.persistentVolumeClaim?.claimName === claim.metadata.name)) continue;
    const phase = pod.status?.phase;
    if (phase === 'Succeeded' || phase === 'Failed') continue;
    if (!pod.spec?.nodeName) names.push(pod.metadata.name);
  }
  return names;
}

/** `emitEventForUnboundDelayBindingClaim`: WaitForPodScheduled naming the pods, or WaitForFirstConsumer. */
export function emitEventForUnboundDelayBindingClaim(plan: SyncPlan, claim: PersistentVolumeClaim, pods: readonly Pod[]): void {
  const names = findNonScheduledPodsByPVC(claim, pods);
  if (names.length > 0) plan.event('PersistentVolumeClaim', claim, 'Normal', Reason.WaitForPodScheduled, Message.waitForPods(names));
  else plan.event('PersistentVolumeClaim', claim, 'Normal', Reason.WaitForFirstConsumer, Message.waitForFirstConsumer);
}

/**
 * `provisionClaim` + `provisionClaimOperationExternal`: find the class; an in-tree provisioner name
 * is a missing plugin (ProvisioningFailed); otherwise set both storage-provisioner annotations (only
 * when the GA key differs) and record ExternalProvisioning. The claim status is never written.
 */
export function provisionClaim(plan: SyncPlan, claim: PersistentVolumeClaim, classes: readonly StorageClass[]): void {
  const className = getPersistentVolumeClaimClass(claim);
  const sc = classes.find((c) => c.metadata.name === className);
  if (!sc) {
    plan.event('PersistentVolumeClaim', claim, 'Warning', Reason.ProvisioningFailed, Message.classNotFound(className));
    return;
  }
  if (sc.provisioner.startsWith(IN_TREE_PREFIX)) {
    plan.event('PersistentVolumeClaim', claim, 'Warning', Reason.ProvisioningFailed, Message.noVolumePluginByName(sc.provisioner));
    return;
  }
  setClaimProvisioner(plan, claim, sc.provisioner);
  plan.event('PersistentVolumeClaim', claim, 'Normal', Reason.ExternalProvisioning, Message.externalProvisioning(sc.provisioner));
}

/** `setClaimProvisioner`: both storage-provisioner keys, PUT only when the GA key differs. */
export function setClaimProvisioner(plan: SyncPlan, claim: PersistentVolumeClaim, provisionerName: string): PersistentVolumeClaim {
  if (claim.metadata.annotations?.[ANN_STORAGE_PROVISIONER] === provisionerName) return claim;
  const next = clone(claim);
  next.metadata.annotations = {
    ...(next.metadata.annotations ?? {}),
    [ANN_STORAGE_PROVISIONER]: provisionerName,
    [ANN_BETA_STORAGE_PROVISIONER]: provisionerName,
  };
  // No CSI migration in claimflow: a stale migrated-to annotation is dropped, as upstream does when migration is off.
  delete next.metadata.annotations[ANN_MIGRATED_TO];
  return plan.updateClaim(next, 'setClaimProvisioner');
}
