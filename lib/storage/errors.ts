/**
 * Errors of the storage control plane clients, one named class per StorageOS API error family
 * (go-api `MapAPIError`, reference storageos.md §3.4). Every HTTP failure is a {@link StorageApiError}
 * carrying the status and the body's `error` text; transport failures (no response) are
 * {@link StorageTransportError}.
 *
 * @example
 * try {
 *   await storage.setExternalEndpoint(request);
 * } catch (err) {
 *   if (err instanceof StaleVersionError) {
 *     // re-read the volume and try again with its new version
 *   }
 * }
 */

/** Base of every error thrown by a storage client. */
export class StorageError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'StorageError';
  }
}

/** The API answered with a non-2xx status. */
export class StorageApiError extends StorageError {
  /** HTTP status. */
  readonly status: number;
  /** The `error` field of the response body (or the raw body / status text). */
  readonly apiMessage: string;
  /** `METHOD /path` of the failed request. */
  readonly operation: string;
  constructor(status: number, apiMessage: string, operation: string, options?: ErrorOptions) {
    super(`${operation}: ${status} ${apiMessage}`, options);
    this.name = 'StorageApiError';
    this.status = status;
    this.apiMessage = apiMessage;
    this.operation = operation;
  }
}

/** 400: the request is invalid (e.g. an alteration of reserved labels). */
export class BadRequestError extends StorageApiError {
  constructor(apiMessage: string, operation: string) {
    super(400, apiMessage, operation);
    this.name = 'BadRequestError';
  }
}

/** 401 (go-api `AuthenticationError`): bad credentials, or the token expired; log in again. */
export class UnauthorizedError extends StorageApiError {
  constructor(apiMessage: string, operation: string) {
    super(401, apiMessage, operation);
    this.name = 'UnauthorizedError';
  }
}

/** 403 (go-api `UnauthorisedError`): authenticated but not allowed. */
export class ForbiddenError extends StorageApiError {
  constructor(apiMessage: string, operation: string) {
    super(403, apiMessage, operation);
    this.name = 'ForbiddenError';
  }
}

/** 404: the object (or its namespace) does not exist. */
export class NotFoundError extends StorageApiError {
  constructor(apiMessage: string, operation: string) {
    super(404, apiMessage, operation);
    this.name = 'NotFoundError';
  }
}

/** 409: conflict (the object is in use, or already exists). */
export class ConflictError extends StorageApiError {
  constructor(apiMessage: string, operation: string) {
    super(409, apiMessage, operation);
    this.name = 'ConflictError';
  }
}

/** 409 on a create: an object of that name already exists. */
export class AlreadyExistsError extends ConflictError {
  constructor(apiMessage: string, operation: string) {
    super(apiMessage, operation);
    this.name = 'AlreadyExistsError';
  }
}

/** 412 (go-api `StaleWriteError`): the `version` sent is not current; fetch again, check, resubmit. */
export class StaleVersionError extends StorageApiError {
  constructor(apiMessage: string, operation: string) {
    super(412, apiMessage, operation);
    this.name = 'StaleVersionError';
  }
}

/** 422: the requested state transition is not valid. */
export class InvalidStateTransitionError extends StorageApiError {
  constructor(apiMessage: string, operation: string) {
    super(422, apiMessage, operation);
    this.name = 'InvalidStateTransitionError';
  }
}

/** 423: the object is locked. */
export class LockedError extends StorageApiError {
  constructor(apiMessage: string, operation: string) {
    super(423, apiMessage, operation);
    this.name = 'LockedError';
  }
}

/** 451: the licence does not allow the operation. */
export class LicenceError extends StorageApiError {
  constructor(apiMessage: string, operation: string) {
    super(451, apiMessage, operation);
    this.name = 'LicenceError';
  }
}

/** 5xx: the control plane failed (500 server error, 503 store error, ...). Retried with backoff. */
export class ServerError extends StorageApiError {
  constructor(status: number, apiMessage: string, operation: string) {
    super(status, apiMessage, operation);
    this.name = 'ServerError';
  }
}

/** No response: connection refused/reset, DNS failure, or the per-request timeout. Retried with backoff. */
export class StorageTransportError extends StorageError {
  /** `METHOD /path` of the failed request. */
  readonly operation: string;
  /** True when the per-request timeout fired. */
  readonly timedOut: boolean;
  constructor(operation: string, timedOut: boolean, options?: ErrorOptions) {
    const cause = options?.cause instanceof Error ? `: ${options.cause.message}` : '';
    super(`${operation}: ${timedOut ? 'request timed out' : 'transport error'}${cause}`, options);
    this.name = 'StorageTransportError';
    this.operation = operation;
    this.timedOut = timedOut;
  }
}

/** A namespace named by the caller does not exist (go-api `ErrNamespaceNotFound`). */
export class NamespaceNotFoundError extends NotFoundError {
  constructor(namespace: string, operation: string) {
    super(`namespace not found: ${namespace}`, operation);
    this.name = 'NamespaceNotFoundError';
  }
}

/** The retries of one call were used up; `cause` is the last error. */
export class RetriesExhaustedError extends StorageError {
  /** Attempts made. */
  readonly attempts: number;
  constructor(operation: string, attempts: number, cause: unknown) {
    const last = cause instanceof Error ? cause.message : String(cause);
    super(`${operation}: gave up after ${attempts} attempts: ${last}`, { cause });
    this.name = 'RetriesExhaustedError';
    this.attempts = attempts;
  }
}

/**
 * Map a non-2xx response to its named error (go-api `MapAPIError`). `apiMessage` is the body's `error`.
 * Any other 4xx is a plain {@link StorageApiError}.
 */
export function mapApiError(status: number, apiMessage: string, operation: string): StorageApiError {
  switch (status) {
    case 400:
      return new BadRequestError(apiMessage, operation);
    case 401:
      return new UnauthorizedError(apiMessage, operation);
    case 403:
      return new ForbiddenError(apiMessage, operation);
    case 404:
      return new NotFoundError(apiMessage, operation);
    case 409:
      return /already exists/i.test(apiMessage)
        ? new AlreadyExistsError(apiMessage, operation)
        : new ConflictError(apiMessage, operation);
    case 412:
      return new StaleVersionError(apiMessage, operation);
    case 422:
      return new InvalidStateTransitionError(apiMessage, operation);
    case 423:
      return new LockedError(apiMessage, operation);
    case 451:
      return new LicenceError(apiMessage, operation);
    default:
      return status >= 500 ? new ServerError(status, apiMessage, operation) : new StorageApiError(status, apiMessage, operation);
  }
}

/**
 * True for failures worth retrying after a backoff: 5xx, 429, transport errors, and a
 * {@link RetriesExhaustedError} over one of those (the caller may retry the whole operation later).
 */
export function isRetryable(err: unknown): boolean {
  if (err instanceof ServerError || err instanceof StorageTransportError) return true;
  if (err instanceof RetriesExhaustedError) return isRetryable(err.cause);
  return err instanceof StorageApiError && err.status === 429;
}
