/**
 * The one error the embedded control plane's handlers throw: an HTTP status and the text that goes
 * into the StorageOS error body `{"error": "<message>"}`.
 */
export class ApiFailure extends Error {
  /** HTTP status to answer with. */
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.name = 'ApiFailure';
    this.status = status;
  }
}
