/** Errors the forwarder names, so callers branch on the class instead of on message text. */

/** A non-2xx answer of the Kubernetes API (or an ERROR event in a watch stream). */
export class KubeApiError extends Error {
  readonly code: number;
  readonly reason: string;
  constructor(code: number, reason: string, message: string) {
    super(message);
    this.name = 'KubeApiError';
    this.code = code;
    this.reason = reason;
  }
}

/** 410 Gone / Expired: the resourceVersion (or continue token) is too old; the reflector must relist. */
export class ResourceExpiredError extends KubeApiError {
  constructor(message: string) {
    super(410, 'Expired', message);
    this.name = 'ResourceExpiredError';
  }
}

/** No event, bookmark or byte arrived on a watch for longer than the silence timeout. */
export class WatchSilenceError extends Error {
  constructor(ms: number) {
    super(`no watch event for ${ms} ms`);
    this.name = 'WatchSilenceError';
  }
}

/** The forwarder's configuration is incomplete or malformed. */
export class ForwarderConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ForwarderConfigError';
  }
}
