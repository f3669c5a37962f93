/**
 * NamespaceLifecycle (`apiserver/pkg/admission/plugin/namespace/lifecycle`): no content in missing or
 * terminating namespaces, and the immortal namespaces cannot be deleted.
 */
import type { AdmissionPlugin, AdmissionRequest } from '../types.ts';
import { forbiddenError, namespaceNotFound } from './forbidden.ts';

/** Namespaces that may never be deleted. */
export const IMMORTAL_NAMESPACES = ['default', 'kube-system', 'kube-public'];

/** Whether a namespace is being terminated (phase Terminating, or a deletionTimestamp not yet reflected). */
export const isTerminating = (ns: { metadata: { deletionTimestamp?: string }; status?: { phase?: string } }): boolean =>
  ns.status?.phase === 'Terminating' || Boolean(ns.metadata.deletionTimestamp);

/** Creates the NamespaceLifecycle plugin. */
export function namespaceLifecycle(): AdmissionPlugin {
  return {
    name: 'NamespaceLifecycle',
    admit(req: AdmissionRequest): void {
      const name = req.object?.metadata?.name ?? req.old?.metadata?.name ?? '';
      if (req.resource === '/namespaces') {
        if (req.operation === 'DELETE' && IMMORTAL_NAMESPACES.includes(name)) {
          throw forbiddenError(req.resource, name, 'this namespace may not be deleted');
        }
        return;
      }
      if (req.operation !== 'CREATE' || req.subresource) return;
      const namespace = req.object?.metadata?.namespace;
      const spec = req.store.kinds.get(req.resource);
      if (!namespace || (spec && !spec.namespaced)) return;
      const ns = req.store.peek('/namespaces', '', namespace);
      if (!ns) throw namespaceNotFound(namespace);
      if (isTerminating(ns)) {
        throw forbiddenError(req.resource, name, `unable to create new content in namespace ${namespace} because it is being terminated`, [
          { reason: 'NamespaceTerminating', message: `namespace ${namespace} is being terminated`, field: 'metadata.namespace' },
        ]);
      }
    },
  };
}
