/**
 * ServiceAccount (`pkg/registry/core/serviceaccount`, `ValidateServiceAccount`). Its `token` subresource
 * (TokenRequest) is served by the HTTP layer with `tokens.ts`.
 */
import type { FieldError, KindSpec, KubeObject } from '../types.ts';
import { expectArray } from './common/decode.ts';
import { invalid, required } from './common/field.ts';
import { isDNS1123Subdomain } from './common/names.ts';
import { objectMetaFields } from './common/selectable.ts';
import { makeStrategy, STANDARD_VERBS } from './common/strategy.ts';
import { AGE_COLUMN, age, column, NAME_COLUMN } from './common/table.ts';

function validateServiceAccount(sa: KubeObject): FieldError[] {
  const errs: FieldError[] = [];
  for (const [field, list] of [['secrets', sa.secrets], ['imagePullSecrets', sa.imagePullSecrets]] as const) {
    (Array.isArray(list) ? list : []).forEach((ref: { name?: string }, i: number) => {
      if (!ref?.name) errs.push(required(`${field}[${i}].name`));
      else for (const m of isDNS1123Subdomain(ref.name)) errs.push(invalid(`${field}[${i}].name`, ref.name, m));
    });
  }
  return errs;
}

/** ServiceAccount discovery facts, strategy and printer. */
export const serviceAccounts: KindSpec = {
  group: '',
  version: 'v1',
  kind: 'ServiceAccount',
  plural: 'serviceaccounts',
  singular: 'serviceaccount',
  namespaced: true,
  shortNames: ['sa'],
  subresources: [],
  verbs: STANDARD_VERBS,
  returnDeletedObject: true,
  allowUnconditionalUpdate: true,
  allowCreateOnUpdate: false,
  selectableFields: (sa) => objectMetaFields(sa, true),
  table: {
    columns: [NAME_COLUMN, column('Secrets', 'string', 'Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.'), AGE_COLUMN],
    row: (sa, now) => [sa.metadata.name, Array.isArray(sa.secrets) ? sa.secrets.length : 0, age(sa, now)],
  },
  strategy: makeStrategy({
    namespaced: true,
    nameRule: isDNS1123Subdomain,
    decode(sa) {
      expectArray('ServiceAccount', sa.secrets, 'ServiceAccount.secrets', '[]v1.ObjectReference');
      expectArray('ServiceAccount', sa.imagePullSecrets, 'ServiceAccount.imagePullSecrets', '[]v1.LocalObjectReference');
    },
    validate: validateServiceAccount,
  }),
};
