/**
 * Every resource the emulator serves, as {@link KindSpec}s: discovery facts, registry strategy
 * (decode, defaults, prepare, validate), field selectors and Table printing.
 *
 * The generic machinery serves exactly this list; `ObjectRef.resource` keys are `${group}/${plural}`.
 */
import type { KindSpec } from '../types.ts';
import { deployments, replicaSets } from './apps.ts';
import { configMaps, secrets } from './configmap-secret.ts';
import { endpoints } from './endpoints.ts';
import { coreEvents, eventsV1Events } from './event.ts';
import { leases } from './lease.ts';
import { namespaces } from './namespace.ts';
import { nodes } from './node.ts';
import { persistentVolumes } from './persistentvolume.ts';
import { persistentVolumeClaims } from './persistentvolumeclaim.ts';
import { pods } from './pod.ts';
import { clusterRoleBindings, clusterRoles, roleBindings, roles } from './rbac.ts';
import { serviceAccounts } from './serviceaccount.ts';
import { services } from './service.ts';
import { storageClasses } from './storageclass.ts';
import { volumeAttachments } from './volumeattachment.ts';

/** The served resources, core group first, in discovery order. */
export const KINDS: KindSpec[] = [
  configMaps,
  endpoints,
  coreEvents,
  namespaces,
  nodes,
  persistentVolumeClaims,
  persistentVolumes,
  pods,
  secrets,
  serviceAccounts,
  services,
  storageClasses,
  volumeAttachments,
  leases,
  eventsV1Events,
  deployments,
  replicaSets,
  clusterRoleBindings,
  clusterRoles,
  roleBindings,
  roles,
];

/** The store key of a spec: `${group}/${plural}`. */
export const resourceKey = (spec: Pick<KindSpec, 'group' | 'plural'>): string => `${spec.group}/${spec.plural}`;

/** Looks a spec up by its store key (`/persistentvolumes`, `storage.k8s.io/storageclasses`). */
export function kindFor(resource: string): KindSpec | undefined {
  return KINDS.find((k) => resourceKey(k) === resource);
}

export { isDefaultStorageClass, IS_DEFAULT_CLASS_ANNOTATION, BETA_IS_DEFAULT_CLASS_ANNOTATION } from './storageclass.ts';
export { FINALIZER_KUBERNETES } from './namespace.ts';
export { humanDuration } from './common/table.ts';
