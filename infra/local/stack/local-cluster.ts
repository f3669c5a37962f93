/**
 * What a fresh emulated cluster needs for the `local` provisioner to serve claims: one Kubernetes Node
 * (`local-node`) that is also a storage node of the embedded control plane, and the default
 * StorageClass `local` (`claimflow.io/local`). Nodes created later in the emulator are registered on
 * the control plane as they appear (a storage node per Kubernetes Node, as StorageOS runs a node
 * container on every node).
 *
 * @example
 * const seeded = await seedLocalCluster({ kubeconfigPath, store: kubeApi.store, storage: storageApi.state });
 * // ... later
 * seeded.stop();
 */
import { CoreV1Api, KubeConfig, StorageV1Api } from '@kubernetes/client-node';
import type { MemoryStore } from '../kube-api/store.ts';
import type { StorageState } from '../storage-api/state.ts';

/** The Node every emulated local cluster starts with. */
export const LOCAL_NODE_NAME = 'local-node';

/** The default StorageClass of the local stack. */
export const LOCAL_STORAGE_CLASS = 'local';

/** The provisioner name of the `local` backend (lib/provisioner/options.ts's default for it). */
export const LOCAL_PROVISIONER_NAME = 'claimflow.io/local';

/** Options of {@link seedLocalCluster}. */
export interface SeedLocalClusterOptions {
  /** Kubeconfig of the emulator (the seed objects are created over its HTTP API, through admission). */
  kubeconfigPath: string;
  /** The emulator's store, watched for Nodes created later. */
  store: MemoryStore;
  /** The control plane's state, where storage nodes are registered. */
  storage: StorageState;
  /** Reports a Node that could not be registered (default: ignored). */
  warn?: (message: string) => void;
}

/** A running seed: {@link SeededCluster.stop} ends the Node sync. */
export interface SeededCluster {
  nodeName: string;
  storageClassName: string;
  stop(): void;
}

/** Raised when the seed objects cannot be created in the emulator. */
export class LocalClusterSeedError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'LocalClusterSeedError';
  }
}

/**
 * Creates `local-node` and the default StorageClass `local` in the emulator, registers every Node as a
 * storage node, and keeps registering Nodes added afterwards (Node deletion does not remove the storage
 * node: volumes may still live there).
 */
export async function seedLocalCluster(options: SeedLocalClusterOptions): Promise<SeededCluster> {
  const warn = options.warn ?? (() => {});
  const registered = new Set<string>();
  const register = (name: string): void => {
    if (registered.has(name)) return;
    registered.add(name);
    options.storage.addNode(name).catch((error: unknown) => {
      registered.delete(name);
      warn(`storage node ${name}: ${(error as Error).message}`);
    });
  };
  // read-only and never throwing, so without the copy a subscription makes of every event
  const unsubscribe = options.store.watchRaw((event) => {
    if (/^\/?nodes$/.test(event.resource) && event.type === 'ADDED' && event.object.metadata?.name) register(event.object.metadata.name);
  });

  try {
    const kc = new KubeConfig();
    kc.loadFromFile(options.kubeconfigPath);
    const core = kc.makeApiClient(CoreV1Api);
    const storageV1 = kc.makeApiClient(StorageV1Api);
    await core.createNode({
      body: {
        metadata: { name: LOCAL_NODE_NAME, labels: { 'kubernetes.io/hostname': LOCAL_NODE_NAME, 'kubernetes.io/os': 'linux' } },
      },
    });
    await storageV1.createStorageClass({
      body: {
        metadata: { name: LOCAL_STORAGE_CLASS, annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } },
        provisioner: LOCAL_PROVISIONER_NAME,
        reclaimPolicy: 'Delete',
        volumeBindingMode: 'Immediate',
      },
    });
    for (const node of (await core.listNode()).items) if (node.metadata?.name) register(node.metadata.name);
    // the Node's own registration must be done before a claim can be placed on it
    await options.storage.addNode(LOCAL_NODE_NAME);
  } catch (error) {
    unsubscribe();
    throw new LocalClusterSeedError(`seeding the emulated cluster: ${(error as Error).message}`, { cause: error });
  }
  return { nodeName: LOCAL_NODE_NAME, storageClassName: LOCAL_STORAGE_CLASS, stop: unsubscribe };
}
