/** Errors a binder sync returns (upstream's `return fmt.Errorf(...)` cases). */

/** A sync that cannot finish as things are; retried with backoff (upstream: next sync). */
export class BinderSyncError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'BinderSyncError';
  }
}

/** The claim's StorageClass has no volumeBindingMode (`VolumeBindingMode not set for StorageClass "<sc>"`). */
export class BindingModeNotSetError extends BinderSyncError {
  constructor(message: string) {
    super(message);
    this.name = 'BindingModeNotSetError';
  }
}

/** A controller-bound claim whose volume is claimed by another claim (`invalid binding of claim ...`). */
export class InvalidBindingError extends BinderSyncError {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidBindingError';
  }
}

/** The claim's label selector cannot be parsed (`error creating internal label selector for claim ...`). */
export class InvalidSelectorError extends BinderSyncError {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidSelectorError';
  }
}

/** A volume without `spec.capacity.storage` cannot complete a claim's status. */
export class VolumeWithoutCapacityError extends BinderSyncError {
  constructor(volumeName: string) {
    super(`PersistentVolume "${volumeName}" is without a storage capacity`);
    this.name = 'VolumeWithoutCapacityError';
  }
}
