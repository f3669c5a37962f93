/**
 * Lease (`pkg/registry/coordination/lease/strategy.go`, `ValidateLease*`): RV mandatory on update,
 * create on PUT allowed.
 */
import type { FieldError, KindSpec, KubeObject } from '../types.ts';
import { expectObject } from './common/decode.ts';
import { forbidden, invalid, notSupported } from './common/field.ts';
import { isDNS1123Subdomain } from './common/names.ts';
import { objectMetaFields } from './common/selectable.ts';
import { makeStrategy, STANDARD_VERBS } from './common/strategy.ts';
import { AGE_COLUMN, age, column, NAME_COLUMN } from './common/table.ts';

const STRATEGIES = ['OldestEmulationVersion'];

/** `ValidateLeaseSpec`. */
export function validateLeaseSpec(lease: KubeObject): FieldError[] {
  const errs: FieldError[] = [];
  const spec = lease.spec ?? {};
  if (spec.leaseDurationSeconds !== undefined && spec.leaseDurationSeconds !== null && spec.leaseDurationSeconds <= 0) {
    errs.push(invalid('spec.leaseDurationSeconds', spec.leaseDurationSeconds, 'must be greater than 0'));
  }
  if (spec.leaseTransitions !== undefined && spec.leaseTransitions !== null && spec.leaseTransitions < 0) {
    errs.push(invalid('spec.leaseTransitions', spec.leaseTransitions, 'must be greater than or equal to 0'));
  }
  if (spec.strategy && !STRATEGIES.includes(spec.strategy)) errs.push(notSupported('spec.strategy', spec.strategy, STRATEGIES));
  if (spec.preferredHolder && !spec.strategy) errs.push(forbidden('spec.preferredHolder', 'may only be specified if `strategy` is defined'));
  return errs;
}

/** Lease discovery facts, strategy and printer. */
export const leases: KindSpec = {
  group: 'coordination.k8s.io',
  version: 'v1',
  kind: 'Lease',
  plural: 'leases',
  singular: 'lease',
  namespaced: true,
  shortNames: [],
  subresources: [],
  verbs: STANDARD_VERBS,
  returnDeletedObject: false,
  allowUnconditionalUpdate: false,
  allowCreateOnUpdate: true,
  selectableFields: (lease) => objectMetaFields(lease, true),
  table: {
    columns: [
      NAME_COLUMN,
      column('Holder', 'string', 'The holder of the lease'),
      AGE_COLUMN,
    ],
    row: (lease, now) => [lease.metadata.name, lease.spec?.holderIdentity ?? '', age(lease, now)],
  },
  strategy: makeStrategy({
    namespaced: true,
    nameRule: isDNS1123Subdomain,
    decode: (lease) => expectObject('Lease', lease.spec, 'Lease.spec', 'v1.LeaseSpec'),
    validate: validateLeaseSpec,
  }),
};
