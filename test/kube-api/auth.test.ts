/**
 * Authentication and RBAC in the emulator, held against upstream's behaviour: bearer tokens from a static
 * token file and ServiceAccount tokens (401 otherwise), request attributes as the apiserver's RequestInfo
 * derives them, RBAC evaluation (verbs, `*`, subresources, resourceNames, nonResourceURLs, RoleBinding to a
 * ClusterRole, ServiceAccount subjects, missing roles, `system:masters`), ClusterRole aggregation, the 403
 * messages, the review APIs and impersonation, and the real kubectl (`auth can-i`, `auth whoami`, `--as`).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Agent, fetch } from 'undici';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { startKubeApi, type KubeApi } from '../../infra/local/kube-api/index.ts';
import { formatTokenFile, parseTokenFile } from '../../infra/local/kube-api/auth/authenticator.ts';
import { requestInfoOf } from '../../infra/local/kube-api/auth/request-info.ts';
import { PROJECT_ROOT } from '../../infra/build/bundle.ts';

const RBAC = 'rbac.authorization.k8s.io';

describe('request attributes (RequestInfoFactory)', () => {
  const info = (method: string, url: string) => {
    const u = new URL(url, 'http://x');
    const i = requestInfoOf(method, u.pathname, u.searchParams);
    return [i.resourceRequest ? 'r' : 'n', i.verb, i.apiGroup, i.namespace, i.resource, i.subresource, i.name].join('|');
  };
  const table: Array<[string, string, string]> = [
    ['GET', '/api/v1/namespaces/ns/pods', 'r|list||ns|pods||'],
    ['GET', '/api/v1/namespaces/ns/pods?watch=true', 'r|watch||ns|pods||'],
    ['GET', '/api/v1/namespaces/ns/pods?watch=1&resourceVersion=5', 'r|watch||ns|pods||'],
    ['GET', '/api/v1/namespaces/ns/pods?watch=false', 'r|list||ns|pods||'],
    ['GET', '/api/v1/namespaces/ns/pods/p1', 'r|get||ns|pods||p1'],
    ['GET', '/api/v1/namespaces/ns/pods/p1?watch=true', 'r|get||ns|pods||p1'],
    ['GET', '/api/v1/namespaces/ns/pods?fieldSelector=metadata.name%3Dp1', 'r|list||ns|pods||p1'],
    ['GET', '/api/v1/nodes?watch=1&fieldSelector=metadata.name%3Dn1,spec.unschedulable%3Dfalse', 'r|watch|||nodes||n1'],
    ['GET', '/api/v1/watch/namespaces/ns/pods', 'r|watch||ns|pods||'],
    ['POST', '/api/v1/persistentvolumes', 'r|create|||persistentvolumes||'],
    ['PUT', '/api/v1/persistentvolumes/pv1/status', 'r|update|||persistentvolumes|status|pv1'],
    ['PATCH', '/apis/storage.k8s.io/v1/storageclasses/fast', 'r|patch|storage.k8s.io||storageclasses||fast'],
    ['DELETE', '/api/v1/namespaces/ns/persistentvolumeclaims/c1', 'r|delete||ns|persistentvolumeclaims||c1'],
    ['DELETE', '/api/v1/namespaces/ns/persistentvolumeclaims', 'r|deletecollection||ns|persistentvolumeclaims||'],
    ['POST', '/api/v1/namespaces/ns/serviceaccounts/sa/token', 'r|create||ns|serviceaccounts|token|sa'],
    ['GET', '/api/v1/namespaces/ns', 'r|get||ns|namespaces||ns'],
    ['PUT', '/api/v1/namespaces/ns/finalize', 'r|update||ns|namespaces|finalize|ns'],
    ['GET', '/api/v1/namespaces', 'r|list|||namespaces||'],
    ['GET', '/api', 'n|get|||||'],
    ['GET', '/apis/storage.k8s.io/v1', 'n|get|||||'],
    ['GET', '/healthz', 'n|get|||||'],
    ['HEAD', '/version', 'n|head|||||'],
  ];
  for (const [method, url, expected] of table) {
    it(`${method} ${url} → ${expected}`, () => assert.equal(info(method, url), expected));
  }
});

describe('static token file (--token-auth-file)', () => {
  it('reads CSV records token,user,uid[,"g1,g2"], skips empty tokens, and rejects short records', () => {
    const tokens = parseTokenFile('t1,alice,u-1,"dev,ops"\n\n,nobody,u-0\nt2,bob,u-2\n"t,3","carol ""c""",u-3,solo\n');
    assert.deepEqual(tokens, [
      { token: 't1', user: 'alice', uid: 'u-1', groups: ['dev', 'ops'] },
      { token: 't2', user: 'bob', uid: 'u-2' },
      { token: 't,3', user: 'carol "c"', uid: 'u-3', groups: ['solo'] },
    ]);
    assert.deepEqual(parseTokenFile(formatTokenFile(tokens)), tokens);
    assert.throws(() => parseTokenFile('t1,alice\n'), /must have at least 3 columns \(token, user name, user uid\), found 2/);
  });
});

describe('the emulator with authentication and RBAC', () => {
  let api: KubeApi;
  let dir: string;
  let agent: Agent;

  /** Raw HTTPS request as `token` (none: no Authorization header). */
  const call = async (token: string | undefined, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(api.url + path, {
      method,
      dispatcher: agent,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      json = text;
    }
    return { status: res.status, body: json };
  };
  const admin = () => api.auth!.adminToken;
  const apply = async (resource: string, obj: any) => {
    const r = await call(admin(), 'POST', resource, obj);
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body;
  };
  /** SelfSubjectAccessReview as `token`. */
  const can = async (token: string, attrs: Record<string, string>, nonResource = false): Promise<boolean> => {
    const r = await call(token, 'POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
      apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview',
      spec: nonResource ? { nonResourceAttributes: attrs } : { resourceAttributes: attrs },
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body.status.allowed;
  };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kube-auth-'));
    const file = join(dir, 'tokens.csv');
    await writeFile(file, formatTokenFile([
      { token: 'alice-token', user: 'alice', uid: 'uid-alice', groups: ['dev'] },
      { token: 'bob-token', user: 'bob', uid: 'uid-bob' },
      { token: 'root-token', user: 'root', uid: 'uid-root', groups: ['system:masters'] },
    ]));
    api = await startKubeApi({ auth: { tokenAuthFile: file } });
    agent = new Agent({ connect: { ca: api.caCert } });
    await apply('/api/v1/namespaces', { metadata: { name: 'team' } });
    await apply('/api/v1/namespaces/team/serviceaccounts', { metadata: { name: 'robot' } });
  });
  after(async () => {
    await agent?.close();
    await api?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('serves https with the certificate its kubeconfig trusts; client-node works with the admin kubeconfig', async () => {
    assert.match(api.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    assert.match(api.kubeconfig(), /certificate-authority-data: /);
    const kc = new KubeConfig();
    kc.loadFromString(api.kubeconfig());
    const ns = await kc.makeApiClient(CoreV1Api).listNamespace();
    assert.ok(ns.items.some((n) => n.metadata?.name === 'team'));
  });

  it('401 Unauthorized (a Status) without a token, with an unknown one, or with a non-bearer scheme', async () => {
    for (const headers of [{}, { authorization: 'Bearer nope' }, { authorization: 'Basic YWxpY2U6cHc=' }] as Array<Record<string, string>>) {
      const r = await call(undefined, 'GET', '/api/v1/namespaces', undefined, headers);
      assert.equal(r.status, 401);
      assert.deepEqual(r.body, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'Unauthorized', reason: 'Unauthorized', code: 401 });
    }
    assert.equal((await call(undefined, 'GET', '/healthz')).status, 401, 'no anonymous access by default');
  });

  it('static tokens map to user, uid and groups (+ system:authenticated): SelfSubjectReview / whoami', async () => {
    const r = await call('alice-token', 'POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
    assert.equal(r.status, 201);
    assert.deepEqual(r.body.status.userInfo, { username: 'alice', uid: 'uid-alice', groups: ['dev', 'system:authenticated'] });
  });

  it('ServiceAccount tokens authenticate while their ServiceAccount exists, only for the API audience', async () => {
    const issued = await call(admin(), 'POST', '/api/v1/namespaces/team/serviceaccounts/robot/token', { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: {} });
    const token = issued.body.status.token;
    const who = await call(token, 'POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {});
    assert.deepEqual(who.body.status.userInfo.groups, ['system:serviceaccounts', 'system:serviceaccounts:team', 'system:authenticated']);
    assert.equal(who.body.status.userInfo.username, 'system:serviceaccount:team:robot');
    const vault = await call(admin(), 'POST', '/api/v1/namespaces/team/serviceaccounts/robot/token', { spec: { audiences: ['vault'] } });
    assert.equal((await call(vault.body.status.token, 'GET', '/api')).status, 401, 'another audience is not for the API');
    // TokenReview as upstream answers it
    const review = await call(admin(), 'POST', '/apis/authentication.k8s.io/v1/tokenreviews', { spec: { token } });
    assert.equal(review.body.status.authenticated, true);
    assert.equal(review.body.status.user.username, 'system:serviceaccount:team:robot');
    await call(admin(), 'DELETE', '/api/v1/namespaces/team/serviceaccounts/robot');
    assert.equal((await call(token, 'GET', '/api')).status, 401, 'the ServiceAccount is gone');
    await apply('/api/v1/namespaces/team/serviceaccounts', { metadata: { name: 'robot' } });
    assert.equal((await call(token, 'GET', '/api')).status, 401, 'a new ServiceAccount of the same name has another uid');
  });

  it('403 with upstream\'s message: namespaced, cluster scope, subresource, named object, non-resource path', async () => {
    const list = await call('bob-token', 'GET', '/api/v1/namespaces/team/persistentvolumeclaims');
    assert.equal(list.status, 403);
    assert.deepEqual(list.body, {
      kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure',
      message: 'persistentvolumeclaims is forbidden: User "bob" cannot list resource "persistentvolumeclaims" in API group "" in the namespace "team"',
      reason: 'Forbidden', details: { kind: 'persistentvolumeclaims' }, code: 403,
    });
    const status = await call('bob-token', 'PUT', '/api/v1/persistentvolumes/pv1/status', { metadata: { name: 'pv1' } });
    assert.equal(status.body.message, 'persistentvolumes "pv1" is forbidden: User "bob" cannot update resource "persistentvolumes/status" in API group "" at the cluster scope');
    assert.deepEqual(status.body.details, { name: 'pv1', kind: 'persistentvolumes' });
    const create = await call('bob-token', 'POST', '/apis/storage.k8s.io/v1/storageclasses', { metadata: { name: 'x' }, provisioner: 'p' });
    assert.equal(create.body.message, 'storageclasses.storage.k8s.io is forbidden: User "bob" cannot create resource "storageclasses" in API group "storage.k8s.io" at the cluster scope');
    assert.deepEqual(create.body.details, { group: 'storage.k8s.io', kind: 'storageclasses' });
    const path = await call('bob-token', 'GET', '/metrics');
    assert.equal(path.status, 403);
    assert.equal(path.body.message, 'forbidden: User "bob" cannot get path "/metrics"');
    // discovery is open to every authenticated user (system:discovery), 404s come after authorization
    assert.equal((await call('bob-token', 'GET', '/apis')).status, 200);
    assert.equal((await call('bob-token', 'GET', '/api/v1/nothing')).status, 403);
    assert.equal((await call(admin(), 'GET', '/api/v1/nothing')).status, 404);
  });

  it('system:masters bypasses RBAC; the bootstrap roles exist', async () => {
    assert.equal((await call('root-token', 'GET', '/api/v1/persistentvolumes')).status, 200);
    for (const name of ['cluster-admin', 'system:discovery', 'system:basic-user', 'system:public-info-viewer']) {
      assert.equal((await call(admin(), 'GET', `/apis/${RBAC}/v1/clusterroles/${encodeURIComponent(name)}`)).status, 200, name);
    }
  });

  it('rules: verbs (list/watch/get/patch/deletecollection), *, subresources, */subresource, resourceNames', async () => {
    await apply(`/apis/${RBAC}/v1/clusterroles`, {
      metadata: { name: 'alice-rules' },
      rules: [
        { apiGroups: [''], resources: ['persistentvolumes'], verbs: ['list', 'watch'] },
        { apiGroups: [''], resources: ['persistentvolumes/status'], verbs: ['patch'] },
        { apiGroups: ['storage.k8s.io'], resources: ['*'], verbs: ['get'] },
        { apiGroups: [''], resources: ['*/status'], verbs: ['get'] },
        { apiGroups: [''], resources: ['nodes'], resourceNames: ['n1'], verbs: ['get', 'update'] },
        { apiGroups: [''], resources: ['configmaps'], verbs: ['deletecollection'] },
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['*'] },
      ],
    });
    await apply(`/apis/${RBAC}/v1/clusterrolebindings`, {
      metadata: { name: 'alice-rules' },
      roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'alice-rules' },
      subjects: [{ apiGroup: RBAC, kind: 'Group', name: 'dev' }],
    });
    const a = 'alice-token';
    assert.equal((await call(a, 'GET', '/api/v1/persistentvolumes')).status, 200, 'list');
    assert.equal((await call(a, 'GET', '/api/v1/persistentvolumes/pv1')).status, 403, 'get is not list');
    assert.equal(await can(a, { verb: 'watch', resource: 'persistentvolumes' }), true);
    assert.equal(await can(a, { verb: 'patch', resource: 'persistentvolumes', subresource: 'status', name: 'pv1' }), true);
    assert.equal(await can(a, { verb: 'patch', resource: 'persistentvolumes', name: 'pv1' }), false, 'the subresource grants nothing on the object');
    assert.equal(await can(a, { verb: 'get', group: 'storage.k8s.io', resource: 'volumeattachments' }), true, '* resources');
    assert.equal(await can(a, { verb: 'get', resource: 'persistentvolumeclaims', subresource: 'status', namespace: 'x' }), true, '*/status');
    assert.equal(await can(a, { verb: 'get', resource: 'persistentvolumeclaims', namespace: 'x' }), false);
    assert.equal(await can(a, { verb: 'get', resource: 'nodes', name: 'n1' }), true, 'resourceNames');
    assert.equal(await can(a, { verb: 'get', resource: 'nodes', name: 'n2' }), false);
    assert.equal(await can(a, { verb: 'list', resource: 'nodes' }), false, 'a list has no name');
    assert.equal((await call(a, 'DELETE', '/api/v1/namespaces/team/configmaps')).status, 200, 'deletecollection');
    assert.equal((await call(a, 'DELETE', '/api/v1/namespaces/team/configmaps/c1')).status, 403, 'delete is not deletecollection');
    assert.equal(await can(a, { verb: 'escalate', group: 'coordination.k8s.io', resource: 'leases', namespace: 'any' }), true, '* verbs');
    // a watch pinned to one name by its field selector carries that name
    assert.equal((await call(a, 'GET', '/api/v1/nodes?fieldSelector=metadata.name%3Dn1')).status, 403, 'list is not granted on nodes, even named');
  });

  it('nonResourceURLs: exact, prefix*, and *', async () => {
    await apply(`/apis/${RBAC}/v1/clusterroles`, { metadata: { name: 'paths' }, rules: [{ nonResourceURLs: ['/metrics', '/logs/*'], verbs: ['get'] }] });
    await apply(`/apis/${RBAC}/v1/clusterrolebindings`, { metadata: { name: 'bob-paths' }, roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'paths' }, subjects: [{ apiGroup: RBAC, kind: 'User', name: 'bob' }] });
    assert.equal(await can('bob-token', { verb: 'get', path: '/metrics' }, true), true);
    assert.equal(await can('bob-token', { verb: 'get', path: '/logs/kube/x' }, true), true);
    assert.equal(await can('bob-token', { verb: 'get', path: '/metricsx' }, true), false);
    assert.equal(await can('bob-token', { verb: 'post', path: '/metrics' }, true), false);
  });

  it('RoleBinding: a Role or a ClusterRole granted in one namespace only; ServiceAccount subjects default to its namespace', async () => {
    await apply(`/apis/${RBAC}/v1/namespaces/team/roles`, { metadata: { name: 'claims' }, rules: [{ apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['get', 'list'] }] });
    await apply(`/apis/${RBAC}/v1/namespaces/team/rolebindings`, { metadata: { name: 'bob-claims' }, roleRef: { apiGroup: RBAC, kind: 'Role', name: 'claims' }, subjects: [{ apiGroup: RBAC, kind: 'User', name: 'bob' }] });
    await apply(`/apis/${RBAC}/v1/clusterroles`, { metadata: { name: 'svc-reader' }, rules: [{ apiGroups: [''], resources: ['services'], verbs: ['list'] }] });
    await apply(`/apis/${RBAC}/v1/namespaces/team/rolebindings`, {
      metadata: { name: 'robot-svc' }, roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'svc-reader' },
      subjects: [{ kind: 'ServiceAccount', name: 'robot' }],
    });
    assert.equal((await call('bob-token', 'GET', '/api/v1/namespaces/team/persistentvolumeclaims')).status, 200);
    assert.equal((await call('bob-token', 'GET', '/api/v1/namespaces/default/persistentvolumeclaims')).status, 403);
    assert.equal((await call('bob-token', 'GET', '/api/v1/persistentvolumeclaims')).status, 403, 'all namespaces is the cluster scope');
    const token = (await call(admin(), 'POST', '/api/v1/namespaces/team/serviceaccounts/robot/token', { spec: {} })).body.status.token;
    assert.equal((await call(token, 'GET', '/api/v1/namespaces/team/services')).status, 200);
    assert.equal((await call(token, 'GET', '/api/v1/namespaces/default/services')).status, 403);
  });

  it('a binding to a missing role allows nothing and says so in the reason', async () => {
    await apply(`/apis/${RBAC}/v1/namespaces/team/rolebindings`, { metadata: { name: 'ghost' }, roleRef: { apiGroup: RBAC, kind: 'Role', name: 'ghost' }, subjects: [{ apiGroup: RBAC, kind: 'User', name: 'bob' }] });
    const r = await call('bob-token', 'GET', '/api/v1/namespaces/team/secrets');
    assert.equal(r.status, 403);
    assert.equal(r.body.message, 'secrets is forbidden: User "bob" cannot list resource "secrets" in API group "" in the namespace "team": RBAC: role.rbac.authorization.k8s.io "ghost" not found');
  });

  it('role changes apply to the next request (the decision cache follows RBAC writes)', async () => {
    assert.equal((await call('bob-token', 'GET', '/api/v1/nodes')).status, 403);
    await apply(`/apis/${RBAC}/v1/clusterroles`, { metadata: { name: 'nodes' }, rules: [{ apiGroups: [''], resources: ['nodes'], verbs: ['list'] }] });
    assert.equal((await call('bob-token', 'GET', '/api/v1/nodes')).status, 403, 'a role alone grants nothing');
    await apply(`/apis/${RBAC}/v1/clusterrolebindings`, { metadata: { name: 'bob-nodes' }, roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'nodes' }, subjects: [{ apiGroup: RBAC, kind: 'User', name: 'bob' }] });
    assert.equal((await call('bob-token', 'GET', '/api/v1/nodes')).status, 200);
    const role = (await call(admin(), 'GET', `/apis/${RBAC}/v1/clusterroles/nodes`)).body;
    role.rules = [{ apiGroups: [''], resources: ['nodes'], verbs: ['get'] }];
    assert.equal((await call(admin(), 'PUT', `/apis/${RBAC}/v1/clusterroles/nodes`, role)).status, 200);
    assert.equal((await call('bob-token', 'GET', '/api/v1/nodes')).status, 403, 'the verb was removed');
    await call(admin(), 'DELETE', `/apis/${RBAC}/v1/clusterrolebindings/bob-nodes`);
    assert.equal(await can('bob-token', { verb: 'get', resource: 'nodes', name: 'x' }), false);
    assert.ok(api.auth!.rbac!.cached > 0);
  });

  it('ClusterRole aggregation: selected roles\' rules are aggregated and follow their changes', async () => {
    await apply(`/apis/${RBAC}/v1/clusterroles`, {
      metadata: { name: 'storage-view' },
      aggregationRule: { clusterRoleSelectors: [{ matchLabels: { 'example.com/aggregate-to-storage-view': 'true' } }] },
      rules: [],
    });
    await apply(`/apis/${RBAC}/v1/clusterroles`, {
      metadata: { name: 'view-pv', labels: { 'example.com/aggregate-to-storage-view': 'true' } },
      rules: [{ apiGroups: [''], resources: ['persistentvolumes'], verbs: ['get'] }],
    });
    await apply(`/apis/${RBAC}/v1/clusterrolebindings`, { metadata: { name: 'bob-storage-view' }, roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'storage-view' }, subjects: [{ apiGroup: RBAC, kind: 'User', name: 'bob' }] });
    const until = async (check: () => Promise<boolean>) => {
      for (let i = 0; i < 200 && !(await check()); i++) await new Promise((r) => setTimeout(r, 10));
      assert.ok(await check());
    };
    await until(() => can('bob-token', { verb: 'get', resource: 'persistentvolumes', name: 'pv1' }));
    await apply(`/apis/${RBAC}/v1/clusterroles`, {
      metadata: { name: 'view-sc', labels: { 'example.com/aggregate-to-storage-view': 'true' } },
      rules: [{ apiGroups: ['storage.k8s.io'], resources: ['storageclasses'], verbs: ['get'] }, { apiGroups: [''], resources: ['persistentvolumes'], verbs: ['get'] }],
    });
    await until(() => can('bob-token', { verb: 'get', group: 'storage.k8s.io', resource: 'storageclasses', name: 'fast' }));
    const aggregated = (await call(admin(), 'GET', `/apis/${RBAC}/v1/clusterroles/storage-view`)).body;
    assert.deepEqual(aggregated.rules, [
      { apiGroups: [''], resources: ['persistentvolumes'], verbs: ['get'] },
      { apiGroups: ['storage.k8s.io'], resources: ['storageclasses'], verbs: ['get'] },
    ], 'each rule once, roles in name order');
    await call(admin(), 'DELETE', `/apis/${RBAC}/v1/clusterroles/view-sc`);
    await until(async () => !(await can('bob-token', { verb: 'get', group: 'storage.k8s.io', resource: 'storageclasses', name: 'fast' })));
  });

  it('SelfSubjectRulesReview lists the rules; SubjectAccessReview asks about someone else', async () => {
    const rules = await call('bob-token', 'POST', '/apis/authorization.k8s.io/v1/selfsubjectrulesreviews', { spec: { namespace: 'team' } });
    assert.equal(rules.status, 201);
    assert.ok(rules.body.status.resourceRules.some((r: any) => r.resources.includes('persistentvolumeclaims') && r.verbs.includes('list')));
    assert.ok(rules.body.status.nonResourceRules.some((r: any) => r.nonResourceURLs.includes('/metrics')));
    assert.equal(rules.body.status.incomplete, false);
    assert.match(rules.body.status.evaluationError, /role\.rbac\.authorization\.k8s\.io "ghost" not found/);
    const sar = { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec: { user: 'alice', groups: ['dev'], resourceAttributes: { verb: 'list', resource: 'persistentvolumes' } } };
    assert.equal((await call('bob-token', 'POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', sar)).status, 403, 'bob may not ask');
    const answer = await call(admin(), 'POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', sar);
    assert.deepEqual(answer.body.status, { allowed: true, reason: 'RBAC: allowed by ClusterRoleBinding "alice-rules" of ClusterRole "alice-rules" to Group "dev"' });
  });

  it('impersonation is checked with the impersonate verb (users, groups, serviceaccounts)', async () => {
    const as = (user: string, groups: string[] = []) => ({ 'impersonate-user': user, ...(groups.length ? { 'impersonate-group': groups.join(',') } : {}) });
    const denied = await call('bob-token', 'GET', '/api/v1/persistentvolumes', undefined, as('alice'));
    assert.equal(denied.status, 403);
    assert.equal(denied.body.message, 'users "alice" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope');
    assert.equal((await call(admin(), 'GET', '/api/v1/persistentvolumes', undefined, as('alice', ['dev']))).status, 200);
    assert.equal((await call(admin(), 'GET', '/api/v1/persistentvolumes', undefined, as('alice'))).status, 403, 'alice without her groups');
    const who = await call(admin(), 'POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {}, as('system:serviceaccount:team:robot'));
    assert.deepEqual(who.body.status.userInfo, { username: 'system:serviceaccount:team:robot', groups: ['system:serviceaccounts', 'system:serviceaccounts:team', 'system:authenticated'] });
  });

  const kubectlPresent = spawnSync('kubectl', ['version', '--client', '-o', 'json'], { encoding: 'utf8' }).status === 0;
  it('kubectl: auth can-i (yes/no, --as, --list), auth whoami, and the 403 as kubectl prints it', { skip: !kubectlPresent && 'kubectl is not installed' }, async () => {
    const run = promisify(execFile);
    const config = async (name: string, token?: string) => {
      const path = join(dir, name);
      await api.writeKubeconfig(path, token);
      return path;
    };
    const adminConfig = await config('admin');
    const bobConfig = await config('bob', 'bob-token');
    const kubectl = async (kubeconfig: string, ...args: string[]) => {
      try {
        const out = await run('kubectl', args, { env: { PATH: process.env.PATH, KUBECONFIG: kubeconfig, HOME: dir }, timeout: 30_000 });
        return { code: 0, out: out.stdout, err: out.stderr };
      } catch (e) {
        const err = e as { code: number; stdout: string; stderr: string };
        return { code: err.code, out: err.stdout, err: err.stderr };
      }
    };
    assert.deepEqual([(await kubectl(bobConfig, 'auth', 'can-i', 'list', 'pvc', '-n', 'team')).out.trim()], ['yes']);
    const no = await kubectl(bobConfig, 'auth', 'can-i', 'create', 'pv');
    assert.deepEqual([no.code, no.out.trim()], [1, 'no']);
    assert.equal((await kubectl(adminConfig, 'auth', 'can-i', 'list', 'persistentvolumes', '--as=alice', '--as-group=dev')).out.trim(), 'yes');
    assert.equal((await kubectl(adminConfig, 'auth', 'can-i', 'list', 'services', '-n', 'team', '--as=system:serviceaccount:team:robot')).out.trim(), 'yes');
    assert.match((await kubectl(bobConfig, 'auth', 'can-i', '--list', '-n', 'team')).out, /persistentvolumeclaims\s+\[\]\s+\[\]\s+\[get list\]/);
    assert.match((await kubectl(bobConfig, 'auth', 'whoami')).out, /Username\s+bob/);
    const forbidden = await kubectl(bobConfig, 'create', 'namespace', 'nope');
    assert.equal(forbidden.code, 1);
    assert.match(forbidden.err, /Error from server \(Forbidden\): namespaces is forbidden: User "bob" cannot create resource "namespaces" in API group "" at the cluster scope/);
    // the shipped manifests apply as an admin, and the forwarder's ServiceAccount then reads but never writes
    const applied = await kubectl(adminConfig, 'apply', '-k', join(PROJECT_ROOT, 'infra/k8s'));
    assert.equal(applied.code, 0, applied.err);
    const fwd = '--as=system:serviceaccount:claimflow:claimflow-forwarder';
    assert.equal((await kubectl(adminConfig, 'auth', 'can-i', 'watch', 'persistentvolumes', fwd)).out.trim(), 'yes');
    assert.equal((await kubectl(adminConfig, 'auth', 'can-i', 'update', 'persistentvolumes', fwd)).out.trim(), 'no');
    assert.equal((await kubectl(adminConfig, 'auth', 'can-i', 'update', 'leases/claimflow-forwarder', '-n', 'claimflow', fwd)).out.trim(), 'yes');
    assert.equal((await kubectl(adminConfig, 'auth', 'can-i', 'update', 'leases/someone-else', '-n', 'claimflow', fwd)).out.trim(), 'no');
  });
});

describe('the emulator without auth (npm run kube-api\'s default)', () => {
  it('allows every request over plain http, and answers reviews as allowed', async () => {
    const api = await startKubeApi();
    try {
      assert.match(api.url, /^http:\/\//);
      const r = await fetch(`${api.url}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ spec: { resourceAttributes: { verb: 'delete', resource: 'nodes' } } }),
      });
      assert.equal(r.status, 201);
      assert.equal(((await r.json()) as any).status.allowed, true);
      assert.equal(api.store.peek(`${RBAC}/clusterroles`, '', 'cluster-admin'), undefined, 'no bootstrap policy without RBAC');
    } finally {
      await api.stop();
    }
  });

  it('anonymous access, when on, is system:anonymous in system:unauthenticated: /healthz yes, resources no', async () => {
    const api = await startKubeApi({ auth: { anonymous: true } });
    const agent = new Agent({ connect: { ca: api.caCert } });
    try {
      assert.equal((await fetch(`${api.url}/healthz`, { dispatcher: agent })).status, 200);
      const r = await fetch(`${api.url}/api/v1/nodes`, { dispatcher: agent });
      assert.equal(r.status, 403);
      assert.match(((await r.json()) as any).message, /User "system:anonymous" cannot list resource "nodes"/);
    } finally {
      await agent.close();
      await api.stop();
    }
  });
});
