/**
 * Service (`pkg/registry/core/service/strategy.go`, `storage/storage.go` `patchAllocatedValues`,
 * `ValidateService*`). ClusterIPs are allocated by the admission plugin in `admission/cluster-ip.ts`.
 */
import type { FieldError, KindSpec, KubeObject } from '../types.ts';
import { expectArray, expectObject } from './common/decode.ts';
import { clone, duplicate, forbidden, invalid, notSupported, required } from './common/field.ts';
import { isValidIP, isValidPortName, isValidPortNum, PROTOCOLS } from './common/ip.ts';
import { validateLabels } from './common/meta.ts';
import { isDNS1035Label, isDNS1123Label, isDNS1123Subdomain } from './common/names.ts';
import { objectMetaFields } from './common/selectable.ts';
import { ensure, makeStrategy, STANDARD_VERBS } from './common/strategy.ts';
import { AGE_COLUMN, age, column, NAME_COLUMN } from './common/table.ts';

const KIND = 'Service';
const TYPES = ['ClusterIP', 'ExternalName', 'LoadBalancer', 'NodePort'];
const AFFINITIES = ['ClientIP', 'None'];

/** `needsClusterIP`: every type but ExternalName. */
export const needsClusterIP = (svc: KubeObject): boolean => (svc.spec?.type ?? 'ClusterIP') !== 'ExternalName';
/** `isHeadlessService`. */
export const isHeadless = (svc: KubeObject): boolean => svc.spec?.clusterIP === 'None';

/** `SetDefaults_Service` plus the IP-family fields the REST layer (`initIPFamilyFields`) fills for ClusterIP-bearing types. */
function defaults(svc: KubeObject): void {
  const spec = ensure(svc, 'spec');
  spec.type ??= 'ClusterIP';
  spec.sessionAffinity ??= 'None';
  if (spec.sessionAffinity === 'ClientIP') {
    spec.sessionAffinityConfig ??= { clientIP: { timeoutSeconds: 10800 } };
  }
  for (const p of Array.isArray(spec.ports) ? spec.ports : []) {
    p.protocol ??= 'TCP';
    if (p.targetPort === undefined || p.targetPort === 0 || p.targetPort === '') p.targetPort = p.port;
  }
  if (spec.type === 'NodePort' || spec.type === 'LoadBalancer') spec.externalTrafficPolicy ??= 'Cluster';
  if (spec.type === 'LoadBalancer') spec.allocateLoadBalancerNodePorts ??= true;
  if (spec.type !== 'ExternalName') {
    spec.internalTrafficPolicy ??= 'Cluster';
    // initIPFamilyFields: selector-less headless Services get RequireDualStack (on a single-stack cluster
    // that still means only the cluster's family).
    const selectorless = !spec.selector || Object.keys(spec.selector).length === 0;
    spec.ipFamilyPolicy ??= spec.clusterIP === 'None' && selectorless ? 'RequireDualStack' : 'SingleStack';
    spec.ipFamilies ??= ['IPv4'];
  }
  ensure(svc, 'status').loadBalancer ??= {};
}

/** `patchAllocatedValues` + `normalizeClusterIPs`: a PUT that omits allocated values keeps the old ones. */
export function patchAllocatedValues(svc: KubeObject, old: KubeObject): void {
  const spec = ensure(svc, 'spec');
  const oldSpec = old.spec ?? {};
  if (needsClusterIP(old) && needsClusterIP(svc)) {
    if (!spec.clusterIP) spec.clusterIP = oldSpec.clusterIP;
    if ((!Array.isArray(spec.clusterIPs) || spec.clusterIPs.length === 0) && Array.isArray(oldSpec.clusterIPs) && oldSpec.clusterIPs.length > 0) {
      spec.clusterIPs = clone(oldSpec.clusterIPs);
    }
  }
  if (spec.clusterIP === undefined) delete spec.clusterIP;
  if (spec.clusterIP && spec.clusterIP !== oldSpec.clusterIP && Array.isArray(spec.clusterIPs)
    && JSON.stringify(spec.clusterIPs) === JSON.stringify(oldSpec.clusterIPs ?? [])) {
    spec.clusterIPs = [spec.clusterIP, ...spec.clusterIPs.slice(1)];
  }
  if (spec.clusterIP && (!Array.isArray(spec.clusterIPs) || spec.clusterIPs.length === 0)) spec.clusterIPs = [spec.clusterIP];
  const nodePortTypes = ['NodePort', 'LoadBalancer'];
  if (nodePortTypes.includes(oldSpec.type) && nodePortTypes.includes(spec.type)) {
    for (const p of spec.ports ?? []) {
      if (p.nodePort) continue;
      const prev = (oldSpec.ports ?? []).find((o: { port: number; protocol?: string }) => o.port === p.port && (o.protocol ?? 'TCP') === (p.protocol ?? 'TCP'));
      if (prev?.nodePort) p.nodePort = prev.nodePort;
    }
  }
  if (spec.healthCheckNodePort === undefined && oldSpec.healthCheckNodePort) spec.healthCheckNodePort = oldSpec.healthCheckNodePort;
}

function validatePort(p: Record<string, any>, i: number, requireName: boolean, type: string): FieldError[] {
  const f = `spec.ports[${i}]`;
  const errs: FieldError[] = [];
  if (requireName && !p.name) errs.push(required(`${f}.name`));
  else if (p.name) for (const m of isDNS1123Label(p.name)) errs.push(invalid(`${f}.name`, p.name, m));
  for (const m of isValidPortNum(p.port)) errs.push(invalid(`${f}.port`, p.port, m));
  if (!p.protocol) errs.push(required(`${f}.protocol`));
  else if (!PROTOCOLS.includes(p.protocol)) errs.push(notSupported(`${f}.protocol`, p.protocol, PROTOCOLS));
  if (typeof p.targetPort === 'string') {
    for (const m of isValidPortName(p.targetPort)) errs.push(invalid(`${f}.targetPort`, p.targetPort, m));
  } else {
    for (const m of isValidPortNum(p.targetPort)) errs.push(invalid(`${f}.targetPort`, p.targetPort, m));
  }
  if (p.nodePort !== undefined && p.nodePort !== 0) {
    if (type === 'ClusterIP') errs.push(forbidden(`${f}.nodePort`, "may not be used when `type` is 'ClusterIP'"));
    else for (const m of isValidPortNum(p.nodePort)) errs.push(invalid(`${f}.nodePort`, p.nodePort, m));
  }
  return errs;
}

/** `ValidateService`. */
export function validateService(svc: KubeObject): FieldError[] {
  const errs: FieldError[] = [];
  const spec = svc.spec ?? {};
  const type = spec.type ?? 'ClusterIP';
  const ports: Record<string, any>[] = Array.isArray(spec.ports) ? spec.ports : [];
  if (!TYPES.includes(type)) errs.push(notSupported('spec.type', type, TYPES));
  if (ports.length === 0 && !isHeadless(svc) && type !== 'ExternalName') errs.push(required('spec.ports'));
  const names = new Set<string>();
  const keys = new Set<string>();
  ports.forEach((p, i) => {
    errs.push(...validatePort(p, i, ports.length > 1, type));
    if (p.name) {
      if (names.has(p.name)) errs.push(duplicate(`spec.ports[${i}].name`, p.name));
      names.add(p.name);
    }
    const key = `${p.port}/${p.protocol}`;
    if (keys.has(key)) errs.push(duplicate(`spec.ports[${i}]`, { port: p.port, protocol: p.protocol }));
    keys.add(key);
  });
  if (spec.sessionAffinity !== undefined && !AFFINITIES.includes(spec.sessionAffinity)) {
    errs.push(notSupported('spec.sessionAffinity', spec.sessionAffinity, AFFINITIES));
  }
  errs.push(...validateLabels(spec.selector, 'spec.selector'));
  if (type === 'ExternalName') {
    if (spec.clusterIPs?.length || (spec.clusterIP && spec.clusterIP !== '')) errs.push(forbidden('spec.clusterIPs', 'may not be set for ExternalName services'));
    if (!spec.externalName) errs.push(required('spec.externalName'));
    else for (const m of isDNS1123Subdomain(String(spec.externalName).replace(/\.$/, ''))) errs.push(invalid('spec.externalName', spec.externalName, m));
  } else {
    const ips: string[] = Array.isArray(spec.clusterIPs) ? spec.clusterIPs : [];
    if (spec.clusterIP && ips.length > 0 && ips[0] !== spec.clusterIP) {
      errs.push(invalid('spec.clusterIPs', ips, 'first value must match `clusterIP`'));
    }
    ips.forEach((ip, i) => {
      if (ip === 'None') {
        if (i > 0 || ips.length > 1) errs.push(invalid(`spec.clusterIPs[${i}]`, ip, 'must not have more than one value when `None` is specified'));
        return;
      }
      for (const m of isValidIP(ip)) errs.push(invalid(`spec.clusterIPs[${i}]`, ip, m));
    });
    if (spec.clusterIP && spec.clusterIP !== 'None' && ips.length === 0) {
      for (const m of isValidIP(spec.clusterIP)) errs.push(invalid('spec.clusterIPs[0]', spec.clusterIP, m));
    }
  }
  for (const [i, ip] of (spec.externalIPs ?? []).entries()) {
    for (const m of isValidIP(ip)) errs.push(invalid(`spec.externalIPs[${i}]`, ip, m));
  }
  return errs;
}

/** `ValidateServiceUpdate`: `validateUpgradeDowngradeClusterIPs` (cluster IPs never change once set). */
export function validateServiceUpdate(svc: KubeObject, old: KubeObject): FieldError[] {
  const errs = validateService(svc);
  if ((svc.spec?.type ?? 'ClusterIP') === 'ExternalName' || (old.spec?.type ?? 'ClusterIP') === 'ExternalName') return errs;
  const now: string[] = svc.spec?.clusterIPs ?? [];
  (old.spec?.clusterIPs ?? []).forEach((ip: string, i: number) => {
    if (i < now.length && ip !== now[i]) errs.push(invalid(`spec.clusterIPs[${i}]`, now, 'may not change once set'));
  });
  return errs;
}

function externalIP(svc: KubeObject): string {
  const spec = svc.spec ?? {};
  const ext: string[] = spec.externalIPs ?? [];
  switch (spec.type) {
    case 'ExternalName': return spec.externalName ?? '<none>';
    case 'LoadBalancer': {
      const lb = (svc.status?.loadBalancer?.ingress ?? []).map((i: { ip?: string; hostname?: string }) => i.ip || i.hostname).filter(Boolean);
      const all = [...lb, ...ext];
      return all.length ? all.join(',') : '<pending>';
    }
    default: return ext.length ? ext.join(',') : '<none>';
  }
}

function portString(svc: KubeObject): string {
  const ports: Array<{ port: number; nodePort?: number; protocol?: string }> = svc.spec?.ports ?? [];
  if (ports.length === 0) return '<none>';
  return ports.map((p) => (p.nodePort ? `${p.port}:${p.nodePort}/${p.protocol ?? 'TCP'}` : `${p.port}/${p.protocol ?? 'TCP'}`)).join(',');
}

/** `labels.FormatLabels`: sorted `k=v` pairs, `<none>` when empty. */
export function formatLabels(m: Record<string, string> | undefined): string {
  const keys = Object.keys(m ?? {}).sort();
  return keys.length ? keys.map((k) => `${k}=${m![k]}`).join(',') : '<none>';
}

/** Service discovery facts, strategy and printer. */
export const services: KindSpec = {
  group: '',
  version: 'v1',
  kind: KIND,
  plural: 'services',
  singular: 'service',
  namespaced: true,
  shortNames: ['svc'],
  categories: ['all'],
  subresources: ['status'],
  verbs: STANDARD_VERBS,
  returnDeletedObject: true,
  allowUnconditionalUpdate: true,
  allowCreateOnUpdate: false,
  selectableFields: (svc) => ({
    ...objectMetaFields(svc, true),
    'spec.clusterIP': svc.spec?.clusterIP ?? '',
    'spec.type': svc.spec?.type ?? '',
  }),
  table: {
    columns: [
      NAME_COLUMN,
      column('Type', 'string', 'type determines how the Service is exposed.'),
      column('Cluster-IP', 'string', 'clusterIP is the IP address of the service and is usually assigned randomly.'),
      column('External-IP', 'string', 'externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.'),
      column('Port(s)', 'string', 'The list of ports that are exposed by this service.'),
      AGE_COLUMN,
      column('Selector', 'string', 'Route service traffic to pods with label keys and values matching this selector.', 1),
    ],
    row(svc, now) {
      const spec = svc.spec ?? {};
      const ips: string[] = spec.clusterIPs ?? [];
      return [svc.metadata.name, spec.type ?? '', ips.length ? ips[0] : '<none>', externalIP(svc), portString(svc), age(svc, now), formatLabels(spec.selector)];
    },
  },
  strategy: makeStrategy({
    namespaced: true,
    nameRule: isDNS1035Label,
    decode(svc) {
      expectObject(KIND, svc.spec, 'Service.spec', 'v1.ServiceSpec');
      expectArray(KIND, svc.spec?.ports, 'ServiceSpec.spec.ports', '[]v1.ServicePort');
      expectArray(KIND, svc.spec?.clusterIPs, 'ServiceSpec.spec.clusterIPs', '[]string');
    },
    defaults,
    prepareForCreate(svc) {
      svc.status = {};
      const spec = ensure(svc, 'spec');
      if (spec.clusterIP && (!Array.isArray(spec.clusterIPs) || spec.clusterIPs.length === 0)) spec.clusterIPs = [spec.clusterIP];
      if (!spec.clusterIP && Array.isArray(spec.clusterIPs) && spec.clusterIPs.length > 0) spec.clusterIP = spec.clusterIPs[0];
    },
    prepareForUpdate(svc, old, subresource) {
      if (subresource === 'status') {
        svc.spec = clone(old.spec ?? {});
        return;
      }
      svc.status = clone(old.status ?? {});
      patchAllocatedValues(svc, old);
    },
    validate: validateService,
    validateUpdate: (svc, old, subresource) => (subresource === 'status' ? [] : validateServiceUpdate(svc, old)),
  }),
};
