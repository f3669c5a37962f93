/**
 * Errors of the provisioner, as named classes. Upstream equivalents in brackets.
 */

/**
 * Returned (thrown) by `Provision` or `Delete` to say "not mine: another provisioner serving the same
 * class will handle it" [`controller.IgnoredError`]. Stops retries; a delete counts as a success.
 */
export class IgnoredError extends Error {
  readonly reason: string;
  constructor(reason: string) {
    super(`ignored because ${reason}`);
    this.name = 'IgnoredError';
    this.reason = reason;
  }
}

/**
 * The request can never succeed as it is (a bad class parameter, a size the backend refuses): the
 * counterpart of a CSI `InvalidArgument` status. Retries of the claim are delayed for the slow-retry
 * period (upstream's `slowSet`, 5 min) instead of following the normal backoff.
 */
export class InfeasibleError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'InfeasibleError';
  }
}

/**
 * The claim is in its slow-retry window after an {@link InfeasibleError} [`util.DelayRetryError`].
 * No event and no metric; the runtime backs off as for any error.
 */
export class DelayRetryError extends Error {
  constructor(claimUid: string) {
    super(`skipping volume provisioning for pvc ${claimUid}, because provisioning previously failed with infeasible error`);
    this.name = 'DelayRetryError';
  }
}

/**
 * Provisioning of this claim stops without a retry [`errStopProvision`]: the PV already exists, the
 * provisioner said Ignored, block is unsupported, the class names another provisioner, or the claim was
 * rescheduled. Counted as a failed provision in the metrics, as upstream does.
 */
export class StopProvisionError extends Error {
  constructor(message = 'stop provisioning') {
    super(message);
    this.name = 'StopProvisionError';
  }
}

/** The claim's StorageClass is not (yet) in the cache: retried, so a class created later works. */
export class StorageClassNotFoundError extends Error {
  readonly className: string;
  constructor(className: string) {
    super(`storageClass "${className}" not found`);
    this.name = 'StorageClassNotFoundError';
    this.className = className;
  }
}

/** An option read from the environment has an invalid value. */
export class InvalidOptionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidOptionError';
  }
}
