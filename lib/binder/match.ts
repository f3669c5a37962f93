/**
 * Matching a claim to a volume (`index.go` `findBestMatchForClaim`, component-helpers
 * `FindMatchingVolume`, `pv_controller.go` `checkVolumeSatisfyClaim`).
 *
 * Volumes are grouped by their access-mode set, as upstream's `accessmodes` index does; the sets that
 * contain every requested mode are tried fewest-modes-first and the first set with a match wins, so a
 * bigger volume with fewer modes beats a smaller one with more modes. Inside a set a volume pre-bound
 * to the claim wins at once; otherwise the smallest Available volume of the claim's class whose
 * labels match the selector. Among equally small volumes each claim has its own preference
 * (a hash of the claim's uid and the volume's name), so claims created together spread over a pool of
 * equal volumes instead of all racing for the same one and retrying on 409 Conflict one by one; upstream
 * leaves that order to its index's map iteration, so no particular one is promised.
 *
 * @example
 * const pv = findBestMatchForClaim(claim, candidateVolumes, false); // PersistentVolume | undefined
 */
import { compareQuantities, quantityValue } from '../kube/quantity.ts';
import { Mismatch, VolumePhase } from './constants.ts';
import {
  accessModesIndexKey,
  checkAccessModes,
  checkVolumeModeMismatches,
  claimRequest,
  claimToClaimKey,
  getPersistentVolumeClaimClass,
  getPersistentVolumeClass,
  isVolumeBoundToClaim,
  selectorMatches,
  volumeCapacity,
} from './helpers.ts';
import type { PersistentVolume, PersistentVolumeClaim } from './types.ts';

/**
 * Every access-mode set among `volumes` that contains all of the claim's modes, smallest sets first
 * (upstream's `allPossibleMatchingAccessModes`; ties in index-key order for determinism).
 */
export function allPossibleMatchingAccessModes(
  claim: PersistentVolumeClaim,
  volumes: readonly PersistentVolume[],
): Array<{ key: string; volumes: PersistentVolume[] }> {
  const groups = new Map<string, PersistentVolume[]>();
  for (const volume of volumes) {
    const key = accessModesIndexKey(volume.spec.accessModes);
    let group = groups.get(key);
    if (!group) groups.set(key, (group = []));
    group.push(volume);
  }
  const requested = claim.spec.accessModes ?? [];
  return [...groups.entries()]
    .filter(([key]) => {
      const have = new Set(key === '' ? [] : key.split(','));
      return requested.every((mode) => have.has(mode));
    })
    .map(([key, group]) => ({ key, count: key === '' ? 0 : key.split(',').length, volumes: group }))
    .sort((a, b) => a.count - b.count || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .map(({ key, volumes: group }) => ({ key, volumes: group }));
}

/**
 * `FindMatchingVolume` for the PV controller (no node, nothing excluded): the pre-bound volume, or the
 * smallest Available volume that satisfies the claim; `undefined` when none does.
 * Throws {@link InvalidSelectorError} for a selector that cannot be parsed.
 */
export function findMatchingVolume(
  claim: PersistentVolumeClaim,
  volumes: readonly PersistentVolume[],
  delayBinding: boolean,
): PersistentVolume | undefined {
  const requested = claimRequest(claim);
  const requestedClass = getPersistentVolumeClaimClass(claim);
  const selector = claim.spec.selector ?? undefined;
  const claimKey = claimToClaimKey(claim);
  const claimId = claim.metadata.uid ?? claimKey;
  let smallest: PersistentVolume | undefined;
  let smallestQty: string | undefined;
  let smallestRank = 0;

  for (const volume of volumes) {
    if (volume.spec.claimRef && !isVolumeBoundToClaim(volume, claim)) continue;
    const qty = volumeCapacity(volume) ?? '0';
    if (compareQuantities(qty, requested) < 0) continue;
    if (checkVolumeModeMismatches(claim, volume)) continue;
    if ((claim.spec.volumeAttributesClassName ?? '') !== (volume.spec.volumeAttributesClassName ?? '')) continue;
    if (volume.metadata.deletionTimestamp) continue;
    if (isVolumeBoundToClaim(volume, claim)) return volume;
    if (delayBinding) continue;
    if (volume.status?.phase !== VolumePhase.Available) continue;
    if (selector && !selectorMatches(selector, volume.metadata.labels, claimKey)) continue;
    if (getPersistentVolumeClass(volume) !== requestedClass) continue;
    const order = smallest === undefined ? 1 : compareQuantities(smallestQty!, qty);
    if (order < 0) continue;
    const rank = preference(claimId, volume.metadata.name);
    if (order > 0 || rank > smallestRank) {
      smallest = volume;
      smallestQty = qty;
      smallestRank = rank;
    }
  }
  return smallest;
}

/** The claim's preference for a volume among equals: FNV-1a (32 bit) of `claim\0volume`. */
export function preference(claimId: string, volumeName: string): number {
  let hash = 0x811c9dc5;
  const text = `${claimId}\0${volumeName}`;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/**
 * `findBestMatchForClaim`: try each matching access-mode set, fewest modes first, and return the
 * first match.
 */
export function findBestMatchForClaim(
  claim: PersistentVolumeClaim,
  volumes: readonly PersistentVolume[],
  delayBinding: boolean,
): PersistentVolume | undefined {
  for (const group of allPossibleMatchingAccessModes(claim, volumes)) {
    const match = findMatchingVolume(claim, group.volumes, delayBinding);
    if (match) return match;
  }
  return undefined;
}

/**
 * `checkVolumeSatisfyClaim`: why a claim pre-bound by name cannot take this volume, or `undefined`
 * when it can. Order and texts as upstream.
 */
export function checkVolumeSatisfyClaim(volume: PersistentVolume, claim: PersistentVolumeClaim): string | undefined {
  if (volume.metadata.deletionTimestamp) return Mismatch.deleting(volume.metadata.name);
  const capacity = volumeCapacity(volume) ?? '0';
  if (quantityValue(capacity) < quantityValue(claimRequest(claim))) return Mismatch.tooSmall;
  if (getPersistentVolumeClass(volume) !== getPersistentVolumeClaimClass(claim)) return Mismatch.className;
  if ((claim.spec.volumeAttributesClassName ?? '') !== (volume.spec.volumeAttributesClassName ?? '')) {
    return Mismatch.volumeAttributesClass;
  }
  if (checkVolumeModeMismatches(claim, volume)) return Mismatch.volumeMode;
  if (!checkAccessModes(claim, volume)) return Mismatch.accessMode;
  return undefined;
}
