/**
 * The embedded control plane's objects and their rules: namespaces, volumes (with a directory each),
 * the NFS shared-volume lifecycle, and nodes with labels and compute-only. Every mutation bumps the
 * object's version and is persisted (see `persist.ts`) before the caller answers.
 *
 * Rules follow the StorageOS v2 API (reference storageos.md §3): writes carry the version last read
 * (412 when stale), names are unique per namespace (409), alterations of reserved node labels are
 * rejected (400), the mount endpoint and compute-only state are reflected back as reserved labels.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { isReservedLabel } from '../../../lib/storage/labels.ts';
import { LABELS, type Labels } from '../../../lib/storage/types.ts';
import type { ApiNamespace, ApiNode, ApiVolume } from '../../../lib/storage/storageos/wire.ts';
import { ApiFailure } from './errors.ts';
import { checkVersion, encodeVersion } from './version.ts';

/** A namespace as stored. */
export interface NamespaceRecord {
  id: string;
  name: string;
  labels: Labels;
  createdAt: string;
  updatedAt: string;
  version: number;
}

/** A volume as stored. */
export interface VolumeRecord {
  id: string;
  name: string;
  namespaceID: string;
  description: string;
  fsType: string;
  sizeBytes: number;
  labels: Labels;
  attachmentType: 'unknown' | 'detached' | 'nfs' | 'host';
  attachedOn: string;
  /** The NFS server endpoint while shared; `null` when not shared or failing over. */
  nfsServiceEndpoint: string | null;
  masterNodeID: string;
  createdAt: string;
  updatedAt: string;
  version: number;
}

/** A node as stored. */
export interface NodeRecord {
  id: string;
  name: string;
  health: 'online' | 'offline' | 'unknown';
  labels: Labels;
  createdAt: string;
  updatedAt: string;
  version: number;
}

/** Everything that survives a restart. */
export interface StateSnapshot {
  format: 1;
  namespaces: NamespaceRecord[];
  volumes: VolumeRecord[];
  nodes: NodeRecord[];
  /** Counter behind allocated NFS endpoints. */
  endpointSeq: number;
}

/** Options of {@link StorageState.createVolume}. */
export interface CreateVolumeInput {
  name: string;
  fsType: string;
  sizeBytes: number;
  description?: string;
  labels?: Labels;
}

/**
 * The control plane's state. Methods throw {@link ApiFailure} with the status the API answers.
 * `onChange` runs after every mutation (the server persists there).
 */
export class StorageState {
  /** Directory holding one sub-directory per volume. */
  readonly volumeRoot: string;
  #namespaces = new Map<string, NamespaceRecord>();
  #volumes = new Map<string, VolumeRecord>();
  #nodes = new Map<string, NodeRecord>();
  #endpointSeq = 0;
  #onChange: () => Promise<void>;

  constructor(volumeRoot: string, snapshot: StateSnapshot | undefined, onChange: () => Promise<void>) {
    this.volumeRoot = volumeRoot;
    this.#onChange = onChange;
    if (snapshot !== undefined) {
      for (const ns of snapshot.namespaces) this.#namespaces.set(ns.id, ns);
      for (const v of snapshot.volumes) this.#volumes.set(v.id, v);
      for (const n of snapshot.nodes) this.#nodes.set(n.id, n);
      this.#endpointSeq = snapshot.endpointSeq;
    }
    if (![...this.#namespaces.values()].some((ns) => ns.name === 'default')) {
      const now = timestamp();
      const ns: NamespaceRecord = { id: randomUUID(), name: 'default', labels: {}, createdAt: now, updatedAt: now, version: 1 };
      this.#namespaces.set(ns.id, ns);
    }
  }

  /** A copy of everything, for persistence and inspection. */
  snapshot(): StateSnapshot {
    return structuredClone({
      format: 1,
      namespaces: [...this.#namespaces.values()],
      volumes: [...this.#volumes.values()],
      nodes: [...this.#nodes.values()],
      endpointSeq: this.#endpointSeq,
    });
  }

  // ---- namespaces ----

  /** All namespaces in wire form. */
  listNamespaces(): ApiNamespace[] {
    return [...this.#namespaces.values()].map(namespaceToWire);
  }

  /** One namespace; 404 when absent. */
  getNamespace(id: string): ApiNamespace {
    return namespaceToWire(this.#namespace(id));
  }

  /** Create a namespace; 409 when the name is taken. */
  async createNamespace(name: string, labels: Labels = {}): Promise<ApiNamespace> {
    if ([...this.#namespaces.values()].some((ns) => ns.name === name)) {
      throw new ApiFailure(409, `namespace with name "${name}" already exists`);
    }
    const now = timestamp();
    const ns: NamespaceRecord = { id: randomUUID(), name, labels: { ...labels }, createdAt: now, updatedAt: now, version: 1 };
    this.#namespaces.set(ns.id, ns);
    await this.#onChange();
    return namespaceToWire(ns);
  }

  /** Delete an empty namespace; 409 while it holds volumes. */
  async deleteNamespace(id: string, version: string | undefined, ignoreVersion: boolean): Promise<void> {
    const ns = this.#namespace(id);
    checkVersion(ns.version, version, ignoreVersion);
    if ([...this.#volumes.values()].some((v) => v.namespaceID === id)) throw new ApiFailure(409, 'namespace is in use: it holds volumes');
    this.#namespaces.delete(id);
    await this.#onChange();
  }

  // ---- volumes ----

  /** The volumes of a namespace in wire form; 404 when the namespace is absent. */
  listVolumes(namespaceID: string): ApiVolume[] {
    this.#namespace(namespaceID);
    return [...this.#volumes.values()].filter((v) => v.namespaceID === namespaceID).map((v) => this.#volumeToWire(v));
  }

  /** One volume; 404 when it or its namespace is absent. */
  getVolume(namespaceID: string, id: string): ApiVolume {
    return this.#volumeToWire(this.#volume(namespaceID, id));
  }

  /**
   * Create a volume and its directory. 404 for an unknown namespace, 409 for a taken name. The
   * `storageos.com/hint.master` label places the master on the named node; otherwise the online node
   * with the fewest volumes takes it (none → unplaced).
   */
  async createVolume(namespaceID: string, input: CreateVolumeInput): Promise<ApiVolume> {
    this.#namespace(namespaceID);
    if ([...this.#volumes.values()].some((v) => v.namespaceID === namespaceID && v.name === input.name)) {
      throw new ApiFailure(409, `volume with name "${input.name}" already exists`);
    }
    const now = timestamp();
    const labels = { ...input.labels };
    const volume: VolumeRecord = {
      id: randomUUID(),
      name: input.name,
      namespaceID,
      description: input.description ?? '',
      fsType: input.fsType,
      sizeBytes: input.sizeBytes,
      labels,
      attachmentType: 'detached',
      attachedOn: '',
      nfsServiceEndpoint: null,
      masterNodeID: this.#placeMaster(labels[LABELS.hintMaster]),
      createdAt: now,
      updatedAt: now,
      version: 1,
    };
    // Claim the name before the first await, so two concurrent creates cannot both pass the check.
    this.#volumes.set(volume.id, volume);
    try {
      await mkdir(this.volumePath(volume.id), { recursive: true });
    } catch (err) {
      this.#volumes.delete(volume.id);
      throw new ApiFailure(500, `cannot create the volume directory: ${(err as Error).message}`);
    }
    await this.#onChange();
    return this.#volumeToWire(volume);
  }

  /** Delete a volume and its directory; `?version=` must be current. */
  async deleteVolume(namespaceID: string, id: string, version: string | undefined, ignoreVersion: boolean): Promise<void> {
    const volume = this.#volume(namespaceID, id);
    checkVersion(volume.version, version, ignoreVersion);
    this.#volumes.delete(id);
    await rm(this.volumePath(id), { recursive: true, force: true });
    await this.#onChange();
  }

  /**
   * Publish the external NFS mount endpoint: stored as the `storageos.com/nfs/mount-endpoint` label
   * (an empty endpoint removes it).
   */
  async setMountEndpoint(namespaceID: string, id: string, endpoint: string, version: string | undefined, ignoreVersion: boolean): Promise<void> {
    const volume = this.#volume(namespaceID, id);
    checkVersion(volume.version, version, ignoreVersion);
    if (endpoint === '') delete volume.labels[LABELS.nfsMountEndpoint];
    else volume.labels[LABELS.nfsMountEndpoint] = endpoint;
    await this.#touch(volume);
  }

  /** The directory backing volume `id`. */
  volumePath(id: string): string {
    return join(this.volumeRoot, id);
  }

  // ---- NFS shared-volume lifecycle (ops / tests) ----

  /**
   * Attach a volume as shared (RWX): attachment `nfs` and an NFS server endpoint, `endpoint` or a fresh
   * `10.x.y.z:port`. 404 when the volume is absent.
   */
  async shareVolume(id: string, endpoint?: string): Promise<ApiVolume> {
    const volume = this.#volumeByID(id);
    volume.attachmentType = 'nfs';
    volume.nfsServiceEndpoint = endpoint ?? this.#allocateEndpoint();
    await this.#touch(volume);
    return this.#volumeToWire(volume);
  }

  /**
   * Fail the NFS server over. `inProgress: true` models the move itself (the endpoint disappears);
   * otherwise the server comes up at `endpoint` or a fresh one. 409 when the volume is not shared.
   */
  async failoverVolume(id: string, options: { endpoint?: string; inProgress?: boolean } = {}): Promise<ApiVolume> {
    const volume = this.#volumeByID(id);
    if (volume.attachmentType !== 'nfs') throw new ApiFailure(409, 'volume is not shared');
    volume.nfsServiceEndpoint = options.inProgress === true ? null : (options.endpoint ?? this.#allocateEndpoint());
    await this.#touch(volume);
    return this.#volumeToWire(volume);
  }

  /** Stop sharing a volume: detached, no NFS endpoint. */
  async unshareVolume(id: string): Promise<ApiVolume> {
    const volume = this.#volumeByID(id);
    volume.attachmentType = 'detached';
    volume.nfsServiceEndpoint = null;
    await this.#touch(volume);
    return this.#volumeToWire(volume);
  }

  /** Every volume in wire form (all namespaces). */
  allVolumes(): ApiVolume[] {
    return [...this.#volumes.values()].map((v) => this.#volumeToWire(v));
  }

  // ---- nodes ----

  /** All nodes in wire form. */
  listNodes(): ApiNode[] {
    return [...this.#nodes.values()].map(nodeToWire);
  }

  /** One node; 404 when absent. */
  getNode(id: string): ApiNode {
    return nodeToWire(this.#node(id));
  }

  /**
   * Register a node (StorageOS nodes join by themselves; the local stack and tests add them here).
   * Idempotent by name: an existing node is returned unchanged.
   */
  async addNode(name: string, labels: Labels = {}): Promise<ApiNode> {
    const existing = [...this.#nodes.values()].find((n) => n.name === name);
    if (existing !== undefined) return nodeToWire(existing);
    const now = timestamp();
    const node: NodeRecord = { id: randomUUID(), name, health: 'online', labels: { ...labels }, createdAt: now, updatedAt: now, version: 1 };
    this.#nodes.set(node.id, node);
    await this.#onChange();
    return nodeToWire(node);
  }

  /** Remove a node (ops). 404 when absent. */
  async removeNode(id: string): Promise<void> {
    this.#node(id);
    this.#nodes.delete(id);
    await this.#onChange();
  }

  /**
   * `PUT /nodes/{id}`: replace the unreserved labels. Reserved labels in the body must equal the node's
   * current ones (400 otherwise); reserved labels absent from the body are kept.
   */
  async updateNode(id: string, labels: Labels, version: string | undefined, ignoreVersion: boolean): Promise<ApiNode> {
    const node = this.#node(id);
    checkVersion(node.version, version, ignoreVersion);
    for (const [key, value] of Object.entries(labels)) {
      if (isReservedLabel(key) && node.labels[key] !== value) {
        throw new ApiFailure(400, `alterations of StorageOS labels are rejected: ${key}`);
      }
    }
    const kept = Object.entries(node.labels).filter(([key]) => isReservedLabel(key));
    node.labels = { ...Object.fromEntries(kept), ...labels };
    await this.#touch(node);
    return nodeToWire(node);
  }

  /** `PUT /nodes/{id}/compute-only`: reflected as the `storageos.com/computeonly` label (removed when false). */
  async setComputeOnly(id: string, computeOnly: boolean, version: string | undefined, ignoreVersion: boolean): Promise<ApiNode> {
    const node = this.#node(id);
    checkVersion(node.version, version, ignoreVersion);
    if (computeOnly) node.labels[LABELS.computeOnly] = 'true';
    else delete node.labels[LABELS.computeOnly];
    await this.#touch(node);
    return nodeToWire(node);
  }

  // ---- internals ----

  #namespace(id: string): NamespaceRecord {
    const ns = this.#namespaces.get(id);
    if (ns === undefined) throw new ApiFailure(404, 'namespace not found');
    return ns;
  }

  #volume(namespaceID: string, id: string): VolumeRecord {
    this.#namespace(namespaceID);
    const volume = this.#volumes.get(id);
    if (volume === undefined || volume.namespaceID !== namespaceID) throw new ApiFailure(404, 'volume not found');
    return volume;
  }

  #volumeByID(id: string): VolumeRecord {
    const volume = this.#volumes.get(id);
    if (volume === undefined) throw new ApiFailure(404, 'volume not found');
    return volume;
  }

  #node(id: string): NodeRecord {
    const node = this.#nodes.get(id);
    if (node === undefined) throw new ApiFailure(404, 'node not found');
    return node;
  }

  async #touch(object: { version: number; updatedAt: string }): Promise<void> {
    object.version += 1;
    object.updatedAt = timestamp();
    await this.#onChange();
  }

  #placeMaster(hint: string | undefined): string {
    const nodes = [...this.#nodes.values()];
    if (hint !== undefined) {
      const hinted = nodes.find((n) => n.name === hint);
      if (hinted !== undefined) return hinted.id;
    }
    const online = nodes.filter((n) => n.health === 'online' && n.labels[LABELS.computeOnly] !== 'true');
    if (online.length === 0) return '';
    const load = (nodeID: string): number => [...this.#volumes.values()].filter((v) => v.masterNodeID === nodeID).length;
    return online.reduce((best, n) => (load(n.id) < load(best.id) ? n : best)).id;
  }

  #allocateEndpoint(): string {
    const seq = ++this.#endpointSeq;
    return `10.${64 + ((seq >> 16) & 63)}.${(seq >> 8) & 255}.${(seq & 255) + 1}:${25000 + (seq % 10000)}`;
  }

  #volumeToWire(v: VolumeRecord): ApiVolume {
    const master = this.#nodes.get(v.masterNodeID);
    return {
      id: v.id,
      name: v.name,
      description: v.description,
      attachedOn: v.attachedOn,
      namespaceID: v.namespaceID,
      labels: { ...v.labels },
      fsType: v.fsType,
      attachmentType: v.attachmentType,
      nfs: { exports: [], serviceEndpoint: v.nfsServiceEndpoint },
      master: { id: v.id, nodeID: v.masterNodeID, promotable: true, health: master?.health === 'online' ? 'online' : 'unknown' },
      sizeBytes: v.sizeBytes,
      createdAt: v.createdAt,
      updatedAt: v.updatedAt,
      version: encodeVersion(v.version),
      localPath: this.volumePath(v.id),
    };
  }
}

function namespaceToWire(ns: NamespaceRecord): ApiNamespace {
  return { id: ns.id, name: ns.name, labels: { ...ns.labels }, createdAt: ns.createdAt, updatedAt: ns.updatedAt, version: encodeVersion(ns.version) };
}

function nodeToWire(n: NodeRecord): ApiNode {
  return { id: n.id, name: n.name, health: n.health, labels: { ...n.labels }, createdAt: n.createdAt, updatedAt: n.updatedAt, version: encodeVersion(n.version) };
}

function timestamp(): string {
  return new Date().toISOString();
}
