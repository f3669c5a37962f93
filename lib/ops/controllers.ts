/**
 * The controllers an operator deals with and how serverless.yml names their resources: each has a queue
 * `<service>-<stage>-<controller>.fifo` (logical id `<Prefix>Queue`) with a DLQ `…-<controller>-dlq.fifo`
 * (`<Prefix>Dlq`), and a function. test/serverless/operations.test.ts holds these names to the template.
 *
 * @example
 * queueNames('claimflow', 'prod', controllerSpec('binder')); // { queue: 'claimflow-prod-binder.fifo', dlq: 'claimflow-prod-binder-dlq.fifo' }
 * parseKind('pvc'); // 'PersistentVolumeClaim'
 */
import { WATCHED_KINDS, type WatchedKind } from '../runtime/message.ts';

/** serverless.yml's `service`. */
export const SERVICE = 'claimflow';

export interface ControllerSpec {
  /** The controller's name: backoff records, metrics dimension, REQUEUE `controller`. */
  name: string;
  /** Logical id prefix of its queue and DLQ (`BinderQueue`, `BinderDlq`). */
  prefix: string;
  /** Its function's key in serverless.yml. */
  functionName: string;
}

export const CONTROLLERS: readonly ControllerSpec[] = Object.freeze([
  { name: 'binder', prefix: 'Binder', functionName: 'binder' },
  { name: 'provisioner', prefix: 'Provisioner', functionName: 'provisioner' },
  { name: 'shared-volume', prefix: 'SharedVolume', functionName: 'sharedVolume' },
  { name: 'label-sync', prefix: 'LabelSync', functionName: 'labelSync' },
]);

/** A usage mistake the CLI reports with exit code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** The controller called `name` (its function name is accepted too). */
export function controllerSpec(name: string): ControllerSpec {
  const spec = CONTROLLERS.find((c) => c.name === name || c.functionName === name);
  if (!spec) throw new UsageError(`unknown controller ${JSON.stringify(name)}; known: ${CONTROLLERS.map((c) => c.name).join(', ')}`);
  return spec;
}

/** Physical queue names of a controller in a stage. */
export function queueNames(service: string, stage: string, spec: ControllerSpec): { queue: string; dlq: string } {
  return { queue: `${service}-${stage}-${spec.name}.fifo`, dlq: `${service}-${stage}-${spec.name}-dlq.fifo` };
}

/** Physical table names of a stage. */
export function tableNamesOf(service: string, stage: string): { cache: string; control: string } {
  return { cache: `${service}-${stage}-cache`, control: `${service}-${stage}-control` };
}

const KIND_ALIASES: Record<string, WatchedKind> = {
  pv: 'PersistentVolume',
  pvc: 'PersistentVolumeClaim',
  no: 'Node',
  sc: 'StorageClass',
  va: 'VolumeAttachment',
  svc: 'Service',
  ep: 'Endpoints',
};

/** A kind as kubectl accepts it: `PersistentVolumeClaim`, `persistentvolumeclaims`, `pvc`, … */
export function parseKind(text: string): WatchedKind {
  const lower = text.toLowerCase();
  if (KIND_ALIASES[lower]) return KIND_ALIASES[lower];
  const found = WATCHED_KINDS.find((k) => {
    const kind = k.toLowerCase();
    return lower === kind || lower === `${kind}s` || (kind.endsWith('s') && lower === kind);
  });
  if (!found) throw new UsageError(`unknown kind ${JSON.stringify(text)}; known: ${WATCHED_KINDS.join(', ')} (or ${Object.keys(KIND_ALIASES).join(', ')})`);
  return found;
}
