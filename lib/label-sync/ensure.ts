/**
 * api-manager's `EnsureNodeLabels`: reserved `storageos.com/` labels validated and applied first (only
 * compute-only exists for nodes), then every unreserved label in one call. Validation errors do not stop
 * the valid parts; a node unknown to the control plane is nothing to do; labels never flow back.
 */
import { isReservedLabel, parseBool } from '../storage/labels.ts';
import { retryOnStaleVersion } from '../storage/retry.ts';
import { LABELS, type Labels, type NodeLabels, type StorageNode } from '../storage/types.ts';

/** Reserved keys that exist for volumes but not for nodes (api-manager `ErrReservedLabelInvalid`). */
export const VOLUME_ONLY_RESERVED = new Set(['storageos.com/nocache', 'storageos.com/nocompress', 'storageos.com/failure-mode', 'storageos.com/replicas']);

/** A reserved label that cannot be applied; the message is upstream's. */
export class ReservedLabelError extends Error {
  readonly key: string;
  constructor(key: string, message: string) {
    super(message);
    this.name = 'ReservedLabelError';
    this.key = key;
  }
}

/** The control plane does not know a node of that name (swallowed by {@link ensureNodeLabels}). */
export class NodeNotFoundError extends Error {
  constructor(name: string) {
    super(`storageos node ${name} not found`);
    this.name = 'NodeNotFoundError';
  }
}

/** Several errors, printed as Go's multierror: `N errors occurred: e1, e2` (a single one prints as itself). */
export class LabelSyncError extends Error {
  readonly errors: readonly Error[];
  constructor(errors: readonly Error[]) {
    super(errors.length === 1 ? errors[0].message : `${errors.length} errors occurred: ${errors.map((e) => e.message).join(', ')}`);
    this.name = 'LabelSyncError';
    this.errors = errors;
  }
}

/** The labels split as `EnsureNodeLabels` step 1 does. */
export interface ClassifiedLabels {
  unreserved: Labels;
  /** Desired compute-only state: false when the label is absent or does not parse. */
  computeOnly: boolean;
  invalid: ReservedLabelError[];
}

/** Step 1: classify every label (upstream's messages for the rejected ones). */
export function classifyNodeLabels(labels: Labels | null | undefined): ClassifiedLabels {
  const unreserved: Labels = {};
  const invalid: ReservedLabelError[] = [];
  let computeOnly = false;
  for (const [key, value] of Object.entries(labels ?? {})) {
    if (!isReservedLabel(key)) {
      unreserved[key] = value;
    } else if (key === LABELS.computeOnly) {
      const parsed = parseBool(value);
      if (parsed === undefined) invalid.push(new ReservedLabelError(key, `${key}: strconv.ParseBool: parsing ${JSON.stringify(value)}: invalid syntax`));
      else computeOnly = parsed;
    } else if (VOLUME_ONLY_RESERVED.has(key)) {
      invalid.push(new ReservedLabelError(key, `${key}: invalid reserved label for this object type`));
    } else {
      invalid.push(new ReservedLabelError(key, `${key}: unrecognized reserved label`));
    }
  }
  return { unreserved, computeOnly, invalid };
}

async function findNode(storage: NodeLabels, name: string): Promise<StorageNode> {
  const node = (await storage.listNodes()).find((n) => n.name === name);
  if (!node) throw new NodeNotFoundError(name);
  return node;
}

/** `EnsureComputeOnly`: one list, and `PUT …/compute-only` only when the current state differs. Returns whether it wrote. */
export async function ensureComputeOnly(storage: NodeLabels, name: string, computeOnly: boolean): Promise<boolean> {
  return retryOnStaleVersion(async () => {
    const node = await findNode(storage, name);
    const raw = node.labels[LABELS.computeOnly];
    const current = raw === undefined ? false : parseBool(raw);
    if (current === undefined) throw new ReservedLabelError(LABELS.computeOnly, `strconv.ParseBool: parsing ${JSON.stringify(raw)}: invalid syntax`);
    if (current === computeOnly) return false;
    await storage.setComputeOnly({ id: node.id, computeOnly, version: node.version });
    return true;
  });
}

/**
 * `EnsureUnreservedNodeLabels`: a fresh list, then one `PUT /nodes/{id}` with the desired unreserved labels
 * plus the node's current reserved ones, unless that is what it holds already. Returns whether it wrote.
 */
export async function ensureUnreservedNodeLabels(storage: NodeLabels, name: string, unreserved: Labels): Promise<boolean> {
  return retryOnStaleVersion(async () => {
    const node = await findNode(storage, name);
    const apply: Labels = { ...unreserved };
    for (const [key, value] of Object.entries(node.labels)) if (isReservedLabel(key)) apply[key] = value;
    if (labelsMatch(node.labels, apply)) return false;
    await storage.updateNodeLabels({ id: node.id, labels: apply, version: node.version });
    return true;
  });
}

const labelsMatch = (a: Labels, b: Labels): boolean =>
  Object.keys(a).length === Object.keys(b).length && Object.entries(a).every(([k, v]) => b[k] === v);

/** What one {@link ensureNodeLabels} did. */
export interface EnsureOutcome {
  /** The node is unknown to the control plane: nothing was done. */
  nodeNotFound: boolean;
  computeOnlyWritten: boolean;
  labelsWritten: boolean;
  /** Reserved labels rejected by validation (the valid parts were still applied). */
  invalid: ReservedLabelError[];
  /** Failed control-plane calls (retry the whole set). */
  failures: Error[];
}

/** `EnsureNodeLabels(name, labels)` with all of the Kubernetes node's labels. Never throws; see {@link EnsureOutcome}. */
export async function ensureNodeLabels(storage: NodeLabels, name: string, labels: Labels | null | undefined): Promise<EnsureOutcome> {
  const { unreserved, computeOnly, invalid } = classifyNodeLabels(labels);
  const outcome: EnsureOutcome = { nodeNotFound: false, computeOnlyWritten: false, labelsWritten: false, invalid, failures: [] };
  const step = async (run: () => Promise<boolean>): Promise<boolean> => {
    try {
      return await run();
    } catch (error) {
      if (error instanceof NodeNotFoundError) outcome.nodeNotFound = true;
      else if (error instanceof ReservedLabelError) outcome.invalid.push(error);
      else outcome.failures.push(error instanceof Error ? error : new Error(String(error)));
      return false;
    }
  };
  outcome.computeOnlyWritten = await step(() => ensureComputeOnly(storage, name, computeOnly));
  if (outcome.nodeNotFound) return outcome;
  outcome.labelsWritten = await step(() => ensureUnreservedNodeLabels(storage, name, unreserved));
  return outcome;
}
