/** Named errors of the shared volume controller. */

/** The new Service never got a ClusterIP within the create wait (upstream: "timed out waiting for the condition"). */
export class ClusterIPTimeoutError extends Error {
  constructor(namespace: string, name: string, waitedMs: number) {
    super(`failed to get service resource after create: ${namespace}/${name} has no clusterIP after ${waitedMs} ms`);
    this.name = 'ClusterIPTimeoutError';
  }
}

/** A read of the Service or Endpoints failed with something other than NotFound. */
export class EnsureServiceError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'EnsureServiceError';
  }
}

/** Some volumes of a request (or the list) failed; the runtime retries the request with backoff. */
export class SharedVolumeReconcileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SharedVolumeReconcileError';
  }
}

/** Another invocation holds the volume's lease: this one does not write (the poll skips, the event path requeues). */
export class VolumeBusyError extends Error {
  readonly volumeId: string;
  constructor(volumeId: string) {
    super(`shared volume ${volumeId} is being reconciled by another invocation`);
    this.name = 'VolumeBusyError';
    this.volumeId = volumeId;
  }
}
