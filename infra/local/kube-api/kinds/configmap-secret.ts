/**
 * ConfigMap and Secret (`pkg/registry/core/{configmap,secret}/strategy.go`, `ValidateConfigMap*`,
 * `ValidateSecret*`).
 */
import type { FieldError, KindSpec, KubeObject } from '../types.ts';
import { decodeError, expectObject, unmarshalError } from './common/decode.ts';
import { deepEqual, forbidden, immutable, invalid, tooLong } from './common/field.ts';
import { isDNS1123Subdomain } from './common/names.ts';
import { objectMetaFields } from './common/selectable.ts';
import { makeStrategy, STANDARD_VERBS } from './common/strategy.ts';
import { AGE_COLUMN, age, column, NAME_COLUMN } from './common/table.ts';

const MAX_SIZE = 1024 * 1024;
const CONFIG_KEY = /^[-._a-zA-Z0-9]+$/;
const CONFIG_KEY_ERROR = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

/** `IsConfigMapKey`. */
export function isConfigMapKey(key: string): string[] {
  const errs: string[] = [];
  if (key.length > 253) errs.push('must be no more than 253 characters');
  if (!CONFIG_KEY.test(key)) errs.push(CONFIG_KEY_ERROR);
  if (key === '.') errs.push("must not be '.'");
  else if (key === '..') errs.push("must not be '..'");
  else if (key.startsWith('..')) errs.push("must not start with '..'");
  return errs;
}

function validateKeys(map: Record<string, string> | undefined, field: string): FieldError[] {
  const errs: FieldError[] = [];
  for (const k of Object.keys(map ?? {})) for (const m of isConfigMapKey(k)) errs.push(invalid(field, k, m));
  return errs;
}

function validateConfigMap(cm: KubeObject): FieldError[] {
  const errs = [...validateKeys(cm.data, 'data'), ...validateKeys(cm.binaryData, 'binaryData')];
  let size = 0;
  for (const [k, v] of Object.entries(cm.data ?? {})) {
    size += String(v).length;
    if (cm.binaryData && k in cm.binaryData) errs.push(invalid('data', k, 'duplicate of key present in binaryData'));
  }
  for (const v of Object.values(cm.binaryData ?? {})) size += Buffer.from(String(v), 'base64').length;
  if (size > MAX_SIZE) errs.push(tooLong('', '', MAX_SIZE));
  return errs;
}

function validateImmutableData(obj: KubeObject, old: KubeObject, fields: string[]): FieldError[] {
  const errs: FieldError[] = [];
  if (old.immutable === true) {
    if (obj.immutable !== true) errs.push(forbidden('immutable', 'field is immutable when `immutable` is set'));
    for (const f of fields) if (!deepEqual(obj[f] ?? {}, old[f] ?? {})) errs.push(forbidden(f, 'field is immutable when `immutable` is set'));
  }
  return errs;
}

/** ConfigMap discovery facts and strategy. */
export const configMaps: KindSpec = {
  group: '',
  version: 'v1',
  kind: 'ConfigMap',
  plural: 'configmaps',
  singular: 'configmap',
  namespaced: true,
  shortNames: ['cm'],
  subresources: [],
  verbs: STANDARD_VERBS,
  returnDeletedObject: false,
  allowUnconditionalUpdate: true,
  allowCreateOnUpdate: false,
  selectableFields: (cm) => objectMetaFields(cm, true),
  table: {
    columns: [NAME_COLUMN, column('Data', 'integer', 'Number of data entries in the ConfigMap.'), AGE_COLUMN],
    row: (cm, now) => [cm.metadata.name, Object.keys(cm.data ?? {}).length + Object.keys(cm.binaryData ?? {}).length, age(cm, now)],
  },
  strategy: makeStrategy({
    namespaced: true,
    nameRule: isDNS1123Subdomain,
    decode(cm) {
      expectObject('ConfigMap', cm.data, 'ConfigMap.data', 'map[string]string');
      for (const [k, v] of Object.entries(cm.data ?? {})) {
        if (typeof v !== 'string') throw unmarshalError('ConfigMap', v, `ConfigMap.data.${k}`, 'string');
      }
    },
    validate: validateConfigMap,
    validateUpdate: (cm, old) => [...validateConfigMap(cm), ...validateImmutableData(cm, old, ['data', 'binaryData'])],
  }),
};

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function validateSecret(s: KubeObject): FieldError[] {
  const errs = validateKeys(s.data, 'data');
  let size = 0;
  for (const v of Object.values(s.data ?? {})) size += Buffer.from(String(v), 'base64').length;
  if (size > MAX_SIZE) errs.push(tooLong('data', '', MAX_SIZE));
  if (s.type === 'kubernetes.io/dockerconfigjson' && !(s.data ?? {})['.dockerconfigjson']) {
    errs.push({ type: 'FieldValueRequired', field: 'data[.dockerconfigjson]', detail: '' });
  }
  return errs;
}

/** Secret discovery facts and strategy; `stringData` is folded into `data` on write, as conversion does. */
export const secrets: KindSpec = {
  group: '',
  version: 'v1',
  kind: 'Secret',
  plural: 'secrets',
  singular: 'secret',
  namespaced: true,
  shortNames: [],
  subresources: [],
  verbs: STANDARD_VERBS,
  returnDeletedObject: false,
  allowUnconditionalUpdate: true,
  allowCreateOnUpdate: false,
  selectableFields: (s) => ({ ...objectMetaFields(s, true), type: s.type ?? '' }),
  table: {
    columns: [NAME_COLUMN, column('Type', 'string', 'The type of the secret'), column('Data', 'integer', 'Number of data entries in the secret.'), AGE_COLUMN],
    row: (s, now) => [s.metadata.name, s.type ?? '', Object.keys(s.data ?? {}).length, age(s, now)],
  },
  strategy: makeStrategy({
    namespaced: true,
    nameRule: isDNS1123Subdomain,
    decode(s) {
      expectObject('Secret', s.data, 'Secret.data', 'map[string][]uint8');
      for (const v of Object.values(s.data ?? {})) {
        if (typeof v !== 'string' || v.length % 4 !== 0 || !BASE64.test(v)) {
          throw decodeError('Secret', 'illegal base64 data at input byte 0');
        }
      }
      if (s.stringData && typeof s.stringData === 'object') {
        s.data ??= {};
        for (const [k, v] of Object.entries(s.stringData)) s.data[k] = Buffer.from(String(v)).toString('base64');
        delete s.stringData;
      }
    },
    defaults(s) {
      s.type ??= 'Opaque';
    },
    validate: validateSecret,
    validateUpdate: (s, old) => [...validateSecret(s), ...immutable('type', s.type, old.type), ...validateImmutableData(s, old, ['data'])],
  }),
};
