/**
 * Node (`pkg/registry/core/node/strategy.go`, `ValidateNode*`).
 */
import type { FieldError, KindSpec, KubeObject } from '../types.ts';
import { canonicalizeQuantityMap, expectObject } from './common/decode.ts';
import { forbidden, invalid, notSupported, required } from './common/field.ts';
import { isDNS1123Subdomain, isQualifiedName } from './common/names.ts';
import { makeStrategy, splitStatus, STANDARD_VERBS } from './common/strategy.ts';
import { AGE_COLUMN, age, column, NAME_COLUMN } from './common/table.ts';

const KIND = 'Node';
const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

function validateNode(node: KubeObject): FieldError[] {
  const errs: FieldError[] = [];
  for (const [i, t] of (node.spec?.taints ?? []).entries()) {
    const f = `spec.taints[${i}]`;
    if (!t.key) errs.push(required(`${f}.key`));
    else for (const m of isQualifiedName(t.key)) errs.push(invalid(`${f}.key`, t.key, m));
    if (!t.effect) errs.push(required(`${f}.effect`));
    else if (!TAINT_EFFECTS.includes(t.effect)) errs.push(notSupported(`${f}.effect`, t.effect, TAINT_EFFECTS));
  }
  return errs;
}

/** `ValidateNodeUpdate`: podCIDR(s) and providerID may only go from empty to a value. */
function validateNodeUpdate(node: KubeObject, old: KubeObject): FieldError[] {
  const errs = validateNode(node);
  const oldCidrs: string[] = old.spec?.podCIDRs ?? (old.spec?.podCIDR ? [old.spec.podCIDR] : []);
  const newCidrs: string[] = node.spec?.podCIDRs ?? (node.spec?.podCIDR ? [node.spec.podCIDR] : []);
  if (oldCidrs.length > 0 && (oldCidrs.length !== newCidrs.length || oldCidrs.some((c, i) => c !== newCidrs[i]))) {
    errs.push(forbidden('spec.podCIDRs', 'node updates may not change podCIDR except from "" to valid'));
  }
  if (old.spec?.providerID && old.spec.providerID !== node.spec?.providerID) {
    errs.push(forbidden('spec.providerID', 'node updates may not change providerID except from "" to valid'));
  }
  return errs;
}

/** The Ready condition as the printer shows it, plus `SchedulingDisabled`. */
function nodeStatus(node: KubeObject): string {
  const conds: Array<{ type: string; status: string }> = node.status?.conditions ?? [];
  const ready = conds.find((c) => c.type === 'Ready');
  const parts = [ready ? (ready.status === 'True' ? 'Ready' : 'NotReady') : 'Unknown'];
  if (node.spec?.unschedulable) parts.push('SchedulingDisabled');
  return parts.join(',');
}

/** `findNodeRoles`: `node-role.kubernetes.io/<role>` label keys and `kubernetes.io/role` values. */
function nodeRoles(node: KubeObject): string {
  const roles = new Set<string>();
  for (const [k, v] of Object.entries(node.metadata.labels ?? {})) {
    if (k.startsWith('node-role.kubernetes.io/')) { const r = k.slice('node-role.kubernetes.io/'.length); if (r) roles.add(r); }
    else if (k === 'kubernetes.io/role' && v) roles.add(v);
  }
  return roles.size ? [...roles].sort().join(',') : '<none>';
}

const address = (node: KubeObject, type: string): string =>
  (node.status?.addresses ?? []).find((a: { type: string }) => a.type === type)?.address ?? '<none>';

/** Node discovery facts, strategy and printer. */
export const nodes: KindSpec = {
  group: '',
  version: 'v1',
  kind: KIND,
  plural: 'nodes',
  singular: 'node',
  namespaced: false,
  shortNames: ['no'],
  subresources: ['status'],
  verbs: STANDARD_VERBS,
  returnDeletedObject: false,
  allowUnconditionalUpdate: true,
  allowCreateOnUpdate: false,
  selectableFields: (node) => ({
    'metadata.name': node.metadata?.name ?? '',
    'spec.unschedulable': String(Boolean(node.spec?.unschedulable)),
  }),
  table: {
    columns: [
      NAME_COLUMN,
      column('Status', 'string', 'The status of the node'),
      column('Roles', 'string', 'The roles of the node'),
      AGE_COLUMN,
      column('Version', 'string', 'Kubelet Version reported by the node.'),
      column('Internal-IP', 'string', 'List of addresses reachable to the node. Queried from cloud provider, if available.', 1),
      column('External-IP', 'string', 'List of addresses reachable to the node. Queried from cloud provider, if available.', 1),
      column('OS-Image', 'string', 'OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).', 1),
      column('Kernel-Version', 'string', "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).", 1),
      column('Container-Runtime', 'string', 'ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).', 1),
    ],
    row(node, now) {
      const info = node.status?.nodeInfo ?? {};
      return [
        node.metadata.name, nodeStatus(node), nodeRoles(node), age(node, now), info.kubeletVersion ?? '',
        address(node, 'InternalIP'), address(node, 'ExternalIP'), info.osImage || '<unknown>', info.kernelVersion || '<unknown>',
        info.containerRuntimeVersion || '<unknown>',
      ];
    },
  },
  strategy: makeStrategy({
    namespaced: false,
    nameRule: isDNS1123Subdomain,
    decode(node) {
      expectObject(KIND, node.spec, 'Node.spec', 'v1.NodeSpec');
      canonicalizeQuantityMap(KIND, node.status?.capacity);
      canonicalizeQuantityMap(KIND, node.status?.allocatable);
    },
    prepareForCreate(node) {
      // "Nodes allow *all* fields, including status, to be set on create."
      if (node.spec) delete node.spec.configSource;
      if (node.status) delete node.status.config;
    },
    prepareForUpdate: splitStatus,
    validate: validateNode,
    validateUpdate: (node, old) => validateNodeUpdate(node, old),
  }),
};
