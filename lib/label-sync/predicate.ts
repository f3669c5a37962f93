/**
 * The trigger predicate of api-manager's node label sync (`controllers/node-label` `Predicate`): only
 * updates of StorageOS nodes whose driver annotation was just added or whose labels changed.
 */

/** The annotation the CSI node registrar sets: JSON `{"<driver>":"<nodeID>",…}`. */
export const NODE_ID_ANNOTATION = 'csi.volume.kubernetes.io/nodeid';

/** The StorageOS CSI driver name, a key of {@link NODE_ID_ANNOTATION}. */
export const STORAGEOS_DRIVER = 'csi.storageos.com';

/** The parts of a Node the predicate and reconcile read. */
export interface NodeLike {
  metadata?: { name?: string; labels?: Record<string, string> | null; annotations?: Record<string, string> | null };
}

/** Raised (and only logged) when the driver annotation is not a JSON object. */
export class MalformedNodeIdAnnotationError extends Error {
  constructor(node: string, cause: unknown) {
    super(`node ${node}: annotation ${NODE_ID_ANNOTATION} is not a JSON object`, { cause });
    this.name = 'MalformedNodeIdAnnotationError';
  }
}

/**
 * True when the node's {@link NODE_ID_ANNOTATION} is a JSON object with the {@link STORAGEOS_DRIVER} key
 * (a key test, not a substring test). Malformed JSON counts as not StorageOS; `onMalformed` hears of it.
 */
export function isStorageOSNode(node: NodeLike | undefined, onMalformed?: (error: MalformedNodeIdAnnotationError) => void): boolean {
  const raw = node?.metadata?.annotations?.[NODE_ID_ANNOTATION];
  if (raw === undefined) return false;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (error) {
    onMalformed?.(new MalformedNodeIdAnnotationError(node?.metadata?.name ?? '', error));
    return false;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    onMalformed?.(new MalformedNodeIdAnnotationError(node?.metadata?.name ?? '', parsed));
    return false;
  }
  return Object.hasOwn(parsed, STORAGEOS_DRIVER);
}

/** Label maps compared as Go's `reflect.DeepEqual` on `map[string]string`, except that nil equals empty. */
export function labelsEqual(a: Record<string, string> | null | undefined, b: Record<string, string> | null | undefined): boolean {
  const ak = Object.keys(a ?? {});
  const bk = Object.keys(b ?? {});
  if (ak.length !== bk.length) return false;
  return ak.every((k) => Object.hasOwn(b ?? {}, k) && (a ?? {})[k] === (b ?? {})[k]);
}

/** What the predicate knows of the node before the update. */
export interface PreviousNodeState {
  /** Whether it was a StorageOS node. */
  storageos: boolean;
  labels: Record<string, string>;
}

/** Why an event was let through or filtered (the `reason` dimension of the filter metric). */
export type TriggerDecision =
  | { sync: true; reason: 'annotation-added' | 'labels-changed' }
  | { sync: false; reason: 'not-an-update' | 'not-storageos' | 'labels-unchanged' };

/**
 * Upstream's `Predicate.Update` (Create, Delete and Generic are ignored: pass `isUpdate=false`).
 * `previous` undefined means the old object is unknown, which is judged as "not a StorageOS node before".
 */
export function shouldSync(previous: PreviousNodeState | undefined, node: NodeLike, isUpdate: boolean, onMalformed?: (error: MalformedNodeIdAnnotationError) => void): TriggerDecision {
  if (!isUpdate) return { sync: false, reason: 'not-an-update' };
  if (!isStorageOSNode(node, onMalformed)) return { sync: false, reason: 'not-storageos' };
  if (!previous?.storageos) return { sync: true, reason: 'annotation-added' };
  if (!labelsEqual(previous.labels, node.metadata?.labels)) return { sync: true, reason: 'labels-changed' };
  return { sync: false, reason: 'labels-unchanged' };
}
