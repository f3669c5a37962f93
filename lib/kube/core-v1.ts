/**
 * A cluster's core/v1 API client (the generated `CoreV1Api`), spending the cluster's request budget as every
 * client of {@link KubeClients.api} does.
 *
 * It lives apart from lib/kube/client.ts on purpose: whatever refers to `CoreV1Api` brings the whole
 * generated client of @kubernetes/client-node into its function's bundle (every API group and model: 3.5 MB
 * of the binder's 7.9 before it was left out), and only the shared-volume controller uses it; the others
 * speak JSON through lib/kube/json-api.ts. See infra/build/bundle.ts.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import type { KubeClients } from './client.ts';

/** `cluster`'s core/v1 client, made once per cluster and configuration by `clients`. */
export function coreV1(clients: Pick<KubeClients, 'api'>, cluster: string): Promise<CoreV1Api> {
  return clients.api(cluster, CoreV1Api);
}
