/**
 * `ensureService` (reference storageos.md §1.7, §1.8): make the shared volume's Service and Endpoints match,
 * and return the mount endpoint `<ClusterIP>:2049`. The decisions are those of `objects.ts`; this file does
 * the I/O against the Kubernetes API and records the two upstream events.
 *
 * Reads go through {@link ObjectReads}: the object cache first (as upstream reads its informer cache), a GET
 * on a miss. A Service or Endpoints the cache answered is absent is created without a GET (as upstream
 * creates on its informer's NotFound); a create that meets AlreadyExists reads the object from the API and
 * goes on with it. An update computed from a cached object that was behind gets a 409 Conflict; the object is then
 * read from the API and the decision made again, once. What an update returns is written back to the cache;
 * what a create returns is left to the forwarder's watch, which caches every ADDED (as upstream's informer
 * learns of its own creations, and as the provisioner leaves its PVs): both writing it made one of the two
 * conditional puts fail. A create's answer carries the allocated ClusterIP, so the create-then-wait poll runs
 * only when it does not. Every call carries the step's abort signal.
 */
import type { CoreV1Api, V1OwnerReference, V1Service } from '@kubernetes/client-node';
import { isAlreadyExists, isConflict } from '../kube/errors.ts';
import type { EventRecorder } from '../kube/recorder.ts';
import type { SharedVolume } from '../storage/types.ts';
import { EVENTS } from './constants.ts';
import { kubeCallOptions } from './deadline.ts';
import { ClusterIPTimeoutError, EnsureServiceError } from './errors.ts';
import { desiredEndpoints, desiredService, endpointsIsEqual, endpointsUpdate, frontend, serviceIsEqual, serviceUpdate } from './objects.ts';
import type { ObjectReads } from './reads.ts';
import { pollUntil } from './wait.ts';

/** What ensureService needs. */
export interface EnsureServiceDeps {
  /** Writes. */
  core: CoreV1Api;
  /** Reads: object cache, GET on a miss. */
  reads: ObjectReads;
  recorder: EventRecorder;
  /** `-k8s-create-poll-interval` and `-k8s-create-wait-duration`. */
  createPollIntervalMs: number;
  createWaitMs: number;
  signal?: AbortSignal;
  /** Called before every create and update (the volume's lease: throws when another invocation holds it). */
  beforeWrite?: () => Promise<void>;
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
  const { core, reads, recorder } = deps;
  const name = volume.serviceName;
  const namespace = volume.namespace;
  const options = kubeCallOptions(deps.signal);
  const beforeWrite = deps.beforeWrite ?? (async () => {});
  const result: EnsureServiceResult = { endpoint: '', serviceCreated: false, serviceUpdated: false, endpointsCreated: false, endpointsUpdated: false };

  const serviceMessage = `failed to get service, aborting reconcile: ${namespace}/${name}`;
  let service = await readOrAbort(() => reads.service(namespace, name, { trustAbsence: true }), serviceMessage);
  if (service === undefined) {
    await beforeWrite();
    const created = await createOrRead({
      create: () => core.createNamespacedService({ namespace, body: desiredService(volume, owner) }, options),
      reread: () => readOrAbort(() => reads.service(namespace, name, { fresh: true }), serviceMessage),
      exists: () => reads.noteExistsUncached('Service', namespace, name),
      gone: `service ${namespace}/${name} already existed and was deleted before it could be read`,
    });
    service = created.object;
    if (created.created) {
      reads.created();
      if (!service.spec?.clusterIP) service = await waitForClusterIP(deps, namespace, name);
      result.serviceCreated = true;
      await recorder.eventf(withKind(service), EVENTS.created.type, EVENTS.created.reason, EVENTS.created.format, namespace, name);
    }
  }

  if (!serviceIsEqual(volume, service)) {
    await beforeWrite();
    const updated = await updateFresh(service, {
      isEqual: (s) => serviceIsEqual(volume, s),
      replace: (s) => core.replaceNamespacedService({ name, namespace, body: serviceUpdate(volume, s) }, options),
      reread: () => readOrAbort(() => reads.service(namespace, name, { fresh: true }), `failed to get service, aborting reconcile: ${namespace}/${name}`),
      gone: `service ${namespace}/${name} was deleted during the update`,
    });
    service = updated.object;
    if (updated.written) {
      await reads.remember('Service', service);
      result.serviceUpdated = true;
    }
  }

  const endpointsMessage = `failed to get endpoint, aborting reconcile: ${namespace}/${name}`;
  let endpoints = await readOrAbort(() => reads.endpoints(namespace, name, { trustAbsence: true }), endpointsMessage);
  if (endpoints === undefined) {
    await beforeWrite();
    const created = await createOrRead({
      create: () => core.createNamespacedEndpoints({ namespace, body: desiredEndpoints(volume) }, options),
      reread: () => readOrAbort(() => reads.endpoints(namespace, name, { fresh: true }), endpointsMessage),
      exists: () => reads.noteExistsUncached('Endpoints', namespace, name),
      gone: `endpoints ${namespace}/${name} already existed and were deleted before they could be read`,
    });
    endpoints = created.object;
    if (created.created) {
      reads.created();
      result.endpointsCreated = true;
    }
  }

  if (!endpointsIsEqual(volume, endpoints)) {
    await beforeWrite();
    const updated = await updateFresh(endpoints, {
      isEqual: (e) => endpointsIsEqual(volume, e),
      replace: (e) => core.replaceNamespacedEndpoints({ name, namespace, body: endpointsUpdate(volume, e) }, options),
      reread: () => readOrAbort(() => reads.endpoints(namespace, name, { fresh: true }), `failed to get endpoint, aborting reconcile: ${namespace}/${name}`),
      gone: `endpoints ${namespace}/${name} were deleted during the update`,
    });
    if (updated.written) {
      await reads.remember('Endpoints', updated.object);
      result.endpointsUpdated = true;
      await recorder.eventf(withKind(service), EVENTS.updated.type, EVENTS.updated.reason, EVENTS.updated.format, namespace, name);
    }
  }

  result.endpoint = frontend(service);
  return result;
}

/** A read; any error is upstream's "aborting reconcile" error (NotFound is `undefined`, not an error). */
async function readOrAbort<T>(read: () => Promise<T | undefined>, message: string): Promise<T | undefined> {
  try {
    return await read();
  } catch (error) {
    throw new EnsureServiceError(message, { cause: error });
  }
}

/**
 * Create an object the cache answered is absent; when it exists after all (AlreadyExists: the cache was
 * behind, another writer was first, or the cache never holds it — its volume-id label taken off) read it from
 * the API and go on with it, as a read that had found it would have (no Created event), and read it with GETs
 * from then on in this container. Gone again by then is an error: the next pass creates it.
 */
async function createOrRead<T>(how: { create: () => Promise<T>; reread: () => Promise<T | undefined>; exists: () => void; gone: string }): Promise<{ object: T; created: boolean }> {
  try {
    return { object: await how.create(), created: true };
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
  }
  how.exists();
  const existing = await how.reread();
  if (existing === undefined) throw new EnsureServiceError(how.gone);
  return { object: existing, created: false };
}

/**
 * Replace `current` (computed from what was read); on a 409 Conflict (what was read was behind, e.g. the
 * cache) read it from the API and decide again, once: no write when it is now equal; a deletion in between is
 * an error (the next pass recreates it).
 */
async function updateFresh<T>(
  current: T,
  how: { isEqual: (o: T) => boolean; replace: (o: T) => Promise<T>; reread: () => Promise<T | undefined>; gone: string },
): Promise<{ object: T; written: boolean }> {
  try {
    return { object: await how.replace(current), written: true };
  } catch (error) {
    if (!isConflict(error)) throw error;
  }
  const fresh = await how.reread();
  if (fresh === undefined) throw new EnsureServiceError(how.gone);
  if (how.isEqual(fresh)) return { object: fresh, written: false };
  return { object: await how.replace(fresh), written: true };
}

/** `waitForClusterIP`: Get the Service every interval until it has a ClusterIP (NotFound = not yet). */
async function waitForClusterIP(deps: EnsureServiceDeps, namespace: string, name: string): Promise<V1Service> {
  const found = await pollUntil(deps.createPollIntervalMs, deps.createWaitMs, deps.signal, async () => {
    const service = await deps.reads.service(namespace, name, { fresh: true });
    return service?.spec?.clusterIP ? service : undefined;
  });
  if (found === undefined) throw new ClusterIPTimeoutError(namespace, name, deps.createWaitMs);
  return found;
}
