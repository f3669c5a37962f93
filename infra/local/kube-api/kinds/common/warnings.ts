/**
 * Deprecation warnings shared by the volume kinds (`pkg/api/persistentvolume/util.go`,
 * `pkg/api/persistentvolumeclaim/util.go`, `pkg/api/node/util.go`).
 */
import type { KubeObject } from '../../types.ts';
import { BETA_STORAGE_CLASS_ANNOTATION } from './storage.ts';
import { parseQuantity } from '../../../../../lib/kube/quantity.ts';

/** `deprecatedStorageClassAnnotationsMsg`. */
export const DEPRECATED_STORAGE_CLASS_ANNOTATION = 'deprecated since v1.8; use "storageClassName" attribute instead';

const DEPRECATED_NODE_LABELS: Record<string, string> = {
  'beta.kubernetes.io/arch': 'deprecated since v1.14; use "kubernetes.io/arch" instead',
  'beta.kubernetes.io/os': 'deprecated since v1.14; use "kubernetes.io/os" instead',
  'failure-domain.beta.kubernetes.io/region': 'deprecated since v1.17; use "topology.kubernetes.io/region" instead',
  'failure-domain.beta.kubernetes.io/zone': 'deprecated since v1.17; use "topology.kubernetes.io/zone" instead',
  'beta.kubernetes.io/instance-type': 'deprecated since v1.17; use "node.kubernetes.io/instance-type" instead',
};

/** The beta storage-class annotation warning, when present. */
export function betaStorageClassWarning(obj: KubeObject): string[] {
  return BETA_STORAGE_CLASS_ANNOTATION in (obj.metadata?.annotations ?? {})
    ? [`metadata.annotations[${BETA_STORAGE_CLASS_ANNOTATION}]: ${DEPRECATED_STORAGE_CLASS_ANNOTATION}`]
    : [];
}

/** `GetWarningsForNodeSelectorTerm` over `spec.nodeAffinity.required.nodeSelectorTerms`. */
export function deprecatedNodeLabelWarnings(terms: unknown, path: string): string[] {
  const out: string[] = [];
  if (!Array.isArray(terms)) return out;
  terms.forEach((term: { matchExpressions?: Array<{ key?: string }> }, i) => {
    (term?.matchExpressions ?? []).forEach((e, j) => {
      const msg = e?.key ? DEPRECATED_NODE_LABELS[e.key] : undefined;
      if (msg) out.push(`${path}[${i}].matchExpressions[${j}].key: ${e.key} is ${msg}`);
    });
  });
  return out;
}

/** `fractional byte value "500m" is invalid, must be an integer` for a storage quantity that is not whole. */
export function fractionalBytesWarning(value: unknown, path: string): string[] {
  if (typeof value !== 'string' && typeof value !== 'number') return [];
  try {
    return parseQuantity(value).nanos % 1_000_000_000n === 0n ? [] : [`${path}: fractional byte value "${value}" is invalid, must be an integer`];
  } catch {
    return [];
  }
}
