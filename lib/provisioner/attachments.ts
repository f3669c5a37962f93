/**
 * VolumeAttachments as the provisioner's delete path sees them. Upstream this guard lives in the CSI
 * external-provisioner's `Delete` (`canDeleteVolume`, `pkg/controller/controller.go`): while any
 * VolumeAttachment in its lister has `spec.source.persistentVolumeName == pv.name` (attached or not,
 * being deleted or not), `Delete` fails with `persistentvolume <pv> is still attached to node <node>`,
 * and the library records Warning `VolumeFailedDelete` with that text and retries with backoff.
 *
 * Here the guard runs in the provisioner's shell for every `Provisioner` (StorageOS and local alike),
 * just before `Provisioner.delete`; the lister is the DynamoDB object cache the forwarder fills.
 *
 * @example
 * const attachments = await new CachedVolumeAttachments(cache, 'c1', new SyncMarkers(doc, tables.control)).list(pv.metadata.name);
 * const blocked = canDeleteVolume(pv, attachments); // VolumeAttachedError | undefined
 * if (blocked) throw blocked;
 */
import { ObjectCache } from '../state/cache.ts';
import { ATTACHMENT_SOURCE, SOURCE_INDEXED_KIND } from '../state/indexes.ts';
import type { SyncMarkers } from '../state/sync.ts';
import type { ObjectMeta, PersistentVolume } from '../kube/objects.ts';

/** `storage.k8s.io/v1` VolumeAttachment, the fields the provisioner reads (its spec is immutable). */
export interface VolumeAttachment {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: {
    attacher?: string;
    nodeName?: string;
    source?: { persistentVolumeName?: string | null; inlineVolumeSpec?: unknown };
    [field: string]: unknown;
  };
  status?: { attached?: boolean; [field: string]: unknown };
}

/**
 * Lists the VolumeAttachments of one cluster (upstream `vaLister.List(labels.Everything())`). Given a PV's
 * name, a lister may leave out attachments that name another PV: callers match again
 * ({@link canDeleteVolume}), so returning all of them is always right.
 */
export interface VolumeAttachmentLister {
  list(volumeName?: string): Promise<VolumeAttachment[]>;
}

/**
 * The PV is still named by a VolumeAttachment: deleting it now would pull storage from under a node.
 * The message is upstream's, word for word.
 */
export class VolumeAttachedError extends Error {
  readonly volumeName: string;
  readonly nodeName: string;
  readonly attachment: string;
  constructor(volumeName: string, nodeName: string, attachment: string) {
    super(`persistentvolume ${volumeName} is still attached to node ${nodeName}`);
    this.name = 'VolumeAttachedError';
    this.volumeName = volumeName;
    this.nodeName = nodeName;
    this.attachment = attachment;
  }
}

/** The PV a VolumeAttachment names as its source, if any (inline-volume attachments name none). */
export function attachedVolumeName(va: Pick<VolumeAttachment, 'spec'> | undefined): string | undefined {
  const name = va?.spec?.source?.persistentVolumeName;
  return typeof name === 'string' && name !== '' ? name : undefined;
}

/**
 * Upstream `canDeleteVolume`: an error for the first attachment (in list order) whose source is `pv`,
 * whatever its `status.attached` or `deletionTimestamp`; undefined when none names it.
 */
export function canDeleteVolume(pv: PersistentVolume, attachments: readonly VolumeAttachment[]): VolumeAttachedError | undefined {
  const name = pv.metadata.name;
  if (!name) return undefined;
  const va = attachments.find((a) => attachedVolumeName(a) === name);
  return va ? new VolumeAttachedError(name, va.spec.nodeName ?? '', va.metadata.name ?? '') : undefined;
}

/**
 * The PV a VolumeAttachment event may have unblocked: the source of an attachment that is gone (its
 * cache entry is a tombstone, or absent and the event still carries its last state). A live attachment
 * unblocks nothing: its spec is immutable, so its source never changes while it exists.
 *
 * @param entry the attachment's cache entry (tombstones included), undefined when absent
 * @param lastSeen the object a DELETED event carried (a hint when the tombstone has expired)
 */
export function detachedVolumeName(
  entry: { deleted: boolean; object: unknown } | undefined,
  lastSeen: unknown,
): string | undefined {
  if (entry && !entry.deleted) return undefined;
  return attachedVolumeName((entry?.object ?? lastSeen) as VolumeAttachment | undefined);
}

/** BatchGetItem's limit of keys per request. */
const MAX_KEYS = 100;

/**
 * The VolumeAttachments of `cluster` in the DynamoDB object cache. Given a PV's name, its attachments are
 * found through their source entries (lib/state/schema.ts): one strongly consistent Query of that PV's
 * range, read after the VolumeAttachment sync record that says whether every cached attachment has one,
 * then one consistent BatchGetItem of the attachments named there (none when there are none).
 * What is read and charged follows the PV's own attachments, not the cluster's. An entry that is a
 * tombstone (its source entry outlived it) or absent does not count, as a read of the kind would not
 * see it. Without `sync`, or while the record does not vouch for the source entries (before the
 * forwarder's first LIST with them, or after an older forwarder wrote since), one paginated, strongly
 * consistent Query of the kind filtered on the attachments' source (`vaSource`, lib/state/indexes.ts)
 * answers, as before source entries; an attachment cached before that attribute existed is always
 * returned. Without a PV's name: every attachment of the cluster.
 */
export class CachedVolumeAttachments implements VolumeAttachmentLister {
  readonly #cache: ObjectCache;
  readonly #cluster: string;
  readonly #sync: SyncMarkers | undefined;

  constructor(cache: ObjectCache, cluster: string, sync?: SyncMarkers) {
    this.#cache = cache;
    this.#cluster = cluster;
    this.#sync = sync;
  }

  async list(volumeName?: string): Promise<VolumeAttachment[]> {
    // The record first, the source entries after: read the other way round (or together), a Query answered
    // before a LIST wrote them could be trusted by a record that vouched only after it.
    if (volumeName && this.#sync && (await this.#sync.getSync(this.#cluster, SOURCE_INDEXED_KIND))?.sourcesIndexed) {
      return this.#named(await this.#cache.attachmentsNaming(this.#cluster, volumeName));
    }
    const entries = volumeName
      ? this.#cache.listWhere(this.#cluster, 'VolumeAttachment', ATTACHMENT_SOURCE, volumeName)
      : this.#cache.list(this.#cluster, 'VolumeAttachment');
    const out: VolumeAttachment[] = [];
    for await (const entry of entries) out.push(entry.object as VolumeAttachment);
    return out;
  }

  /** The live cached attachments of these names, in the order given. */
  async #named(names: readonly string[]): Promise<VolumeAttachment[]> {
    const out: VolumeAttachment[] = [];
    for (let i = 0; i < names.length; i += MAX_KEYS) {
      const refs = names.slice(i, i + MAX_KEYS).map((key) => ({ kind: 'VolumeAttachment', key }));
      const { entries, unread } = await this.#cache.getMany(this.#cluster, refs);
      // An attachment left unread may hold the volume: no answer is better than a wrong one.
      if (unread.size > 0) throw new Error(`${unread.size} VolumeAttachment cache entries left unread (throttled)`);
      for (const ref of refs) {
        const entry = entries.get(ObjectCache.refId(ref.kind, ref.key));
        if (entry && !entry.deleted) out.push(entry.object as VolumeAttachment);
      }
    }
    return out;
  }
}
