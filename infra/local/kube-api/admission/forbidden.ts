/**
 * The 403/404 bodies admission plugins answer with (apimachinery `errors.NewForbidden`, `NewNotFound`).
 */
import { StatusError } from '../types.ts';

/** `resource[.group]` of a store key (`/persistentvolumeclaims`, `coordination.k8s.io/leases`). */
export function groupResource(resource: string): { group: string; plural: string; qualified: string } {
  const slash = resource.indexOf('/');
  const group = resource.slice(0, slash);
  const plural = resource.slice(slash + 1);
  return { group, plural, qualified: group ? `${plural}.${group}` : plural };
}

/** `errors.NewForbidden`: `<resource> "<name>" is forbidden: <reason>`. */
export function forbiddenError(resource: string, name: string, reason: string, causes?: Array<Record<string, string>>): StatusError {
  const gr = groupResource(resource);
  return new StatusError(403, 'Forbidden', `${gr.qualified} "${name}" is forbidden: ${reason}`, {
    name,
    ...(gr.group ? { group: gr.group } : {}),
    kind: gr.plural,
    ...(causes ? { causes } : {}),
  });
}

/** `errors.NewNotFound` for a namespace. */
export function namespaceNotFound(name: string): StatusError {
  return new StatusError(404, 'NotFound', `namespaces "${name}" not found`, { name, kind: 'namespaces' });
}
