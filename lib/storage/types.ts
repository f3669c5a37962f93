/**
 * The storage control plane as the controllers see it: three narrow interfaces and their domain types.
 *
 * - {@link VolumeProvisioner}: create, read and delete volumes (the provisioner function).
 * - {@link SharedVolumeSource}: list NFS shared volumes and publish their external mount endpoint
 *   (the shared-volume function; StorageOS api-manager's `sharedvolume` package).
 * - {@link NodeLabels}: list storage nodes, replace their unreserved labels, toggle compute-only
 *   (the label-sync function; api-manager's `node-label` controller).
 *
 * Two implementations sit behind them: the StorageOS v2 HTTP client (`lib/storage/storageos/`), which
 * talks to a real StorageOS cluster or to the embedded local control plane (`infra/local/storage-api/`),
 * which speaks the same API subset.
 *
 * Every mutation of an existing object carries the `version` last read from it (optimistic concurrency):
 * a stale version fails with {@link StaleVersionError} (HTTP 412) and the caller re-reads and retries.
 * Errors are the named classes of `./errors.ts`.
 *
 * @example
 * const volume = await storage.createVolume({ namespace: 'default', name: 'pvc-1234', sizeBytes: 1 << 30 });
 * await storage.deleteVolume({ namespace: 'default', id: volume.id });
 */

/** Labels on a StorageOS object (volume, node, namespace). */
export type Labels = Record<string, string>;

/** Options accepted by every call. */
export interface CallOptions {
  /** Abort the call (and its retries). */
  signal?: AbortSignal;
}

/** Well-known label keys read or written by the controllers (api-manager `labels.go`, CSI driver). */
export const LABELS = {
  /** PV name, set by the CSI driver on every volume it creates. */
  pvName: 'csi.storage.k8s.io/pv/name',
  /** PVC name. */
  pvcName: 'csi.storage.k8s.io/pvc/name',
  /** PVC namespace. */
  pvcNamespace: 'csi.storage.k8s.io/pvc/namespace',
  /** The published NFS mount endpoint of a shared volume (`<ClusterIP>:2049`), reflected as a label. */
  nfsMountEndpoint: 'storageos.com/nfs/mount-endpoint',
  /** The compute-only state of a node, reflected as a label (`"true"`/`"false"`). */
  computeOnly: 'storageos.com/computeonly',
  /** Placement hint: the node (by name) that should hold the volume's master. */
  hintMaster: 'storageos.com/hint.master',
  /** Prefix of every StorageOS reserved label. */
  reservedPrefix: 'storageos.com/',
} as const;

/** Where a volume is attached, as StorageOS reports it. */
export type AttachmentType = 'unknown' | 'detached' | 'nfs' | 'host';

/** Node or deployment health as StorageOS reports it. */
export type Health = 'online' | 'offline' | 'unknown' | 'ready' | 'syncing';

/** A volume as read from the control plane. */
export interface Volume {
  /** Volume ID (UUID), unique across namespaces. */
  id: string;
  /** Volume name, unique within its namespace (the PV name for CSI-created volumes). */
  name: string;
  /** ID of the StorageOS namespace holding the volume. */
  namespaceID: string;
  /** Name of that namespace (resolved by the client; StorageOS itself returns only the ID). */
  namespace: string;
  description: string;
  sizeBytes: number;
  fsType: string;
  labels: Labels;
  attachmentType: AttachmentType;
  /** Node ID the volume is attached on, or `""`. */
  attachedOn: string;
  /** The NFS server endpoint `host:port` of a shared volume; `null` when not shared (or failing over). */
  nfsServiceEndpoint: string | null;
  /** ID of the node holding the volume's master deployment, or `""` when unplaced. */
  masterNodeID: string;
  /**
   * The directory that backs the volume. Only the embedded local control plane reports it (the `local`
   * provisioner exposes it as a hostPath/local PV); a real StorageOS cluster leaves it undefined.
   */
  localPath?: string;
  /** Opaque optimistic-concurrency token; echo it on every write. */
  version: string;
  createdAt: string;
  updatedAt: string;
}

/** Identifies a volume: the StorageOS namespace (by name) and the volume ID. */
export interface VolumeRef {
  /** StorageOS namespace name (the CSI driver uses the PVC's namespace). */
  namespace: string;
  /** Volume ID. */
  id: string;
}

/** What {@link VolumeProvisioner.createVolume} needs. */
export interface CreateVolumeRequest {
  /** StorageOS namespace name; created on first use, as the CSI driver does. */
  namespace: string;
  /** Volume name, unique in the namespace (the PV name). */
  name: string;
  sizeBytes: number;
  /** `ext4` (default), `ext2`, `ext3`, `xfs`, `btrfs` or `block`. */
  fsType?: string;
  description?: string;
  /** Labels, including the CSI `pv/name`, `pvc/name`, `pvc/namespace` keys and StorageOS reserved keys. */
  labels?: Labels;
  /**
   * Preferred node (Kubernetes node name == StorageOS node name) for the master deployment; sent as the
   * `storageos.com/hint.master` label.
   */
  nodeName?: string;
}

/** Provisioning: create, read and delete volumes. */
export interface VolumeProvisioner {
  /**
   * Create a volume. Fails with `AlreadyExistsError` (409) when a volume of that
   * name already exists in the namespace; use {@link getVolumeByName} to adopt it.
   */
  createVolume(request: CreateVolumeRequest, options?: CallOptions): Promise<Volume>;
  /** Read a volume; `NotFoundError` when absent (or its namespace is). */
  getVolume(ref: VolumeRef, options?: CallOptions): Promise<Volume>;
  /** Find a volume by name in a namespace; `undefined` when absent. */
  getVolumeByName(namespace: string, name: string, options?: CallOptions): Promise<Volume | undefined>;
  /**
   * Delete a volume. Idempotent: resolves `false` when it was already gone, `true` when this call deleted
   * it. With `version`, a stale version fails with `StaleVersionError`;
   * without it, the client reads the current version first.
   */
  deleteVolume(ref: VolumeRef & { version?: string }, options?: CallOptions): Promise<boolean>;
}

/**
 * A volume that qualifies as a Kubernetes shared (RWX) volume: it has the three CSI labels and a parsable
 * `nfs.serviceEndpoint` (api-manager `toSharedVolume`).
 */
export interface SharedVolume {
  /** Volume ID. */
  id: string;
  /** ID of the StorageOS namespace holding the volume. */
  namespaceID: string;
  /** The Service name: the PV name (label `csi.storage.k8s.io/pv/name`). */
  serviceName: string;
  /** The PVC name (label `csi.storage.k8s.io/pvc/name`). */
  pvcName: string;
  /** The PVC namespace (label `csi.storage.k8s.io/pvc/namespace`), where the Service lives. */
  namespace: string;
  /** `nfs.serviceEndpoint`: where the NFS server currently listens (`host:port`). */
  internalEndpoint: string;
  /** The published mount endpoint (label `storageos.com/nfs/mount-endpoint`), or `""`. */
  externalEndpoint: string;
  /** The volume's version when listed. */
  version: string;
}

/** What {@link SharedVolumeSource.setExternalEndpoint} needs. */
export interface SetExternalEndpointRequest {
  /** Volume ID. */
  id: string;
  /** The StorageOS namespace name (api-manager passes the PVC namespace). */
  namespace: string;
  /**
   * The StorageOS namespace ID when already known (e.g. {@link SharedVolume.namespaceID}); skips the
   * name → ID resolution.
   */
  namespaceID?: string;
  /** `<ClusterIP>:2049`. */
  endpoint: string;
  /** The volume version last read; stale → `StaleVersionError`. */
  version: string;
}

/** Shared volumes: list them, publish their external mount endpoint. */
export interface SharedVolumeSource {
  /**
   * All shared volumes over all namespaces. Volumes that do not qualify are dropped silently; the first
   * failing namespace fails the whole list (no partial results), as upstream.
   */
  listSharedVolumes(options?: CallOptions): Promise<SharedVolume[]>;
  /**
   * Read one volume as a shared volume: `undefined` when it exists but does not qualify;
   * `NotFoundError` when it (or its namespace) is absent.
   */
  getSharedVolume(ref: VolumeRef, options?: CallOptions): Promise<SharedVolume | undefined>;
  /** `PUT …/volumes/{id}/nfs/mount-endpoint` with the given version (no `ignore-version`). */
  setExternalEndpoint(request: SetExternalEndpointRequest, options?: CallOptions): Promise<void>;
}

/** A storage node as read from the control plane. */
export interface StorageNode {
  /** Node ID (UUID). */
  id: string;
  /** Hostname; equals the Kubernetes node name. */
  name: string;
  health: Health;
  /** All labels, including the reserved ones StorageOS reflects back (e.g. `storageos.com/computeonly`). */
  labels: Labels;
  /** Compute-only state, parsed from the reserved label (absent → false). */
  computeOnly: boolean;
  /** Opaque optimistic-concurrency token; echo it on every write. */
  version: string;
  createdAt: string;
  updatedAt: string;
}

/** What {@link NodeLabels.updateNodeLabels} needs. */
export interface UpdateNodeLabelsRequest {
  /** Node ID. */
  id: string;
  /**
   * The complete label set to store (replaces the current one). Reserved labels must equal the ones the
   * node currently carries: StorageOS rejects alterations of its reserved labels (400).
   */
  labels: Labels;
  /** The node version last read. */
  version: string;
}

/** What {@link NodeLabels.setComputeOnly} needs. */
export interface SetComputeOnlyRequest {
  /** Node ID. */
  id: string;
  computeOnly: boolean;
  /** The node version last read. */
  version: string;
}

/** Node labels: list nodes, ensure their labels, set compute-only. */
export interface NodeLabels {
  /** `GET /nodes`. */
  listNodes(options?: CallOptions): Promise<StorageNode[]>;
  /** `PUT /nodes/{id}` with `{labels, version}`; returns the updated node (new version). */
  updateNodeLabels(request: UpdateNodeLabelsRequest, options?: CallOptions): Promise<StorageNode>;
  /** `PUT /nodes/{id}/compute-only` with `{computeOnly, version}`; returns the updated node. */
  setComputeOnly(request: SetComputeOnlyRequest, options?: CallOptions): Promise<StorageNode>;
}

/** Everything a storage control plane client offers. */
export interface StorageControlPlane extends VolumeProvisioner, SharedVolumeSource, NodeLabels {}
