/**
 * The Kubernetes client for a record's cluster, cached per cluster per container.
 *
 * Where the configuration comes from:
 * - `CLUSTERS` (JSON, in AWS): per cluster id either `{ "eks": { "name", "region"?, "endpoint"?, "caData"? } }`
 *   (endpoint and CA from the entry or `eks:DescribeCluster`; a bearer token from {@link createEksToken},
 *   remade before it expires) or `{ "kubeconfigSecretArn": "…" }` (a kubeconfig in Secrets Manager) or
 *   `{ "kubeconfig": "/path" }`.
 * - otherwise `KUBECONFIG` (locally): one file serves every cluster id.
 *
 * Every API client made here spends the cluster's shared request budget ({@link ApiBudget}) before each
 * request and turns a 429 into a cluster-wide pause for its Retry-After.
 */
import { readFileSync } from 'node:fs';
import { DescribeClusterCommand, EKSClient } from '@aws-sdk/client-eks';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import {
  createConfiguration,
  KubeConfig,
  ServerConfiguration,
  type ApiConstructor,
  type ApiType,
  type Middleware,
  type RequestContext,
  type ResponseContext,
} from '@kubernetes/client-node';
import { z } from 'zod';
import type { ApiBudget } from '../state/bucket.ts';
import { sharedConnections } from './connections.ts';
import { DISPATCHER_HTTP } from './http.ts';
import { createEksToken, type AwsCredentials } from './eks-token.ts';
import { sdkClientConfig } from '../runtime/sdk-client.ts';

const ClusterEntrySchema = z.union([
  z.object({
    eks: z.object({
      name: z.string().min(1),
      region: z.string().optional(),
      endpoint: z.string().url().optional(),
      caData: z.string().optional(),
    }),
  }),
  z.object({ kubeconfigSecretArn: z.string().min(1), context: z.string().optional() }),
  z.object({ kubeconfig: z.string().min(1), context: z.string().optional() }),
]);
/** One cluster's entry in `CLUSTERS`. */
export type ClusterEntry = z.infer<typeof ClusterEntrySchema>;
const ClustersSchema = z.record(z.string(), ClusterEntrySchema);

/** `CLUSTERS` is not valid, or names no entry for a cluster. */
export class ClusterConfigError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ClusterConfigError';
  }
}

/**
 * `CLUSTERS` names no entry for the cluster a message is about. Not transient: the runtime drops the message
 * (a log line and an `UnknownCluster` metric with a `cluster` dimension) instead of retrying it.
 */
export class UnknownClusterError extends ClusterConfigError {
  readonly cluster: string;
  constructor(cluster: string) {
    super(`CLUSTERS has no entry for cluster ${cluster}`);
    this.name = 'UnknownClusterError';
    this.cluster = cluster;
  }
}

/** Parses the `CLUSTERS` JSON. */
export function parseClusters(json: string): Record<string, ClusterEntry> {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (error) {
    throw new ClusterConfigError('CLUSTERS is not JSON', { cause: error });
  }
  const parsed = ClustersSchema.safeParse(raw);
  if (!parsed.success) throw new ClusterConfigError(`CLUSTERS is invalid: ${parsed.error.message}`);
  return parsed.data;
}

/**
 * The cluster ids a scheduled run that names none covers (the resync, the label-sync resync, the
 * shared-volume poll): the keys of `CLUSTERS` (validated as {@link parseClusters} does), else `CLUSTER_ID`,
 * else `default` (serverless.yml's `clusterId` default).
 */
export function clusterIdsFromEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  const json = env.CLUSTERS;
  if (json !== undefined && json.trim() !== '') {
    const ids = Object.keys(parseClusters(json));
    if (ids.length > 0) return ids;
  }
  return [env.CLUSTER_ID || 'default'];
}

export interface KubeClientsOptions {
  env?: NodeJS.ProcessEnv;
  /** The request budget for a cluster (omit for none). */
  budget?: (cluster: string) => ApiBudget | undefined;
  eks?: EKSClient;
  secrets?: SecretsManagerClient;
  /** Credentials for EKS tokens (default: the SDK's default chain, via the EKS client). */
  credentials?: () => Promise<AwsCredentials>;
  now?: () => number;
}

interface CachedConfig {
  kubeConfig: KubeConfig;
  /** Epoch ms; Infinity for static configurations. */
  expiresAt: number;
}

/** Kubernetes clients per cluster, built once per container and refreshed when their token ages. */
export class KubeClients {
  readonly #env: NodeJS.ProcessEnv;
  readonly #budget: ((cluster: string) => ApiBudget | undefined) | undefined;
  readonly #now: () => number;
  readonly #configs = new Map<string, Promise<CachedConfig>>();
  readonly #apis = new Map<string, { api: unknown; expiresAt: number }>();
  #clusters: Record<string, ClusterEntry> | undefined;
  #eks: EKSClient | undefined;
  #secrets: SecretsManagerClient | undefined;
  readonly #credentials: (() => Promise<AwsCredentials>) | undefined;

  constructor(options: KubeClientsOptions = {}) {
    this.#env = options.env ?? process.env;
    this.#budget = options.budget;
    this.#now = options.now ?? Date.now;
    this.#eks = options.eks;
    this.#secrets = options.secrets;
    this.#credentials = options.credentials;
  }

  /** The KubeConfig for `cluster` (cached; EKS tokens are remade before they expire). */
  async kubeConfig(cluster: string): Promise<KubeConfig> {
    let cached = this.#configs.get(cluster);
    if (cached) {
      const settled = await cached.catch(() => undefined);
      if (!settled || settled.expiresAt <= this.#now()) cached = undefined;
    }
    if (!cached) {
      cached = this.#load(cluster);
      this.#configs.set(cluster, cached);
      cached.catch(() => this.#configs.delete(cluster));
    }
    return (await cached).kubeConfig;
  }

  /** An API client of `apiClass` for `cluster`, spending the cluster's request budget. */
  async api<T extends ApiType>(cluster: string, apiClass: ApiConstructor<T>): Promise<T> {
    const kubeConfig = await this.kubeConfig(cluster);
    const cacheKey = `${cluster}\u0000${apiClass.name}`;
    const hit = this.#apis.get(cacheKey);
    const expiresAt = (await this.#configs.get(cluster))?.expiresAt ?? Infinity;
    if (hit && hit.expiresAt === expiresAt) return hit.api as T;
    const api = makeBudgetedApiClient(kubeConfig, apiClass, this.#budget?.(cluster));
    this.#apis.set(cacheKey, { api, expiresAt });
    return api;
  }

  /** Drops cached configurations (e.g. after a 401 from an expired credential). */
  invalidate(cluster?: string): void {
    if (cluster === undefined) {
      this.#configs.clear();
      this.#apis.clear();
      return;
    }
    this.#configs.delete(cluster);
    for (const key of this.#apis.keys()) if (key.startsWith(`${cluster}\u0000`)) this.#apis.delete(key);
  }

  #clusterEntry(cluster: string): ClusterEntry | undefined {
    const json = this.#env.CLUSTERS;
    if (!json) return undefined;
    this.#clusters ??= parseClusters(json);
    const entry = this.#clusters[cluster];
    if (!entry) throw new UnknownClusterError(cluster);
    return entry;
  }

  async #load(cluster: string): Promise<CachedConfig> {
    const entry = this.#clusterEntry(cluster);
    if (!entry) {
      const file = this.#env.KUBECONFIG;
      if (!file) throw new ClusterConfigError(`no CLUSTERS and no KUBECONFIG: cannot reach cluster ${cluster}`);
      return { kubeConfig: loadKubeconfigFile(file), expiresAt: Infinity };
    }
    if ('kubeconfig' in entry) {
      const kubeConfig = loadKubeconfigFile(entry.kubeconfig);
      if (entry.context) kubeConfig.setCurrentContext(entry.context);
      return { kubeConfig, expiresAt: Infinity };
    }
    if ('kubeconfigSecretArn' in entry) {
      this.#secrets ??= new SecretsManagerClient(sdkClientConfig());
      const secret = await this.#secrets.send(new GetSecretValueCommand({ SecretId: entry.kubeconfigSecretArn }));
      if (!secret.SecretString) throw new ClusterConfigError(`secret ${entry.kubeconfigSecretArn} holds no kubeconfig`);
      const kubeConfig = loadKubeconfig(secret.SecretString, `the kubeconfig in secret ${entry.kubeconfigSecretArn}`);
      if (entry.context) kubeConfig.setCurrentContext(entry.context);
      // Re-read now and then so a rotated credential is picked up.
      return { kubeConfig, expiresAt: this.#now() + 15 * 60 * 1000 };
    }
    return this.#loadEks(cluster, entry.eks);
  }

  async #loadEks(cluster: string, eks: { name: string; region?: string; endpoint?: string; caData?: string }): Promise<CachedConfig> {
    const region = eks.region ?? this.#env.AWS_REGION ?? this.#env.AWS_DEFAULT_REGION;
    if (!region) throw new ClusterConfigError(`no region for EKS cluster ${eks.name}`);
    this.#eks ??= new EKSClient({ ...sdkClientConfig(), region });
    let { endpoint, caData } = eks;
    if (!endpoint || !caData) {
      const { cluster: described } = await this.#eks.send(new DescribeClusterCommand({ name: eks.name }));
      endpoint ??= described?.endpoint;
      caData ??= described?.certificateAuthority?.data;
      if (!endpoint || !caData) throw new ClusterConfigError(`EKS cluster ${eks.name} has no endpoint or CA yet`);
    }
    const eksClient = this.#eks;
    const credentials = this.#credentials ?? (() => eksClient.config.credentials());
    const { token, expiresAt } = await createEksToken({
      clusterName: eks.name,
      region,
      credentials: await credentials(),
      signingDate: new Date(this.#now()),
    });
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: cluster, server: endpoint, caData, skipTLSVerify: false }],
      users: [{ name: 'claimflow', token }],
      contexts: [{ name: cluster, cluster, user: 'claimflow' }],
      currentContext: cluster,
    });
    return { kubeConfig, expiresAt };
  }
}

/** Values a kubeconfig holds that must never reach a log line: tokens, passwords, keys, certificates. */
const SECRET_FIELD = /\b(token|password|client-key-data|client-certificate-data|id-token|refresh-token|access-token|secret)\b["']?\s*[:=]\s*["']?([^\s"',}]+)/gi;

/**
 * Why a kubeconfig did not load, without its content: a YAML parser's message quotes the lines around the
 * error (a token among them), so only its reason and position are kept, and any value of a secret field the
 * text holds is redacted from what remains. No `cause`: a logger that prints causes would print the quote.
 */
export function kubeconfigErrorMessage(error: unknown, text: string | undefined): string {
  const e = error as { name?: string; reason?: string; message?: string; mark?: { line?: number; column?: number } };
  let detail = e?.mark ? `${e.reason ?? 'invalid YAML'} at line ${(e.mark.line ?? 0) + 1}, column ${(e.mark.column ?? 0) + 1}` : String(e?.message ?? error).split('\n')[0];
  for (const m of (text ?? '').matchAll(SECRET_FIELD)) if (m[2].length >= 4) detail = detail.split(m[2]).join('[REDACTED]');
  return detail;
}

/** Parses a kubeconfig; a failure is a {@link ClusterConfigError} that names `source` and never quotes the text. */
export function loadKubeconfig(text: string, source: string): KubeConfig {
  const kubeConfig = new KubeConfig();
  try {
    kubeConfig.loadFromString(text);
  } catch (error) {
    throw new ClusterConfigError(`${source} is not a valid kubeconfig: ${kubeconfigErrorMessage(error, text)}`);
  }
  return kubeConfig;
}

/** `KubeConfig.loadFromFile` (relative paths resolved against the file's directory), failing as {@link loadKubeconfig}. */
function loadKubeconfigFile(file: string): KubeConfig {
  const kubeConfig = new KubeConfig();
  try {
    kubeConfig.loadFromFile(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code) throw new ClusterConfigError(`cannot read kubeconfig ${file}: ${code}`);
    let text: string | undefined;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      text = undefined;
    }
    throw new ClusterConfigError(`kubeconfig ${file} is not a valid kubeconfig: ${kubeconfigErrorMessage(error, text)}`);
  }
  return kubeConfig;
}

/**
 * Like `KubeConfig.makeApiClient`, plus a middleware that spends the request budget before each request and
 * pauses the cluster on a 429 (the request itself still fails with a 429 ApiException; callers back off).
 */
export function makeBudgetedApiClient<T extends ApiType>(kubeConfig: KubeConfig, apiClass: ApiConstructor<T>, budget?: ApiBudget): T {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new ClusterConfigError('the kubeconfig has no current cluster');
  const middleware: Middleware[] = budget ? [budgetMiddleware(budget)] : [];
  return new apiClass(
    createConfiguration({
      baseServer: new ServerConfiguration(cluster.server, {}),
      authMethods: { default: sharedConnections(kubeConfig) },
      httpApi: DISPATCHER_HTTP,
      promiseMiddleware: middleware,
    }),
  );
}

/** The request-budget middleware on its own. */
export function budgetMiddleware(budget: ApiBudget): Middleware {
  return {
    async pre(context: RequestContext): Promise<RequestContext> {
      await budget.take();
      return context;
    },
    async post(context: ResponseContext): Promise<ResponseContext> {
      if (context.httpStatusCode === 429) {
        const header = context.headers['retry-after'] ?? context.headers['Retry-After'];
        const seconds = Number(header);
        await budget.pause(Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 1000);
      }
      return context;
    },
  };
}
