/**
 * Endpoints (`pkg/registry/core/endpoint/strategy.go`, `ValidateEndpoints*`).
 */
import type { FieldError, KindSpec, KubeObject } from '../types.ts';
import { expectArray } from './common/decode.ts';
import { duplicate, invalid, notSupported, required } from './common/field.ts';
import { isValidIP, isValidPortNum, PROTOCOLS, validateNonSpecialIP } from './common/ip.ts';
import { isDNS1123Label, isDNS1123Subdomain } from './common/names.ts';
import { objectMetaFields } from './common/selectable.ts';
import { makeStrategy, STANDARD_VERBS } from './common/strategy.ts';
import { AGE_COLUMN, age, column, NAME_COLUMN } from './common/table.ts';

/** The deprecation warning every v1 Endpoints write gets on ≥1.33. */
export const ENDPOINTS_DEPRECATED = 'v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice';

function validateAddress(a: Record<string, any>, f: string): FieldError[] {
  const errs: FieldError[] = [];
  const ip = String(a.ip ?? '');
  for (const m of isValidIP(ip)) errs.push(invalid(`${f}.ip`, ip, m));
  if (a.hostname) for (const m of isDNS1123Label(a.hostname)) errs.push(invalid(`${f}.hostname`, a.hostname, m));
  if (a.nodeName !== undefined && a.nodeName !== null) {
    for (const m of isDNS1123Subdomain(a.nodeName)) errs.push(invalid(`${f}.nodeName`, a.nodeName, m));
  }
  errs.push(...validateNonSpecialIP(ip, `${f}.ip`));
  return errs;
}

/** `ValidateEndpoints`: addresses are non-special IPs; with more than one port each needs a name. */
export function validateEndpoints(ep: KubeObject): FieldError[] {
  const errs: FieldError[] = [];
  const subsets: Record<string, any>[] = Array.isArray(ep.subsets) ? ep.subsets : [];
  subsets.forEach((ss, i) => {
    const f = `subsets[${i}]`;
    const addrs = ss.addresses ?? [];
    const notReady = ss.notReadyAddresses ?? [];
    if (addrs.length === 0 && notReady.length === 0) errs.push(required(f, 'must specify `addresses` or `notReadyAddresses`'));
    addrs.forEach((a: Record<string, any>, j: number) => errs.push(...validateAddress(a, `${f}.addresses[${j}]`)));
    notReady.forEach((a: Record<string, any>, j: number) => errs.push(...validateAddress(a, `${f}.notReadyAddresses[${j}]`)));
    const ports: Record<string, any>[] = ss.ports ?? [];
    const names = new Set<string>();
    ports.forEach((p, j) => {
      const pf = `${f}.ports[${j}]`;
      if (ports.length > 1 && !p.name) errs.push(required(`${pf}.name`));
      else if (p.name) {
        for (const m of isDNS1123Label(p.name)) errs.push(invalid(`${pf}.name`, p.name, m));
        if (names.has(p.name)) errs.push(duplicate(`${pf}.name`, p.name));
        names.add(p.name);
      }
      for (const m of isValidPortNum(p.port)) errs.push(invalid(`${pf}.port`, p.port, m));
      if (!p.protocol) errs.push(required(`${pf}.protocol`));
      else if (!PROTOCOLS.includes(p.protocol)) errs.push(notSupported(`${pf}.protocol`, p.protocol, PROTOCOLS));
    });
  });
  return errs;
}

/** `formatEndpoints`: up to three `ip:port` pairs (`[v6]:port`), then `+ N more...`; `<none>` without subsets. */
function formatEndpoints(ep: KubeObject): string {
  const subsets: Array<Record<string, any>> = ep.subsets ?? [];
  if (subsets.length === 0) return '<none>';
  const all: string[] = [];
  for (const ss of subsets) {
    const addrs: Array<{ ip: string }> = ss.addresses ?? [];
    if (!ss.ports?.length) {
      all.push(...addrs.map((a) => a.ip));
      continue;
    }
    for (const p of ss.ports) for (const a of addrs) all.push(a.ip.includes(':') ? `[${a.ip}]:${p.port}` : `${a.ip}:${p.port}`);
  }
  const shown = all.slice(0, 3).join(',');
  return all.length > 3 ? `${shown} + ${all.length - 3} more...` : shown;
}

/** Endpoints discovery facts, strategy and printer. */
export const endpoints: KindSpec = {
  group: '',
  version: 'v1',
  kind: 'Endpoints',
  plural: 'endpoints',
  singular: 'endpoints',
  namespaced: true,
  shortNames: ['ep'],
  subresources: [],
  verbs: STANDARD_VERBS,
  returnDeletedObject: false,
  allowUnconditionalUpdate: true,
  allowCreateOnUpdate: true,
  selectableFields: (ep) => objectMetaFields(ep, true),
  table: {
    columns: [
      NAME_COLUMN,
      column('Endpoints', 'string', 'Endpoints of the service'),
      AGE_COLUMN,
    ],
    row: (ep, now) => [ep.metadata.name, formatEndpoints(ep), age(ep, now)],
  },
  strategy: makeStrategy({
    namespaced: true,
    nameRule: isDNS1123Subdomain,
    decode(ep) {
      expectArray('Endpoints', ep.subsets, 'Endpoints.subsets', '[]v1.EndpointSubset');
    },
    defaults(ep) {
      for (const ss of Array.isArray(ep.subsets) ? ep.subsets : []) {
        for (const p of Array.isArray(ss.ports) ? ss.ports : []) p.protocol ??= 'TCP';
      }
    },
    validate: validateEndpoints,
    warnings: () => [ENDPOINTS_DEPRECATED],
  }),
};
