/**
 * Reading an RBAC denial back from the API's 403 (lib/kube/errors.ts `forbiddenRequest`), as the runtime does to
 * log `forbidden: <verb> <resource>` and count the `Forbidden` metric: the verb, the resource as kubectl names it,
 * the namespace, the name and the user; through `cause`s; and nothing for a 403 that is not an authorization
 * denial (admission refusing a write into a terminating namespace).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiException } from '@kubernetes/client-node';
import { forbidden } from '../../infra/local/kube-api/errors.ts';
import { forbiddenRequest, isForbidden } from '../../lib/kube/errors.ts';

const user = { username: 'system:serviceaccount:claimflow:claimflow-forwarder' };
const apiError = (status: Record<string, unknown>) => new ApiException(403, 'Forbidden', JSON.stringify(status), {});
const attrs = (a: Partial<Parameters<typeof forbidden>[0]>) => ({ user, verb: 'get', resourceRequest: true, path: '', apiGroup: '', namespace: '', resource: '', subresource: '', name: '', ...a });

test('a cluster-scoped subresource update', () => {
  const err = apiError(forbidden(attrs({ verb: 'update', resource: 'persistentvolumes', subresource: 'status', name: 'pv1' })).toStatus());
  assert.ok(isForbidden(err));
  assert.deepEqual(forbiddenRequest(err), {
    verb: 'update', resource: 'persistentvolumes/status', group: '', qualifiedResource: 'persistentvolumes/status', name: 'pv1', user: user.username,
    message: 'persistentvolumes "pv1" is forbidden: User "system:serviceaccount:claimflow:claimflow-forwarder" cannot update resource "persistentvolumes/status" in API group "" at the cluster scope',
  });
});

test('a namespaced create in a named group, behind a cause', () => {
  const err = new Error('recording the event failed', { cause: apiError(forbidden(attrs({ verb: 'create', apiGroup: 'events.k8s.io', resource: 'events', namespace: 'team' })).toStatus()) });
  const denied = forbiddenRequest(err)!;
  assert.equal(denied.verb, 'create');
  assert.equal(denied.qualifiedResource, 'events.events.k8s.io');
  assert.equal(denied.namespace, 'team');
  assert.equal(denied.name, undefined);
});

test('a denial with the authorizer\'s reason still parses', () => {
  const err = apiError(forbidden(attrs({ verb: 'list', resource: 'secrets', namespace: 'x' }), 'RBAC: role.rbac.authorization.k8s.io "ghost" not found').toStatus());
  assert.equal(forbiddenRequest(err)!.verb, 'list');
});

test('not an authorization denial: a 403 from admission, other codes, other errors', () => {
  const terminating = apiError({ kind: 'Status', code: 403, reason: 'Forbidden', message: 'persistentvolumeclaims "c1" is forbidden: unable to create new content in namespace x because it is being terminated' });
  assert.equal(forbiddenRequest(terminating), undefined);
  assert.equal(forbiddenRequest(new ApiException(404, 'NotFound', '{"code":404}', {})), undefined);
  assert.equal(forbiddenRequest(new Error('boom')), undefined);
  assert.equal(forbiddenRequest(undefined), undefined);
});
