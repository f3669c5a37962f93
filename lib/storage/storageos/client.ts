/**
 * The StorageOS v2 client behind the controllers' storage interfaces: real paths and bodies
 * (reference storageos.md §3), namespace-name → namespace-ID resolution as the API requires, and the
 * mapping of wire objects to the domain types of `../types.ts`. Transport concerns (auth, timeouts,
 * backoff, error mapping) live in {@link StorageOSTransport}.
 */
import { AlreadyExistsError, NamespaceNotFoundError, NotFoundError, StaleVersionError, StorageError } from '../errors.ts';
import { parseBool } from '../labels.ts';
import { toSharedVolume } from '../shared-volume.ts';
import {
  LABELS,
  type CallOptions,
  type CreateVolumeRequest,
  type SetComputeOnlyRequest,
  type SetExternalEndpointRequest,
  type SharedVolume,
  type StorageControlPlane,
  type StorageNode,
  type UpdateNodeLabelsRequest,
  type Volume,
  type VolumeRef,
} from '../types.ts';
import { StorageOSTransport, type StorageOSTransportOptions } from './transport.ts';
import {
  type ApiNamespace,
  type ApiNode,
  type ApiVolume,
  type CreateVolumeData,
  NamespaceSchema,
  NodeSchema,
  VolumeSchema,
} from './wire.ts';
import { z } from 'zod';

/** Options of {@link StorageOSClient}: the transport's, or a transport to share. */
export type StorageOSClientOptions = StorageOSTransportOptions | { transport: StorageOSTransport };

/** How many times a delete without a caller-supplied version re-reads after a 412. */
const DELETE_STALE_RETRIES = 3;

/**
 * StorageOS v2 API client implementing {@link StorageControlPlane}.
 *
 * @example
 * const storage = new StorageOSClient({ endpoint: process.env.STORAGE_API_URL!, username: 'storageos', password: 'storageos' });
 * const volume = await storage.createVolume({ namespace: 'default', name: 'pvc-1', sizeBytes: 5 * 2 ** 30 });
 * const shared = await storage.listSharedVolumes();
 */
export class StorageOSClient implements StorageControlPlane {
  /** The transport (token lifecycle, retries). */
  readonly transport: StorageOSTransport;
  /** Namespace name → ID, filled by every namespace list. */
  #namespaceIDs = new Map<string, string>();
  /** Namespace ID → name. */
  #namespaceNames = new Map<string, string>();
  /** The namespace list in flight, shared by concurrent cache misses. */
  #listing: Promise<ApiNamespace[]> | undefined;
  /** Namespace creations in flight, by name. */
  #creating = new Map<string, Promise<string>>();

  constructor(options: StorageOSClientOptions) {
    this.transport = 'transport' in options ? options.transport : new StorageOSTransport(options);
  }

  /** Drop the token so the next call logs in again (api-manager `apiReset`). */
  reset(): void {
    this.transport.reset();
  }

  /** Refresh the token (`POST /v2/auth/refresh`), logging in again if that fails. */
  refresh(options?: CallOptions): Promise<void> {
    return this.transport.refresh(options);
  }

  /** `GET /namespaces`. */
  async listNamespaces(options: CallOptions = {}): Promise<ApiNamespace[]> {
    const { body } = await this.transport.request('GET', '/namespaces', options);
    const namespaces = z.array(NamespaceSchema).parse(body ?? []);
    this.#namespaceIDs.clear();
    this.#namespaceNames.clear();
    for (const ns of namespaces) this.#remember(ns);
    return namespaces;
  }

  /** `GET /namespaces/{namespaceID}/volumes` of the namespace named `namespace`. */
  async listVolumes(namespace: string, options: CallOptions = {}): Promise<Volume[]> {
    return this.#inNamespace(namespace, options, async (nsID) => {
      const { body } = await this.transport.request('GET', `/namespaces/${enc(nsID)}/volumes`, options);
      return z.array(VolumeSchema).parse(body ?? []).map((v) => toVolume(v, namespace));
    });
  }

  /** @inheritdoc */
  async createVolume(request: CreateVolumeRequest, options: CallOptions = {}): Promise<Volume> {
    const labels = { ...request.labels };
    if (request.nodeName !== undefined && request.nodeName !== '') labels[LABELS.hintMaster] = request.nodeName;
    const nsID = await this.#ensureNamespace(request.namespace, options);
    const data: CreateVolumeData = {
      namespaceID: nsID,
      name: request.name,
      fsType: (request.fsType ?? 'ext4') as CreateVolumeData['fsType'],
      sizeBytes: request.sizeBytes,
      labels,
      ...(request.description === undefined ? {} : { description: request.description }),
    };
    let retried = false;
    try {
      const { body } = await this.transport.request('POST', `/namespaces/${enc(nsID)}/volumes`, {
        ...options,
        body: data,
        onRetry: () => {
          retried = true;
        },
      });
      return toVolume(VolumeSchema.parse(body), request.namespace);
    } catch (err) {
      // A create retried after a timeout or 5xx may have landed the first time: the 409 is our own volume.
      if (retried && err instanceof AlreadyExistsError) {
        const existing = await this.getVolumeByName(request.namespace, request.name, options);
        if (existing !== undefined) return existing;
      }
      throw err;
    }
  }

  /** @inheritdoc */
  async getVolume(ref: VolumeRef, options: CallOptions = {}): Promise<Volume> {
    return this.#inNamespace(ref.namespace, options, async (nsID) => {
      const { body } = await this.transport.request('GET', `/namespaces/${enc(nsID)}/volumes/${enc(ref.id)}`, options);
      return toVolume(VolumeSchema.parse(body), ref.namespace);
    });
  }

  /** @inheritdoc */
  async getVolumeByName(namespace: string, name: string, options: CallOptions = {}): Promise<Volume | undefined> {
    try {
      return (await this.listVolumes(namespace, options)).find((v) => v.name === name);
    } catch (err) {
      if (err instanceof NotFoundError) return undefined;
      throw err;
    }
  }

  /** @inheritdoc */
  async deleteVolume(ref: VolumeRef & { version?: string }, options: CallOptions = {}): Promise<boolean> {
    for (let attempt = 0; ; attempt++) {
      try {
        const version = ref.version ?? (await this.getVolume(ref, options)).version;
        await this.#inNamespace(ref.namespace, options, (nsID) =>
          this.transport.request('DELETE', `/namespaces/${enc(nsID)}/volumes/${enc(ref.id)}`, {
            ...options,
            query: { version },
          }),
        );
        return true;
      } catch (err) {
        if (err instanceof NotFoundError) return false;
        if (err instanceof StaleVersionError && ref.version === undefined && attempt < DELETE_STALE_RETRIES) continue;
        throw err;
      }
    }
  }

  /** @inheritdoc */
  async listSharedVolumes(options: CallOptions = {}): Promise<SharedVolume[]> {
    const namespaces = await this.listNamespaces(options);
    const perNamespace = await Promise.all(
      namespaces.map(async (ns) => {
        const { body } = await this.transport.request('GET', `/namespaces/${enc(ns.id)}/volumes`, options);
        return z.array(VolumeSchema).parse(body ?? []).map((v) => toVolume(v, ns.name));
      }),
    );
    return perNamespace.flat().flatMap((v) => toSharedVolume(v) ?? []);
  }

  /** @inheritdoc */
  async getSharedVolume(ref: VolumeRef, options: CallOptions = {}): Promise<SharedVolume | undefined> {
    return toSharedVolume(await this.getVolume(ref, options));
  }

  /** @inheritdoc */
  async setExternalEndpoint(request: SetExternalEndpointRequest, options: CallOptions = {}): Promise<void> {
    const put = (nsID: string) =>
      this.transport.request('PUT', `/namespaces/${enc(nsID)}/volumes/${enc(request.id)}/nfs/mount-endpoint`, {
        ...options,
        body: { mountEndpoint: request.endpoint, version: request.version },
      });
    if (request.namespaceID !== undefined && request.namespaceID !== '') await put(request.namespaceID);
    else await this.#inNamespace(request.namespace, options, put);
  }

  /** @inheritdoc */
  async listNodes(options: CallOptions = {}): Promise<StorageNode[]> {
    const { body } = await this.transport.request('GET', '/nodes', options);
    return z.array(NodeSchema).parse(body ?? []).map(toNode);
  }

  /** @inheritdoc */
  async updateNodeLabels(request: UpdateNodeLabelsRequest, options: CallOptions = {}): Promise<StorageNode> {
    const { body } = await this.transport.request('PUT', `/nodes/${enc(request.id)}`, {
      ...options,
      body: { labels: request.labels, version: request.version },
    });
    return toNode(NodeSchema.parse(body));
  }

  /** @inheritdoc */
  async setComputeOnly(request: SetComputeOnlyRequest, options: CallOptions = {}): Promise<StorageNode> {
    const { body } = await this.transport.request('PUT', `/nodes/${enc(request.id)}/compute-only`, {
      ...options,
      body: { computeOnly: request.computeOnly, version: request.version },
    });
    return toNode(NodeSchema.parse(body));
  }

  #remember(ns: ApiNamespace): void {
    this.#namespaceIDs.set(ns.name, ns.id);
    this.#namespaceNames.set(ns.id, ns.name);
  }

  /** The ID of namespace `name`, from the cache or a fresh list; {@link NamespaceNotFoundError} if none. */
  async #namespaceID(name: string, options: CallOptions, fresh = false): Promise<string> {
    const cached = fresh ? undefined : this.#namespaceIDs.get(name);
    if (cached !== undefined) return cached;
    if (fresh) await this.listNamespaces(options);
    else {
      // Concurrent misses share one list (its own timeouts apply; one caller's abort does not cancel it).
      this.#listing ??= this.listNamespaces().finally(() => {
        this.#listing = undefined;
      });
      await this.#listing;
    }
    const id = this.#namespaceIDs.get(name);
    if (id === undefined) throw new NamespaceNotFoundError(name, 'GET /v2/namespaces');
    return id;
  }

  /** Resolve namespace `name`, creating it when absent (as the CSI driver does on CreateVolume). */
  async #ensureNamespace(name: string, options: CallOptions): Promise<string> {
    try {
      return await this.#namespaceID(name, options);
    } catch (err) {
      if (!(err instanceof NamespaceNotFoundError)) throw err;
    }
    let creating = this.#creating.get(name);
    if (creating === undefined) {
      creating = this.#createNamespace(name, {}).finally(() => this.#creating.delete(name));
      this.#creating.set(name, creating);
    }
    return creating;
  }

  async #createNamespace(name: string, options: CallOptions): Promise<string> {
    try {
      const { body } = await this.transport.request('POST', '/namespaces', { ...options, body: { name, labels: {} } });
      const ns = NamespaceSchema.parse(body);
      this.#remember(ns);
      return ns.id;
    } catch (err) {
      if (err instanceof AlreadyExistsError) return this.#namespaceID(name, options, true);
      throw err;
    }
  }

  /**
   * Run `call` with the ID of namespace `name`. A 404 on a cached ID may mean the namespace was
   * re-created under a new ID: re-resolve once and repeat the call if the ID changed.
   */
  async #inNamespace<T>(name: string, options: CallOptions, call: (nsID: string) => Promise<T>): Promise<T> {
    const cached = this.#namespaceIDs.has(name);
    const nsID = await this.#namespaceID(name, options);
    try {
      return await call(nsID);
    } catch (err) {
      if (!(err instanceof NotFoundError) || !cached) throw err;
      const freshID = await this.#namespaceID(name, options, true);
      if (freshID === nsID) throw err;
      return call(freshID);
    }
  }
}

/** A wire volume as the domain {@link Volume}; `namespace` is the name of its namespace. */
export function toVolume(api: ApiVolume, namespace: string): Volume {
  return {
    id: api.id,
    name: api.name,
    namespaceID: api.namespaceID,
    namespace,
    description: api.description,
    sizeBytes: api.sizeBytes,
    fsType: api.fsType,
    labels: api.labels,
    attachmentType: api.attachmentType,
    attachedOn: api.attachedOn,
    nfsServiceEndpoint: api.nfs?.serviceEndpoint ?? null,
    masterNodeID: api.master?.nodeID ?? '',
    ...(api.localPath === undefined ? {} : { localPath: api.localPath }),
    version: api.version,
    createdAt: api.createdAt,
    updatedAt: api.updatedAt,
  };
}

/** A wire node as the domain {@link StorageNode}; compute-only is read from its reserved label. */
export function toNode(api: ApiNode): StorageNode {
  const raw = api.labels[LABELS.computeOnly];
  return {
    id: api.id,
    name: api.name,
    health: api.health,
    labels: api.labels,
    computeOnly: raw === undefined ? false : (parseBool(raw) ?? false),
    version: api.version,
    createdAt: api.createdAt,
    updatedAt: api.updatedAt,
  };
}

function enc(segment: string): string {
  if (segment === '') throw new StorageError('empty path segment');
  return encodeURIComponent(segment);
}
