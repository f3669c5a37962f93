/**
 * `ensureService` (reference storageos.md §1.7, §1.8): make the shared volume's Service and Endpoints match,
 * and return the mount endpoint `<ClusterIP>:2049`. The decisions are those of `objects.ts`; this file does
 * the I/O against the Kubernetes API and records the two upstream events.
 *
 * Unlike upstream, reads go to the API server, not an informer cache, so a create's answer already carries
 * the allocated ClusterIP; the create-then-poll wait only runs when it does not.
 */
import type { CoreV1Api, V1Endpoints, V1OwnerReference, V1Service } from '@kubernetes/client-node';
import { isNotFound } from '../kube/errors.ts';
import type { EventRecorder } from '../kube/recorder.ts';
import type { SharedVolume } from '../storage/types.ts';
import { EVENTS } from './constants.ts';
import { ClusterIPTimeoutError, EnsureServiceError } from './errors.ts';
import { desiredEndpoints, desiredService, endpointsIsEqual, endpointsUpdate, frontend, serviceIsEqual, serviceUpdate } from './objects.ts';
import { pollUntil } from './wait.ts';

/** What ensureService needs. */
export interface EnsureServiceDeps {
  core: CoreV1Api;
  recorder: EventRecorder;
  /** `-k8s-create-poll-interval` and `-k8s-create-wait-duration`. */
  createPollIntervalMs: number;
  createWaitMs: number;
  signal?: AbortSignal;
}

/** What ensureService did, for logs, metrics and tests. */
export interface EnsureServiceResult {
  /** `frontend(svc)`: the endpoint to publish. */
  endpoint: string;
  serviceCreated: boolean;
  serviceUpdated: boolean;
  endpointsCreated: boolean;
  endpointsUpdated: boolean;
}

const withKind = (service: V1Service): V1Service => ({ apiVersion: 'v1', kind: 'Service', ...service });

/**
 * Service first, then Endpoints. Creates what is missing, updates what is unequal (keeping the fetched
 * object's resourceVersion and ClusterIP), records Normal/Created after a create and Warning/Updated after an
 * Endpoints update, and returns the endpoint to publish.
 */
export async function ensureService(deps: EnsureServiceDeps, volume: SharedVolume, owner: V1OwnerReference): Promise<EnsureServiceResult> {
  const { core, recorder } = deps;
  const name = volume.serviceName;
  const namespace = volume.namespace;
  const result: EnsureServiceResult = { endpoint: '', serviceCreated: false, serviceUpdated: false, endpointsCreated: false, endpointsUpdated: false };

  let service: V1Service;
  try {
    service = await core.readNamespacedService({ name, namespace });
  } catch (error) {
    if (!isNotFound(error)) throw new EnsureServiceError(`failed to get service, aborting reconcile: ${namespace}/${name}`, { cause: error });
    service = await core.createNamespacedService({ namespace, body: desiredService(volume, owner) });
    if (!service.spec?.clusterIP) service = await waitForClusterIP(deps, namespace, name);
    result.serviceCreated = true;
    await recorder.eventf(withKind(service), EVENTS.created.type, EVENTS.created.reason, EVENTS.created.format, namespace, name);
  }

  if (!serviceIsEqual(volume, service)) {
    service = await core.replaceNamespacedService({ name, namespace, body: serviceUpdate(volume, service) });
    result.serviceUpdated = true;
  }

  let endpoints: V1Endpoints;
  try {
    endpoints = await core.readNamespacedEndpoints({ name, namespace });
  } catch (error) {
    if (!isNotFound(error)) throw new EnsureServiceError(`failed to get endpoint, aborting reconcile: ${namespace}/${name}`, { cause: error });
    endpoints = await core.createNamespacedEndpoints({ namespace, body: desiredEndpoints(volume) });
    result.endpointsCreated = true;
  }

  if (!endpointsIsEqual(volume, endpoints)) {
    await core.replaceNamespacedEndpoints({ name, namespace, body: endpointsUpdate(volume, endpoints) });
    result.endpointsUpdated = true;
    await recorder.eventf(withKind(service), EVENTS.updated.type, EVENTS.updated.reason, EVENTS.updated.format, namespace, name);
  }

  result.endpoint = frontend(service);
  return result;
}

/** `waitForClusterIP`: Get the Service every interval until it has a ClusterIP (NotFound = not yet). */
async function waitForClusterIP(deps: EnsureServiceDeps, namespace: string, name: string): Promise<V1Service> {
  const found = await pollUntil(deps.createPollIntervalMs, deps.createWaitMs, deps.signal, async () => {
    try {
      const service = await deps.core.readNamespacedService({ name, namespace });
      return service.spec?.clusterIP ? service : undefined;
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  });
  if (found === undefined) throw new ClusterIPTimeoutError(namespace, name, deps.createWaitMs);
  return found;
}
