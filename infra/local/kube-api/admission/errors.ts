/**
 * Errors of the admission half of the emulator.
 */

/** Thrown for an unusable `serviceCidr` option. */
export class ServiceCidrError extends Error {
  constructor(cidr: string) {
    super(`invalid service CIDR ${JSON.stringify(cidr)}: an IPv4 CIDR with a prefix of at most /30 is required`);
    this.name = 'ServiceCidrError';
  }
}

/** An allocation failure (`ipallocator.ErrAllocated`, `ErrNotInRange`, `ErrFull`); becomes a 422 or 500. */
export class AllocationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AllocationError';
  }
}
