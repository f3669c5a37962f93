/**
 * apps/v1 Deployment and ReplicaSet, stored as objects (`pkg/registry/apps/{deployment,replicaset}`): the
 * defaults of `apps/v1/defaults.go` (with the pod template's), `generation` as their strategies keep it, the
 * status split, and the validation that matters to manifests (selector present, matching the template's
 * labels, immutable; containers named with an image; replicas ≥ 0). No controller runs: nothing creates
 * ReplicaSets or Pods, and `status` stays what clients write to it. No `scale` subresource.
 */
import type { FieldError, KindSpec, KubeObject } from '../types.ts';
import { expectObject } from './common/decode.ts';
import { deepEqual, immutable, invalid, notSupported, required } from './common/field.ts';
import { isDNS1123Label, isDNS1123Subdomain } from './common/names.ts';
import { validateLabels } from './common/meta.ts';
import { objectMetaFields } from './common/selectable.ts';
import { ensure, keepMetaFromOld, makeStrategy, splitStatus, STANDARD_VERBS } from './common/strategy.ts';
import { AGE_COLUMN, age, column, NAME_COLUMN } from './common/table.ts';
import { defaultPullPolicy } from './pod.ts';

/** `SetDefaults_PodSpec` and the container defaults, for a pod template (no `enableServiceLinks`: that is the Pod's). */
export function defaultPodTemplate(template: Record<string, any>): void {
  const spec = ensure(template, 'spec');
  spec.restartPolicy ??= 'Always';
  spec.dnsPolicy ??= 'ClusterFirst';
  spec.schedulerName ??= 'default-scheduler';
  spec.terminationGracePeriodSeconds ??= 30;
  spec.securityContext ??= {};
  for (const key of ['containers', 'initContainers']) {
    for (const c of Array.isArray(spec[key]) ? spec[key] : []) {
      if (c === null || typeof c !== 'object') continue;
      c.terminationMessagePath ??= '/dev/termination-log';
      c.terminationMessagePolicy ??= 'File';
      c.imagePullPolicy ??= defaultPullPolicy(String(c.image ?? ''));
      for (const p of Array.isArray(c.ports) ? c.ports : []) if (p && typeof p === 'object') p.protocol ??= 'TCP';
    }
  }
}

/** `metav1.FormatLabelSelector`. */
export function formatLabelSelector(selector: Record<string, any> | undefined): string {
  if (!selector) return '<none>';
  const parts: string[] = Object.entries(selector.matchLabels ?? {}).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k}=${v}`);
  for (const e of selector.matchExpressions ?? []) {
    const values = [...(e.values ?? [])].sort().join(',');
    if (e.operator === 'In') parts.push(`${e.key} in (${values})`);
    else if (e.operator === 'NotIn') parts.push(`${e.key} notin (${values})`);
    else if (e.operator === 'Exists') parts.push(e.key);
    else if (e.operator === 'DoesNotExist') parts.push(`!${e.key}`);
  }
  const s = parts.join(',');
  return s === '' ? '<none>' : s;
}

/** Whether a LabelSelector matches a label set. */
export function selectorMatches(selector: Record<string, any>, labels: Record<string, string>): boolean {
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    if (e.operator === 'In' && !(has && (e.values ?? []).includes(labels[e.key]))) return false;
    if (e.operator === 'NotIn' && has && (e.values ?? []).includes(labels[e.key])) return false;
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

const OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'];

/** The shared spec validation: selector, template labels, containers, replicas. */
function validateWorkloadSpec(obj: KubeObject, restartPolicies: string[]): FieldError[] {
  const errs: FieldError[] = [];
  const spec = obj.spec ?? {};
  const selector = spec.selector;
  const empty = !selector || (Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0);
  if (empty) errs.push(required('spec.selector'));
  if (selector) {
    errs.push(...validateLabels(selector.matchLabels, 'spec.selector.matchLabels'));
    (selector.matchExpressions ?? []).forEach((e: Record<string, any>, i: number) => {
      if (!OPERATORS.includes(e.operator)) errs.push(notSupported(`spec.selector.matchExpressions[${i}].operator`, e.operator, OPERATORS));
    });
  }
  const labels: Record<string, string> = spec.template?.metadata?.labels ?? {};
  errs.push(...validateLabels(labels, 'spec.template.metadata.labels'));
  if (!empty && !selectorMatches(selector, labels)) {
    errs.push(invalid('spec.template.metadata.labels', labels, '`selector` does not match template `labels`'));
  }
  if (spec.replicas !== undefined && spec.replicas !== null && spec.replicas < 0) {
    errs.push(invalid('spec.replicas', spec.replicas, 'must be greater than or equal to 0'));
  }
  const pod = spec.template?.spec ?? {};
  const containers: Array<Record<string, any>> = Array.isArray(pod.containers) ? pod.containers : [];
  if (containers.length === 0) errs.push(required('spec.template.spec.containers'));
  containers.forEach((c, i) => {
    const f = `spec.template.spec.containers[${i}]`;
    if (!c.name) errs.push(required(`${f}.name`));
    else for (const m of isDNS1123Label(c.name)) errs.push(invalid(`${f}.name`, c.name, m));
    if (!c.image) errs.push(required(`${f}.image`));
  });
  if (pod.restartPolicy && !restartPolicies.includes(pod.restartPolicy)) {
    errs.push(notSupported('spec.template.spec.restartPolicy', pod.restartPolicy, restartPolicies));
  }
  return errs;
}

function containersCell(obj: KubeObject): string {
  const names = (obj.spec?.template?.spec?.containers ?? []).map((c: { name?: string }) => c.name ?? '');
  return names.length ? names.join(',') : '<none>';
}

function imagesCell(obj: KubeObject): string {
  const images = (obj.spec?.template?.spec?.containers ?? []).map((c: { image?: string }) => c.image ?? '');
  return images.length ? images.join(',') : '<none>';
}

const CONTAINERS = column('Containers', 'string', 'Names of each container in the template.', 1);
const IMAGES = column('Images', 'string', 'Images referenced by each container in the template.', 1);
const SELECTOR = column('Selector', 'string', 'Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.', 1);

/** `generation` starts at 1 and moves with the spec (Deployments: and the annotations). */
function bumpGeneration(obj: KubeObject, old: KubeObject, withAnnotations: boolean): void {
  const changed = !deepEqual(obj.spec, old.spec) || (withAnnotations && !deepEqual(obj.metadata.annotations ?? {}, old.metadata.annotations ?? {}));
  if (changed) obj.metadata.generation = (old.metadata.generation ?? 0) + 1;
}

/** Deployment discovery facts, strategy and printer. */
export const deployments: KindSpec = {
  group: 'apps',
  version: 'v1',
  kind: 'Deployment',
  plural: 'deployments',
  singular: 'deployment',
  namespaced: true,
  shortNames: ['deploy'],
  categories: ['all'],
  subresources: ['status'],
  verbs: STANDARD_VERBS,
  returnDeletedObject: false,
  allowUnconditionalUpdate: true,
  allowCreateOnUpdate: false,
  selectableFields: (d) => objectMetaFields(d, true),
  table: {
    columns: [
      NAME_COLUMN,
      column('Ready', 'string', 'Number of the pod with ready state'),
      column('Up-to-date', 'string', 'Total number of non-terminated pods targeted by this deployment that have the desired template spec.'),
      column('Available', 'string', 'Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.'),
      AGE_COLUMN, CONTAINERS, IMAGES, SELECTOR,
    ],
    row: (d, now) => [
      d.metadata.name, `${d.status?.readyReplicas ?? 0}/${d.spec?.replicas ?? 0}`, d.status?.updatedReplicas ?? 0, d.status?.availableReplicas ?? 0,
      age(d, now), containersCell(d), imagesCell(d), formatLabelSelector(d.spec?.selector),
    ],
  },
  strategy: makeStrategy({
    namespaced: true,
    nameRule: isDNS1123Subdomain,
    decode: (d) => expectObject('Deployment', d.spec, 'Deployment.spec', 'v1.DeploymentSpec'),
    defaults(d) {
      const spec = ensure(d, 'spec');
      spec.replicas ??= 1;
      const strategy = ensure(spec, 'strategy');
      strategy.type ??= 'RollingUpdate';
      if (strategy.type === 'RollingUpdate') {
        const ru = ensure(strategy, 'rollingUpdate');
        ru.maxUnavailable ??= '25%';
        ru.maxSurge ??= '25%';
      }
      spec.revisionHistoryLimit ??= 10;
      spec.progressDeadlineSeconds ??= 600;
      defaultPodTemplate(ensure(spec, 'template'));
    },
    prepareForCreate(d) {
      d.status = {};
      d.metadata.generation = 1;
    },
    prepareForUpdate(d, old, sub) {
      splitStatus(d, old, sub);
      // deploymentStatusStrategy keeps the labels (not the annotations) of the stored Deployment
      if (sub === 'status') keepMetaFromOld(d, old, ['labels']);
      else bumpGeneration(d, old, true);
    },
    validate: (d) => validateWorkloadSpec(d, ['Always']),
    validateUpdate: (d, old, sub) => (sub === 'status' ? [] : [
      ...validateWorkloadSpec(d, ['Always']), ...immutable('spec.selector', d.spec?.selector, old.spec?.selector),
    ]),
  }),
};

/** ReplicaSet discovery facts, strategy and printer. */
export const replicaSets: KindSpec = {
  group: 'apps',
  version: 'v1',
  kind: 'ReplicaSet',
  plural: 'replicasets',
  singular: 'replicaset',
  namespaced: true,
  shortNames: ['rs'],
  categories: ['all'],
  subresources: ['status'],
  verbs: STANDARD_VERBS,
  returnDeletedObject: false,
  allowUnconditionalUpdate: true,
  allowCreateOnUpdate: false,
  selectableFields: (rs) => ({ ...objectMetaFields(rs, true), 'status.replicas': String(rs.status?.replicas ?? 0) }),
  table: {
    columns: [
      NAME_COLUMN,
      column('Desired', 'integer', 'Number of desired pods. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1.'),
      column('Current', 'integer', 'Replicas is the most recently observed number of replicas.'),
      column('Ready', 'integer', 'The number of ready replicas for this replica set.'),
      AGE_COLUMN, CONTAINERS, IMAGES, SELECTOR,
    ],
    row: (rs, now) => [
      rs.metadata.name, rs.spec?.replicas ?? 0, rs.status?.replicas ?? 0, rs.status?.readyReplicas ?? 0,
      age(rs, now), containersCell(rs), imagesCell(rs), formatLabelSelector(rs.spec?.selector),
    ],
  },
  strategy: makeStrategy({
    namespaced: true,
    nameRule: isDNS1123Subdomain,
    decode: (rs) => expectObject('ReplicaSet', rs.spec, 'ReplicaSet.spec', 'v1.ReplicaSetSpec'),
    defaults(rs) {
      const spec = ensure(rs, 'spec');
      spec.replicas ??= 1;
      defaultPodTemplate(ensure(spec, 'template'));
    },
    prepareForCreate(rs) {
      rs.status = { replicas: 0 };
      rs.metadata.generation = 1;
    },
    prepareForUpdate(rs, old, sub) {
      splitStatus(rs, old, sub);
      if (sub !== 'status') bumpGeneration(rs, old, false);
    },
    validate: (rs) => validateWorkloadSpec(rs, ['Always']),
    validateUpdate: (rs, old, sub) => (sub === 'status' ? [] : [
      ...validateWorkloadSpec(rs, ['Always']), ...immutable('spec.selector', rs.spec?.selector, old.spec?.selector),
    ]),
  }),
};
