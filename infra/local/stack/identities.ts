/**
 * Every component of the local stack runs under the identity it has in production, on an emulator that
 * authenticates and evaluates RBAC:
 * - **RBAC as shipped**: the Namespace, ServiceAccount, Roles, ClusterRoles and bindings of `infra/k8s` — the
 *   files `kubectl apply -k infra/k8s` applies, read from the kustomization, not a copy — are applied at start
 *   (the Deployment is not: nothing would run it, the forwarder runs in the stack's process).
 * - **The forwarder** authenticates with a token of its ServiceAccount (`claimflow/claimflow-forwarder`),
 *   obtained with a TokenRequest as the kubelet would for its pod.
 * - **Each function** that talks to the cluster authenticates as its IAM role does through its EKS access
 *   entry (`AWS::EKS::AccessEntry` in serverless.yml): user `arn:aws:sts::<account>:assumed-role/<role>/<function>`,
 *   groups = the entry's `KubernetesGroups` (+ `system:authenticated`), via a static token (`--token-auth-file`)
 *   in a kubeconfig of its own. A function without an access entry (resync) gets no kubeconfig.
 * - **The user** gets an admin kubeconfig (`claimflow-admin` in `system:masters`).
 *
 * @example
 * const plan = planIdentities(wiring, 'claimflow-local');
 * await writeFile(tokenFile, formatTokenFile(plan.tokens));
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { parseAllDocuments, parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import type { StaticToken } from '../kube-api/auth/authenticator.ts';
import { SYSTEM_MASTERS } from '../kube-api/auth/user.ts';
import type { MemoryStore } from '../kube-api/store.ts';
import type { KubeObject } from '../kube-api/types.ts';
import { LOCAL_ACCOUNT_ID } from './resources.ts';
import type { FunctionDef, Wiring } from './wiring.ts';

/** The user of the admin kubeconfig the stack writes. */
export const LOCAL_ADMIN_USER = 'claimflow-admin';

/** A function's Kubernetes identity. */
export interface FunctionIdentity {
  /** serverless.yml function name. */
  function: string;
  username: string;
  uid: string;
  /** The access entry's groups (the emulator adds `system:authenticated`). */
  groups: string[];
  token: string;
}

/** Who is who, before the emulator starts. */
export interface IdentityPlan {
  admin: { username: string; token: string };
  functions: FunctionIdentity[];
  /** The static token file's records. */
  tokens: StaticToken[];
}

const newToken = (): string => randomBytes(32).toString('base64url');

/**
 * The username EKS gives an IAM role's session by default (`arn:aws:sts::<account>:assumed-role/<role>/
 * {{SessionName}}`); a Lambda function's session is named after the function.
 */
export function assumedRoleUsername(stackName: string, fn: FunctionDef): string {
  return `arn:aws:sts::${LOCAL_ACCOUNT_ID}:assumed-role/${stackName}-${fn.role}/${fn.functionName}`;
}

/** The identities of the admin and of every function with an EKS access entry. */
export function planIdentities(wiring: Wiring, stackName: string): IdentityPlan {
  const admin = { username: LOCAL_ADMIN_USER, token: newToken() };
  const functions = wiring.functions
    .filter((fn) => fn.role !== undefined && fn.kubernetesGroups !== undefined)
    .map((fn) => ({
      function: fn.name,
      username: assumedRoleUsername(stackName, fn),
      uid: `aws-iam-authenticator:${LOCAL_ACCOUNT_ID}:${fn.role}`,
      groups: [...(fn.kubernetesGroups ?? [])],
      token: newToken(),
    }));
  const tokens: StaticToken[] = [
    { token: admin.token, user: admin.username, uid: admin.username, groups: [SYSTEM_MASTERS] },
    ...functions.map((f) => ({ token: f.token, user: f.username, uid: f.uid, groups: f.groups })),
  ];
  return { admin, functions, tokens };
}

/** The store resource of each RBAC-related kind `applyShippedRbac` applies. */
const APPLIED_KINDS: Record<string, string> = {
  Namespace: '/namespaces',
  ServiceAccount: '/serviceaccounts',
  ClusterRole: 'rbac.authorization.k8s.io/clusterroles',
  ClusterRoleBinding: 'rbac.authorization.k8s.io/clusterrolebindings',
  Role: 'rbac.authorization.k8s.io/roles',
  RoleBinding: 'rbac.authorization.k8s.io/rolebindings',
};

/** The documents of every resource file `kustomization.yaml` lists (in its order). */
export async function readKustomization(dir: string): Promise<KubeObject[]> {
  const kustomization = parseYaml(await readFile(join(dir, 'kustomization.yaml'), 'utf8')) as { resources?: string[] };
  const objects: KubeObject[] = [];
  for (const file of kustomization.resources ?? []) {
    const text = await readFile(join(dir, file), 'utf8');
    for (const doc of parseAllDocuments(text)) {
      const obj = doc.toJS() as KubeObject | null;
      if (obj && typeof obj === 'object' && obj.kind) objects.push(obj);
    }
  }
  return objects;
}

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/** JSON with keys sorted, as Go's `json.Marshal` of an unstructured object writes it. */
function sortedJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(sortedJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${sortedJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The object as `kubectl apply` stores it: with its `last-applied-configuration` annotation. */
function asApplied(obj: KubeObject): KubeObject {
  const copy = structuredClone(obj);
  copy.metadata.annotations = { ...(copy.metadata.annotations ?? {}) };
  delete copy.metadata.annotations[LAST_APPLIED];
  const applied = `${sortedJson(copy)}\n`;
  copy.metadata.annotations[LAST_APPLIED] = applied;
  return copy;
}

/**
 * Applies the Namespace, ServiceAccounts and RBAC of the kustomization in `dir` (infra/k8s) to the emulator's
 * store, as `kubectl apply` would (through validation; create, or update when the object exists; with the
 * last-applied annotation, so a later `kubectl apply -k infra/k8s` finds them unchanged). Returns what it applied.
 */
export async function applyShippedRbac(store: MemoryStore, dir: string): Promise<KubeObject[]> {
  const objects = (await readKustomization(dir)).filter((o) => APPLIED_KINDS[o.kind!] !== undefined);
  // namespaces first, as kubectl orders them
  objects.sort((a, b) => Number(b.kind === 'Namespace') - Number(a.kind === 'Namespace'));
  for (const obj of objects) {
    const resource = APPLIED_KINDS[obj.kind!];
    const body = asApplied(obj);
    const current = store.peek(resource, obj.metadata.namespace ?? '', obj.metadata.name!);
    if (current) store.updateObject(resource, { ...body, metadata: { ...body.metadata, resourceVersion: current.metadata.resourceVersion } });
    else store.createObject(resource, body);
  }
  return objects;
}

/** A kubeconfig (YAML) for `server` with a bearer token, trusting `caCert` (PEM) when given. */
export function tokenKubeconfig(server: string, token: string, user: string, caCert?: string): string {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'local', server, ...(caCert ? { caData: Buffer.from(caCert).toString('base64') } : { skipTLSVerify: true }) }],
    users: [{ name: user, token }],
    contexts: [{ name: 'local', cluster: 'local', user, namespace: 'default' }],
    currentContext: 'local',
  });
  return stringifyYaml(JSON.parse(kc.exportConfig()));
}

/**
 * A ServiceAccount token from the API (`POST serviceaccounts/<name>/token`), as the kubelet requests the
 * projected token of a pod; `adminKubeconfig` authorizes the request.
 */
export async function requestServiceAccountToken(adminKubeconfig: KubeConfig, namespace: string, name: string, expirationSeconds: number): Promise<string> {
  const core = adminKubeconfig.makeApiClient(CoreV1Api);
  const out = await core.createNamespacedServiceAccountToken({
    namespace, name,
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { audiences: [], expirationSeconds } },
  });
  const token = out.status?.token;
  if (!token) throw new Error(`TokenRequest for ${namespace}/${name} returned no token`);
  return token;
}

/** The ServiceAccount the forwarder runs as: the one `infra/k8s` ships. */
export function forwarderServiceAccount(applied: KubeObject[]): { namespace: string; name: string } {
  const sa = applied.find((o) => o.kind === 'ServiceAccount');
  if (!sa) throw new Error('infra/k8s ships no ServiceAccount for the forwarder');
  return { namespace: sa.metadata.namespace ?? 'default', name: sa.metadata.name! };
}

/** `infra/k8s` under a project root. */
export const manifestsDir = (root: string): string => join(root, 'infra', 'k8s');
