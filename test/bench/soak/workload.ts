/**
 * The soak's workload on one cluster, as users and the CSI driver would act: static volumes and claims that
 * bind, default-class claims provisioned and later deleted, claims deleted while they bind, RWX shared
 * volumes (the driver's backend volume, shared, its PV and claim, a VolumeAttachment), and node label
 * changes. The sequence of operations is a function of the seed; every write is retried until the API takes
 * it (injected faults hit the workload too), and the outcome is recorded as what the checker must find.
 */
import { CoreV1Api, KubeConfig, StorageV1Api, type V1Node } from '@kubernetes/client-node';
import { NODE_ID_ANNOTATION, STORAGEOS_DRIVER } from '../../../lib/label-sync/predicate.ts';
import type { SoakCluster } from './clusters.ts';
import { Random } from './random.ts';
import { makeBudgetedApiClient } from '../../../lib/kube/client.ts';

export const NAMESPACE = 'default';
/** Label keys the workload changes on nodes. */
const NODE_LABEL_KEYS = ['soak.claimflow.io/zone', 'soak.claimflow.io/rack', 'tier'];

export type ClaimKind = 'static' | 'dynamic' | 'shared' | 'deleted-while-binding';

export interface ClaimRecord {
  name: string;
  kind: ClaimKind;
  uid: string;
  deleted: boolean;
  /** Its PV when the workload made it (static, shared). */
  pv?: string;
}

/** What the workload did and what it expects. */
export interface WorkloadState {
  claims: Map<string, ClaimRecord>;
  staticVolumes: string[];
  sharedVolumes: { pv: string; claim: string; volumeId: string }[];
  nodes: string[];
  operations: Record<string, number>;
  /** Writes retried because the API (under faults) refused them. */
  retries: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Repeats a write until it is taken; `exists` (409 on create, 404 on delete) counts as done. */
async function persist<T>(state: WorkloadState, write: () => Promise<T>, done: (status: number) => boolean = () => false): Promise<T | undefined> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await write();
    } catch (error) {
      const status = (error as { code?: number }).code ?? 0;
      if (done(status)) return undefined;
      if (attempt >= 40) throw error;
      state.retries++;
      await sleep(Math.min(2000, 100 * 2 ** Math.min(attempt, 4)));
    }
  }
}

/** One cluster's workload driver. */
export class Workload {
  readonly state: WorkloadState = { claims: new Map(), staticVolumes: [], sharedVolumes: [], nodes: [], operations: {}, retries: 0 };
  readonly #cluster: SoakCluster;
  readonly #random: Random;
  readonly #core: CoreV1Api;
  readonly #storageV1: StorageV1Api;
  #seq = 0;
  readonly #inFlight = new Set<Promise<unknown>>();

  constructor(cluster: SoakCluster, random: Random) {
    this.#cluster = cluster;
    this.#random = random;
    const kc = new KubeConfig();
    kc.loadFromFile(cluster.adminKubeconfig);
    this.#core = makeBudgetedApiClient(kc, CoreV1Api);
    this.#storageV1 = makeBudgetedApiClient(kc, StorageV1Api);
  }

  #count(op: string): void {
    this.state.operations[op] = (this.state.operations[op] ?? 0) + 1;
  }

  #name(what: string): string {
    return `${this.#cluster.prefix}-${what}-${++this.#seq}`;
  }

  /** Storage nodes for label changes: Nodes annotated by the (emulated) CSI node registrar. */
  async setup(nodes: number): Promise<void> {
    for (let i = 0; i < nodes; i++) {
      const name = `${this.#cluster.prefix}-node-${i}`;
      await this.#core.createNode({ body: { metadata: { name, labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux' } } } });
      const storageNode = await this.#cluster.storage.state.addNode(name);
      const node = await this.#core.readNode({ name });
      node.metadata!.annotations = { ...node.metadata!.annotations, [NODE_ID_ANNOTATION]: JSON.stringify({ [STORAGEOS_DRIVER]: storageNode.id }) };
      await this.#core.replaceNode({ name, body: node });
      this.state.nodes.push(name);
    }
  }

  /** Starts one operation (chosen from the seed); it runs in the background. */
  step(): void {
    const op = this.#random.weighted({ static: 3, dynamic: 3, deleteDynamic: 2, deleteWhileBinding: 1, shared: 1, nodeLabels: 2 });
    const r = this.#random.fork(this.#seq);
    const run = (async () => {
      switch (op) {
        case 'static': return this.#staticPair();
        case 'dynamic': return this.#dynamicClaim();
        case 'deleteDynamic': return this.#deleteDynamic(r);
        case 'deleteWhileBinding': return this.#deleteWhileBinding(r);
        case 'shared': return this.#shared();
        case 'nodeLabels': return this.#nodeLabels(r);
      }
    })().catch((error: unknown) => {
      this.#count(`failed ${op}`);
      console.error(`workload ${this.#cluster.id} ${op}: ${(error as Error).message}`);
    });
    this.#inFlight.add(run);
    void run.finally(() => this.#inFlight.delete(run));
  }

  /** Waits for the operations still running. */
  async drain(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.all([...this.#inFlight]);
  }

  async #createClaim(name: string, kind: ClaimKind, spec: Record<string, unknown>, pv?: string): Promise<ClaimRecord> {
    const created = await persist(
      this.state,
      () => this.#core.createNamespacedPersistentVolumeClaim({ namespace: NAMESPACE, body: { metadata: { name }, spec: spec as any } }),
      (s) => s === 409,
    );
    const uid = created?.metadata?.uid ?? (await this.#core.readNamespacedPersistentVolumeClaim({ name, namespace: NAMESPACE })).metadata!.uid!;
    const record: ClaimRecord = { name, kind, uid, deleted: false, ...(pv ? { pv } : {}) };
    this.state.claims.set(name, record);
    this.#count('create claim');
    return record;
  }

  async #deleteClaim(record: ClaimRecord): Promise<void> {
    record.deleted = true;
    await persist(this.state, () => this.#core.deleteNamespacedPersistentVolumeClaim({ name: record.name, namespace: NAMESPACE }), (s) => s === 404);
    this.#count('delete claim');
  }

  async #staticPair(): Promise<void> {
    const pv = this.#name('pv');
    await persist(
      this.state,
      () =>
        this.#core.createPersistentVolume({
          body: {
            metadata: { name: pv },
            spec: {
              capacity: { storage: '1Gi' },
              accessModes: ['ReadWriteOnce'],
              persistentVolumeReclaimPolicy: 'Retain',
              storageClassName: '',
              hostPath: { path: `/tmp/${pv}` },
            },
          },
        }),
      (s) => s === 409,
    );
    this.state.staticVolumes.push(pv);
    this.#count('create static PV');
    await this.#createClaim(this.#name('static'), 'static', { accessModes: ['ReadWriteOnce'], storageClassName: '', resources: { requests: { storage: '1Gi' } } });
  }

  async #dynamicClaim(): Promise<ClaimRecord> {
    return this.#createClaim(this.#name('dyn'), 'dynamic', { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } });
  }

  async #deleteDynamic(r: Random): Promise<void> {
    const candidates = [...this.state.claims.values()].filter((c) => c.kind === 'dynamic' && !c.deleted);
    if (candidates.length === 0) {
      await this.#dynamicClaim();
      return;
    }
    await this.#deleteClaim(r.pick(candidates));
  }

  async #deleteWhileBinding(r: Random): Promise<void> {
    const record = await this.#createClaim(this.#name('gone'), 'deleted-while-binding', { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } });
    await sleep(r.int(0, 400));
    await this.#deleteClaim(record);
  }

  async #shared(): Promise<void> {
    const pv = this.#name('sv');
    const claim = `${pv}-claim`;
    const state = this.#cluster.storage.state;
    // the CSI driver's part: the backend volume (named after its PV), shared over NFS
    const ns = state.listNamespaces().find((n) => n.name === NAMESPACE) ?? (await state.createNamespace(NAMESPACE));
    const volume = await state.createVolume(ns.id, {
      name: pv,
      fsType: 'ext4',
      sizeBytes: 1 << 30,
      labels: { 'csi.storage.k8s.io/pv/name': pv, 'csi.storage.k8s.io/pvc/name': claim, 'csi.storage.k8s.io/pvc/namespace': NAMESPACE },
    });
    await state.shareVolume(volume.id);
    this.#count('create shared backend volume');
    await persist(
      this.state,
      () =>
        this.#core.createPersistentVolume({
          body: {
            metadata: { name: pv },
            spec: {
              capacity: { storage: '1Gi' },
              accessModes: ['ReadWriteMany'],
              persistentVolumeReclaimPolicy: 'Retain',
              storageClassName: 'soak-shared',
              csi: { driver: STORAGEOS_DRIVER, volumeHandle: `${ns.id}/${volume.id}` },
            },
          },
        }),
      (s) => s === 409,
    );
    this.#count('create shared PV');
    await this.#createClaim(claim, 'shared', { accessModes: ['ReadWriteMany'], storageClassName: 'soak-shared', volumeName: pv, resources: { requests: { storage: '1Gi' } } }, pv);
    await persist(
      this.state,
      () =>
        this.#storageV1.createVolumeAttachment({
          body: { metadata: { name: `csi-${pv}` }, spec: { attacher: STORAGEOS_DRIVER, nodeName: 'local-node', source: { persistentVolumeName: pv } } },
        }),
      (s) => s === 409,
    );
    this.#count('create VolumeAttachment');
    this.state.sharedVolumes.push({ pv, claim, volumeId: volume.id });
  }

  async #nodeLabels(r: Random): Promise<void> {
    if (this.state.nodes.length === 0) return;
    const name = r.pick(this.state.nodes);
    const key = r.pick(NODE_LABEL_KEYS);
    const value = r.next() < 0.25 ? undefined : `v${r.int(0, 9)}`;
    await persist(this.state, async () => {
      const node: V1Node = await this.#core.readNode({ name });
      const labels = { ...node.metadata!.labels };
      if (value === undefined) delete labels[key];
      else labels[key] = value;
      node.metadata!.labels = labels;
      return this.#core.replaceNode({ name, body: node });
    });
    this.#count('change node labels');
  }
}
