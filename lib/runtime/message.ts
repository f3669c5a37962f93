/**
 * The cluster event: the one message shape that travels forwarder → SNS FIFO topic → SQS FIFO queue →
 * function, and that the resync function sends to re-enqueue a key.
 *
 * Level-triggered: a message says "object `key` of kind `kind` in cluster `cluster` changed (to
 * `resourceVersion`)". Handlers reconcile the key against current state; the embedded object is a hint
 * that lets a handler skip a cache read, never the source of truth.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { AnnBetaStorageProvisioner, AnnDynamicallyProvisioned, AnnMigratedTo, AnnStorageProvisioner, FinalizerExternalProvisioner } from '../kube/annotations.ts';

export const MESSAGE_VERSION = 1;

/** Kinds the forwarder watches and publishes. The SNS `kind` message attribute carries one of these. */
export const WATCHED_KINDS = [
  'PersistentVolume',
  'PersistentVolumeClaim',
  'Node',
  'StorageClass',
  'VolumeAttachment',
  'Service',
  'Endpoints',
] as const;
export type WatchedKind = (typeof WATCHED_KINDS)[number];

/**
 * ADDED/MODIFIED/DELETED: a watch event. SYNC: published by a relist for an object whose cache entry
 * differed. REQUEUE: sent by the resync function or the runtime to retry a key.
 */
export const EVENT_TYPES = ['ADDED', 'MODIFIED', 'DELETED', 'SYNC', 'REQUEUE'] as const;
export type ClusterEventType = (typeof EVENT_TYPES)[number];

export const ClusterEventSchema = z.object({
  v: z.literal(MESSAGE_VERSION),
  /** Cluster id: `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 40 characters. */
  cluster: z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/).max(40),
  kind: z.enum(WATCHED_KINDS),
  type: z.enum(EVENT_TYPES),
  /** `namespace/name` for namespaced kinds, `name` for cluster-scoped ones. */
  key: z.string().min(1).max(317),
  /** The object's uid ('' for a REQUEUE of a key whose object is unknown). */
  uid: z.string().max(64),
  /** Decimal resourceVersion the event was observed at ('0' when unknown). */
  resourceVersion: z.string().regex(/^[0-9]+$/).max(20),
  /** The object as watched (after DELETED: its last state). Optional: the cache is authoritative. */
  object: z.record(z.string(), z.unknown()).optional(),
  /** When the forwarder (or resync) produced the message, ISO-8601 with milliseconds. */
  observedAt: z.string().datetime(),
  /** For REQUEUE: which controller queue it was sent to. */
  controller: z.string().max(32).optional(),
  /**
   * Set when this version was written by a controller that had already written it back to the cache (its
   * name): that controller's own subscription leaves the event out (it acted on it when it wrote it).
   */
  writer: z.string().regex(/^[a-z][-a-z0-9]*$/).max(32).optional(),
});
export type ClusterEvent = z.infer<typeof ClusterEventSchema>;

/** The `writer` attribute of an event no controller wrote (or whose writer is unknown). */
export const NO_WRITER = 'cluster';

/**
 * SNS/SQS message attributes every cluster event carries. Filter policies match on `kind`, on `writer`
 * so that a controller's subscription leaves out the versions it wrote itself (`writer` is
 * {@link NO_WRITER} otherwise), on `boundClaim` ({@link isBoundClaim}), `unprovisioned`
 * ({@link isUnprovisioned}), `unshared` ({@link isUnshared}) and `unreleased` ({@link isUnreleased}).
 */
export function messageAttributes(event: ClusterEvent): Record<string, { DataType: 'String'; StringValue: string }> {
  return {
    kind: { DataType: 'String', StringValue: event.kind },
    cluster: { DataType: 'String', StringValue: event.cluster },
    type: { DataType: 'String', StringValue: event.type },
    writer: { DataType: 'String', StringValue: event.writer ?? NO_WRITER },
    ...(isBoundClaim(event) ? { boundClaim: { DataType: 'String' as const, StringValue: 'true' } } : {}),
    ...(isUnprovisioned(event) ? { unprovisioned: { DataType: 'String' as const, StringValue: 'true' } } : {}),
    ...(isUnshared(event) ? { unshared: { DataType: 'String' as const, StringValue: 'true' } } : {}),
    ...(isUnreleased(event) ? { unreleased: { DataType: 'String' as const, StringValue: 'true' } } : {}),
  };
}

/**
 * A change of a volume that is not Released, not being deleted and does not carry the external
 * provisioner's finalizer, its object in the message: a provisioner that does not add that finalizer
 * (`AddFinalizer` off, the default) has nothing to do for it — upstream's `shouldDelete` needs phase
 * Released (and, off, no deletionTimestamp), and its finalizer handling only removes a finalizer that is
 * there — so that provisioner's subscription leaves these out (`unreleased`): a volume's phase changes
 * while it is made Available or Bound cost it nothing. With `AddFinalizer` on, a Bound volume without the
 * finalizer needs it added, so serverless.yml then leaves the filter out (`provisionerAddFinalizer`).
 * Deletions, and messages without their object (too large), are never marked.
 */
export function isUnreleased(event: ClusterEvent): boolean {
  if (event.kind !== 'PersistentVolume' || (event.type !== 'ADDED' && event.type !== 'MODIFIED' && event.type !== 'SYNC')) return false;
  const object = event.object as { metadata?: { deletionTimestamp?: unknown; finalizers?: unknown }; status?: { phase?: unknown } } | undefined;
  if (!object?.metadata) return false;
  const finalizers = object.metadata.finalizers;
  return object.status?.phase !== 'Released' && !object.metadata.deletionTimestamp && !(Array.isArray(finalizers) && finalizers.includes(FinalizerExternalProvisioner));
}

/**
 * An event the shared-volume controller has nothing to do for (lib/shared-volume/triggers.ts answers
 * `undefined`), so its subscription leaves it out (`unshared`) and a claim that is not ReadWriteMany
 * costs it no invocation:
 * - a claim deleted (garbage collection removes its Service), or changed or relisted while its object in
 *   the message says it is not ReadWriteMany;
 * - a Service or Endpoints added or changed (the controller's own writes coming back);
 * - a VolumeAttachment deleted.
 * A requeue, a Service's or Endpoints' SYNC, and a claim message without its object (too large) always go
 * through.
 */
export function isUnshared(event: ClusterEvent): boolean {
  const changed = event.type === 'ADDED' || event.type === 'MODIFIED';
  switch (event.kind) {
    case 'PersistentVolumeClaim': {
      if (event.type === 'DELETED') return true;
      if (!changed && event.type !== 'SYNC') return false;
      const modes = (event.object as { spec?: { accessModes?: unknown } } | undefined)?.spec?.accessModes;
      return Array.isArray(modes) && !modes.includes('ReadWriteMany');
    }
    case 'Service':
    case 'Endpoints':
      return changed;
    case 'VolumeAttachment':
      return event.type === 'DELETED';
    default:
      return false;
  }
}

/**
 * A change no provisioner has anything to do for, in either finalizer mode, so its subscription leaves
 * these out (`unprovisioned`):
 * - a claim no external provisioner was asked for (no `volume.kubernetes.io/storage-provisioner` or beta
 *   annotation; upstream's `shouldProvision` needs it), or a volume no provisioner can own (no
 *   `pv.kubernetes.io/provisioned-by`, no `pv.kubernetes.io/migrated-to`, not CSI; `shouldDelete` needs a
 *   provisioner's name on it) — every static bind then costs the provisioner nothing;
 * - a volume being deleted without the provisioner's finalizer: `shouldDelete` answers false once
 *   `deletionTimestamp` is set without it, and `handleProtectionFinalizer` adds none to a deleting volume
 *   and removes only one that is there — the provisioner's own DELETE of a volume comes back as such a change.
 * Deletions, and messages without their object (too large), are never marked and go everywhere.
 */
export function isUnprovisioned(event: ClusterEvent): boolean {
  if (event.type !== 'ADDED' && event.type !== 'MODIFIED' && event.type !== 'SYNC') return false;
  const object = event.object as { metadata?: { annotations?: Record<string, unknown>; deletionTimestamp?: unknown; finalizers?: unknown }; spec?: { csi?: unknown } } | undefined;
  if (!object?.metadata) return false;
  const annotations = object.metadata.annotations ?? {};
  const has = (key: string) => Object.hasOwn(annotations, key);
  if (event.kind === 'PersistentVolumeClaim') return !has(AnnStorageProvisioner) && !has(AnnBetaStorageProvisioner);
  if (event.kind !== 'PersistentVolume') return false;
  if (!has(AnnDynamicallyProvisioned) && !has(AnnMigratedTo) && !object.spec?.csi) return true;
  const finalizers = object.metadata.finalizers;
  return Boolean(object.metadata.deletionTimestamp) && !(Array.isArray(finalizers) && finalizers.includes(FinalizerExternalProvisioner));
}

/**
 * A change of a claim bound to a volume (`spec.volumeName` set: Bound, or Pending with the binder's bind
 * under way, or Lost), being deleted or not, its object in the message: the provisioner has nothing to do
 * for it (upstream's `shouldProvision` answers false as soon as `spec.volumeName` is set; an in-progress
 * record such a claim may still have is dropped by the claim's next retry, its DELETED — whose tombstone,
 * bound, supersedes the record (`inProgressSuperseded`) — or the resync, none of which this event is needed
 * for), so its subscription leaves these out (`boundClaim`). A claim's deletion timestamp changes nothing
 * there: the DELETED that follows is never marked. Without the object (too large for a message) the
 * attribute is not set and the event goes everywhere.
 */
export function isBoundClaim(event: ClusterEvent): boolean {
  if (event.kind !== 'PersistentVolumeClaim' || (event.type !== 'ADDED' && event.type !== 'MODIFIED' && event.type !== 'SYNC')) return false;
  const object = event.object as { spec?: { volumeName?: unknown } } | undefined;
  return typeof object?.spec?.volumeName === 'string' && object.spec.volumeName !== '';
}

/** At most 128 characters from the FIFO alphabet; longer ids keep a readable prefix plus a hash. */
function fifoId(raw: string): string {
  const clean = raw.replace(/[^\x21-\x7e]/g, '_');
  if (clean.length <= 128) return clean;
  const hash = createHash('sha256').update(raw).digest('hex').slice(0, 40);
  return `${clean.slice(0, 87)}~${hash}`;
}

/** One FIFO message group per object: `<cluster>:<kind>:<key>`, so one object is never reconciled twice at once. */
export function messageGroupId(cluster: string, kind: WatchedKind, key: string): string {
  return fifoId(`${cluster}:${kind}:${key}`);
}

/**
 * `<cluster>/<uid or key>/<resourceVersion>/<type>` so replays of the same observation collapse in the
 * 5-minute dedup window, and two clusters never collide (the same key, or a uid restored from a backup,
 * in another cluster is another object). REQUEUE messages add the controller and a nonce (each requeue is
 * a new request).
 */
export function messageDeduplicationId(event: ClusterEvent, nonce?: string): string {
  const base = `${event.cluster}/${event.uid || event.key}/${event.resourceVersion}/${event.type}`;
  return fifoId(event.type === 'REQUEUE' ? `${base}/${event.controller ?? ''}/${nonce ?? ''}` : base);
}

/** The object key of a Kubernetes object: `namespace/name` or `name`. */
export function objectKey(meta: { namespace?: string; name?: string }): string {
  return meta.namespace ? `${meta.namespace}/${meta.name}` : `${meta.name}`;
}

/** Splits an object key into namespace ('' for cluster-scoped) and name. */
export function splitKey(key: string): { namespace: string; name: string } {
  const slash = key.indexOf('/');
  return slash < 0 ? { namespace: '', name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
