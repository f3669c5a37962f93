/**
 * The soak's invariants, per cluster, read from the emulators, the control planes, the queues and the
 * request audit logs once the faults are off.
 */
import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { CoreV1Api, KubeConfig, type V1PersistentVolume, type V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { classifyNodeLabels } from '../../../lib/label-sync/ensure.ts';
import type { LocalQueue } from '../../../infra/local/stack/resources.ts';
import type { AuditEntry, SoakCluster } from './clusters.ts';
import { NAMESPACE, type WorkloadState } from './workload.ts';
import { makeBudgetedApiClient } from '../../../lib/kube/client.ts';

export interface InvariantResult {
  name: string;
  ok: boolean;
  /** What was checked (e.g. "412 claims"). */
  checked: string;
  /** The first few violations. */
  violations: string[];
}

const MOUNT_ENDPOINT = 'storageos.com/nfs/mount-endpoint';
const LIMIT = 5;

function result(name: string, checked: string, violations: string[]): InvariantResult {
  return { name, ok: violations.length === 0, checked, violations: violations.slice(0, LIMIT).concat(violations.length > LIMIT ? [`… ${violations.length - LIMIT} more`] : []) };
}

/** The state invariants of one cluster (they hold once it has converged). */
export async function checkState(cluster: SoakCluster, workload: WorkloadState): Promise<InvariantResult[]> {
  const kc = new KubeConfig();
  kc.loadFromFile(cluster.adminKubeconfig);
  const core = makeBudgetedApiClient(kc, CoreV1Api);
  const claims = (await core.listNamespacedPersistentVolumeClaim({ namespace: NAMESPACE })).items;
  const pvs = (await core.listPersistentVolume()).items;
  const nodes = (await core.listNode()).items;
  const claimByName = new Map(claims.map((c) => [c.metadata!.name!, c]));
  const pvByName = new Map(pvs.map((p) => [p.metadata!.name!, p]));
  const out: InvariantResult[] = [];

  // every claim that should be Bound is Bound to exactly one volume that points back to it
  const live = [...workload.claims.values()].filter((c) => !c.deleted);
  const unbound: string[] = [];
  for (const expected of live) {
    const c = claimByName.get(expected.name);
    if (!c) { unbound.push(`${expected.name}: missing`); continue; }
    const pvName = c.spec?.volumeName;
    const pv = pvName ? pvByName.get(pvName) : undefined;
    if (c.status?.phase !== 'Bound' || !pv) unbound.push(`${expected.name} (${expected.kind}): phase ${c.status?.phase}, volumeName ${pvName ?? '-'}`);
    else if (pv.spec?.claimRef?.uid !== c.metadata!.uid || pv.status?.phase !== 'Bound') unbound.push(`${expected.name}: ${pvName} points to ${pv.spec?.claimRef?.name ?? '-'} (${pv.status?.phase})`);
    else if (expected.pv && expected.pv !== pvName) unbound.push(`${expected.name}: bound to ${pvName}, not its ${expected.pv}`);
  }
  out.push(result('claims Bound, volume points back', `${live.length} claims`, unbound));

  // no volume bound twice; no Bound volume whose claim is another's
  const double: string[] = [];
  const byVolume = new Map<string, V1PersistentVolumeClaim[]>();
  for (const c of claims) if (c.spec?.volumeName) byVolume.set(c.spec.volumeName, [...(byVolume.get(c.spec.volumeName) ?? []), c]);
  for (const [pv, cs] of byVolume) if (cs.length > 1) double.push(`${pv} claimed by ${cs.map((c) => c.metadata!.name).join(', ')}`);
  for (const pv of pvs) {
    const ref = pv.spec?.claimRef;
    if (!ref || pv.status?.phase !== 'Bound') continue;
    const c = claimByName.get(ref.name!);
    if (!c || c.metadata!.uid !== ref.uid) double.push(`${pv.metadata!.name} Bound to ${ref.name} (uid ${ref.uid}) which is gone`);
    else if (c.spec?.volumeName !== pv.metadata!.name) double.push(`${pv.metadata!.name} Bound to ${ref.name}, whose volume is ${c.spec?.volumeName ?? '-'}`);
  }
  out.push(result('no volume bound twice', `${pvs.length} PVs`, double));

  // every backend volume has exactly one PV; every deleted claim's Delete-volume is gone
  const backend = cluster.storage.state.allVolumes();
  const orphans: string[] = [];
  const names = new Map<string, number>();
  for (const v of backend) names.set(v.name, (names.get(v.name) ?? 0) + 1);
  for (const v of backend) {
    if (!pvByName.has(v.name)) orphans.push(`backend volume ${v.name} (${v.id}) has no PV`);
    if ((names.get(v.name) ?? 0) > 1) orphans.push(`backend volume name ${v.name} used ${names.get(v.name)} times`);
  }
  const backendNames = new Set(backend.map((v) => v.name));
  for (const pv of pvs) if (pv.spec?.local && !backendNames.has(pv.metadata!.name!)) orphans.push(`PV ${pv.metadata!.name} has no backend volume`);
  const deleted = [...workload.claims.values()].filter((c) => c.deleted && c.kind !== 'static');
  for (const c of deleted) {
    const name = `pvc-${c.uid}`;
    if (pvByName.has(name)) orphans.push(`deleted claim ${c.name}: PV ${name} remains (${(pvByName.get(name) as V1PersistentVolume).status?.phase})`);
    if (backendNames.has(name)) orphans.push(`deleted claim ${c.name}: backend volume ${name} remains`);
    if (claimByName.has(c.name)) orphans.push(`deleted claim ${c.name} still exists (${claimByName.get(c.name)!.metadata?.deletionTimestamp ? 'terminating' : 'live'})`);
  }
  out.push(result('backend volumes = PVs, 0 orphans', `${backend.length} backend volumes, ${deleted.length} deleted claims`, orphans));

  // every shared volume's endpoint published
  const unpublished: string[] = [];
  for (const s of workload.sharedVolumes) {
    const v = backend.find((b) => b.id === s.volumeId);
    if (!v) unpublished.push(`${s.pv}: backend volume gone`);
    else if (!v.labels?.[MOUNT_ENDPOINT]) unpublished.push(`${s.pv}: no ${MOUNT_ENDPOINT}`);
  }
  out.push(result('shared volume endpoints published', `${workload.sharedVolumes.length} shared volumes`, unpublished));

  // every node's labels equal on both sides
  const storageNodes = cluster.storage.state.listNodes();
  const labelDiffs: string[] = [];
  for (const name of workload.nodes) {
    const node = nodes.find((n) => n.metadata?.name === name);
    const sn = storageNodes.find((n) => n.name === name);
    if (!node || !sn) { labelDiffs.push(`${name}: ${node ? '' : 'no Node '}${sn ? '' : 'no storage node'}`); continue; }
    const want = classifyNodeLabels(node.metadata?.labels).unreserved;
    const have = sn.labels ?? {};
    const keys = new Set([...Object.keys(want), ...Object.keys(have)]);
    const diff = [...keys].filter((k) => want[k] !== have[k]).map((k) => `${k}: node ${want[k] ?? '-'}, storage ${have[k] ?? '-'}`);
    if (diff.length > 0) labelDiffs.push(`${name}: ${diff.join('; ')}`);
  }
  out.push(result('node labels equal on both sides', `${workload.nodes.length} nodes`, labelDiffs));
  return out;
}

/** Every DLQ empty (the queues are shared by the clusters). */
export async function checkDlqs(sqs: SQSClient, queues: Record<string, LocalQueue>): Promise<InvariantResult> {
  const violations: string[] = [];
  const dlqs = Object.values(queues).filter((q) => Object.values(queues).some((o) => o.redrive?.deadLetterQueue === q.logicalId || o.redrive?.deadLetterQueue === q.arn));
  for (const q of dlqs) {
    const a = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: q.url, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }));
    const n = Number(a.Attributes?.ApproximateNumberOfMessages ?? 0) + Number(a.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0);
    if (n > 0) violations.push(`${q.logicalId}: ${n} messages`);
  }
  return result('every DLQ empty', `${dlqs.length} DLQs`, violations);
}

/**
 * No object of this cluster touched by a function serving the other: the other cluster's object names
 * (its prefix, its provisioned `pvc-<uid>` volumes) never appear in this emulator's requests.
 */
export function checkIsolation(cluster: SoakCluster, other: { prefix: string; workload: WorkloadState }): InvariantResult {
  const foreign = new Set([...other.workload.claims.values()].map((c) => `pvc-${c.uid}`));
  const hits: string[] = [];
  for (const e of cluster.audit) {
    if (!e.name) continue;
    if (e.name.startsWith(`${other.prefix}-`) || e.name.startsWith(`csi-${other.prefix}-`) || foreign.has(e.name)) hits.push(`${e.user.split('/').pop()} ${e.verb} ${e.resource} ${e.namespace ? `${e.namespace}/` : ''}${e.name}`);
  }
  return result('no object touched by the other cluster\'s functions', `${cluster.audit.length} requests`, hits);
}

/** The functions' requests in any one second stay within the cluster's budget (QPS + burst). */
export function checkBudget(cluster: SoakCluster, budget: { qps: number; burst: number }): InvariantResult & { maxPerSecond: number; total: number } {
  const times = cluster.audit.filter((e: AuditEntry) => cluster.functionUsers.has(e.user) && e.verb !== 'watch').map((e) => e.t).sort((a, b) => a - b);
  let max = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while (times[i] - times[j] >= 1000) j++;
    max = Math.max(max, i - j + 1);
  }
  const limit = budget.qps + budget.burst;
  const r = result(`API budget (${budget.qps} QPS, burst ${budget.burst})`, `${times.length} function requests, max ${max} in 1 s (limit ${limit})`, max > limit ? [`${max} requests in one second`] : []);
  return { ...r, maxPerSecond: max, total: times.length };
}
