/**
 * Pod, enough for claims in use and WaitForFirstConsumer (`pkg/registry/core/pod/strategy.go`).
 */
import type { FieldError, KindSpec, KubeObject } from '../types.ts';
import { expectArray, expectObject } from './common/decode.ts';
import { clone, deepEqual, duplicate, forbidden, invalid, required } from './common/field.ts';
import { isDNS1123Label, isDNS1123Subdomain } from './common/names.ts';
import { objectMetaFields } from './common/selectable.ts';
import { ensure, keepMetaFromOld, makeStrategy, STANDARD_VERBS } from './common/strategy.ts';
import { AGE_COLUMN, age, column, NAME_COLUMN } from './common/table.ts';

const KIND = 'Pod';

/** The detail upstream gives when a Pod update touches an immutable field. */
export const POD_SPEC_IMMUTABLE = 'pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)';

function validatePod(pod: KubeObject): FieldError[] {
  const errs: FieldError[] = [];
  const containers: Record<string, any>[] = pod.spec?.containers ?? [];
  if (containers.length === 0) errs.push(required('spec.containers'));
  const names = new Set<string>();
  containers.forEach((c, i) => {
    const f = `spec.containers[${i}]`;
    if (!c.name) errs.push(required(`${f}.name`));
    else {
      for (const m of isDNS1123Label(c.name)) errs.push(invalid(`${f}.name`, c.name, m));
      if (names.has(c.name)) errs.push(duplicate(`${f}.name`, c.name));
      names.add(c.name);
    }
    if (!c.image) errs.push(required(`${f}.image`));
  });
  const volumes = new Set<string>();
  for (const [i, v] of (pod.spec?.volumes ?? []).entries()) {
    if (!v.name) errs.push(required(`spec.volumes[${i}].name`));
    else if (volumes.has(v.name)) errs.push(duplicate(`spec.volumes[${i}].name`, v.name));
    volumes.add(v.name);
    if (v.persistentVolumeClaim && !v.persistentVolumeClaim.claimName) errs.push(required(`spec.volumes[${i}].persistentVolumeClaim.claimName`));
  }
  if (pod.spec?.nodeName) for (const m of isDNS1123Subdomain(pod.spec.nodeName)) errs.push(invalid('spec.nodeName', pod.spec.nodeName, m));
  return errs;
}

/** `ValidatePodUpdate`: only images, activeDeadlineSeconds, tolerations (additions) may change. */
function validatePodUpdate(pod: KubeObject, old: KubeObject): FieldError[] {
  const errs = validatePod(pod);
  const a = clone(pod.spec ?? {});
  const b = clone(old.spec ?? {});
  for (const key of ['containers', 'initContainers']) {
    (a[key] ?? []).forEach((c: Record<string, unknown>, i: number) => { if (b[key]?.[i]) c.image = b[key][i].image; });
  }
  delete a.activeDeadlineSeconds; delete b.activeDeadlineSeconds;
  const oldTol: unknown[] = b.tolerations ?? [];
  if (oldTol.every((t, i) => deepEqual(t, a.tolerations?.[i]))) { delete a.tolerations; delete b.tolerations; }
  if (!deepEqual(a, b)) errs.push(forbidden('spec', POD_SPEC_IMMUTABLE));
  return errs;
}

/** `SetDefaults_Container`: `Always` for `:latest` or untagged images, else `IfNotPresent`. */
export function defaultPullPolicy(image: string): string {
  if (image.includes('@')) return 'IfNotPresent';
  const last = image.slice(image.lastIndexOf('/') + 1);
  const colon = last.lastIndexOf(':');
  const tag = colon < 0 ? '' : last.slice(colon + 1);
  return tag === '' || tag === 'latest' ? 'Always' : 'IfNotPresent';
}

/** Ready cell: `ready/total` containers. */
function readyCell(pod: KubeObject): string {
  const statuses: Array<{ ready?: boolean }> = pod.status?.containerStatuses ?? [];
  return `${statuses.filter((s) => s.ready).length}/${(pod.spec?.containers ?? []).length}`;
}

/** Pod discovery facts, strategy and printer. */
export const pods: KindSpec = {
  group: '',
  version: 'v1',
  kind: KIND,
  plural: 'pods',
  singular: 'pod',
  namespaced: true,
  shortNames: ['po'],
  categories: ['all'],
  subresources: ['status'],
  verbs: STANDARD_VERBS,
  returnDeletedObject: true,
  allowUnconditionalUpdate: true,
  allowCreateOnUpdate: false,
  selectableFields: (pod) => ({
    ...objectMetaFields(pod, true),
    'spec.nodeName': pod.spec?.nodeName ?? '',
    'spec.restartPolicy': pod.spec?.restartPolicy ?? '',
    'spec.schedulerName': pod.spec?.schedulerName ?? '',
    'spec.serviceAccountName': pod.spec?.serviceAccountName ?? '',
    'spec.hostNetwork': String(Boolean(pod.spec?.hostNetwork)),
    'status.phase': pod.status?.phase ?? '',
    'status.podIP': pod.status?.podIPs?.[0]?.ip ?? '',
    'status.nominatedNodeName': pod.status?.nominatedNodeName ?? '',
  }),
  table: {
    columns: [
      NAME_COLUMN,
      column('Ready', 'string', 'The aggregate readiness state of this pod for accepting traffic.'),
      column('Status', 'string', 'The aggregate status of the containers in this pod.'),
      column('Restarts', 'string', 'The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.'),
      AGE_COLUMN,
      column('IP', 'string', 'IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.', 1),
      column('Node', 'string', 'NodeName is a request to schedule this pod onto a specific node.', 1),
      column('Nominated Node', 'string', 'nominatedNodeName is set when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods.', 1),
      column('Readiness Gates', 'string', 'If specified, all readiness gates will be evaluated for pod readiness.', 1),
    ],
    row(pod, now) {
      const restarts = (pod.status?.containerStatuses ?? []).reduce((n: number, s: { restartCount?: number }) => n + (s.restartCount ?? 0), 0);
      const reason = pod.metadata.deletionTimestamp ? 'Terminating' : (pod.status?.reason || pod.status?.phase || '');
      const gates: unknown[] = pod.spec?.readinessGates ?? [];
      return [
        pod.metadata.name, readyCell(pod), reason, String(restarts), age(pod, now), pod.status?.podIP || '<none>',
        pod.spec?.nodeName || '<none>', pod.status?.nominatedNodeName || '<none>', gates.length ? `0/${gates.length}` : '<none>',
      ];
    },
  },
  strategy: makeStrategy({
    namespaced: true,
    nameRule: isDNS1123Subdomain,
    decode(pod) {
      expectObject(KIND, pod.spec, 'Pod.spec', 'v1.PodSpec');
      expectArray(KIND, pod.spec?.containers, 'PodSpec.spec.containers', '[]v1.Container');
    },
    defaults(pod) {
      const spec = ensure(pod, 'spec');
      spec.restartPolicy ??= 'Always';
      spec.dnsPolicy ??= 'ClusterFirst';
      spec.schedulerName ??= 'default-scheduler';
      spec.terminationGracePeriodSeconds ??= 30;
      spec.securityContext ??= {};
      spec.enableServiceLinks ??= true;
      for (const c of Array.isArray(spec.containers) ? spec.containers : []) {
        c.terminationMessagePath ??= '/dev/termination-log';
        c.terminationMessagePolicy ??= 'File';
        c.imagePullPolicy ??= defaultPullPolicy(String(c.image ?? ''));
      }
    },
    prepareForCreate(pod) {
      pod.status = { phase: 'Pending', qosClass: 'BestEffort' };
    },
    prepareForUpdate(pod, old, subresource) {
      if (subresource === 'status') {
        pod.spec = clone(old.spec ?? {});
        // podStatusStrategy: "don't allow the pods/status endpoint to touch owner references"; labels,
        // annotations and finalizers from the body are applied
        keepMetaFromOld(pod, old, ['ownerReferences']);
      } else pod.status = clone(old.status ?? {});
    },
    validate: validatePod,
    validateUpdate: (pod, old, sub) => (sub === 'status' ? [] : validatePodUpdate(pod, old)),
  }),
};
