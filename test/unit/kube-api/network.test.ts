// Service and Endpoints strategies (defaults, patchAllocatedValues, validation) and the ClusterIP range
// allocator's arithmetic (ServiceIPStaticSubrange offsets, range checks).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { services } from '../../../infra/local/kube-api/kinds/service.ts';
import { endpoints } from '../../../infra/local/kube-api/kinds/endpoints.ts';
import { validateNonSpecialIP } from '../../../infra/local/kube-api/kinds/common/ip.ts';
import { ClusterIPAllocator } from '../../../infra/local/kube-api/admission/cluster-ip.ts';
import { ServiceCidrError } from '../../../infra/local/kube-api/admission/errors.ts';
import type { KubeObject } from '../../../infra/local/kube-api/types.ts';

const svcS = services.strategy;
const epS = endpoints.strategy;
const fields = (errs: Array<{ type: string; field: string }>) => errs.map((e) => `${e.type} ${e.field}`);
const svc = (spec: Record<string, unknown>): KubeObject => ({ metadata: { name: 'svc', namespace: 'default', uid: 'u' }, spec });

describe('kube-api Service strategy', () => {
  it('defaults type, affinity, protocol, targetPort, IP families and traffic policy', () => {
    const s = svc({ ports: [{ port: 80 }, { port: 53, protocol: 'UDP', targetPort: 'dns' }] });
    svcS.defaults(s);
    assert.deepEqual(s.spec, {
      type: 'ClusterIP', sessionAffinity: 'None', internalTrafficPolicy: 'Cluster', ipFamilyPolicy: 'SingleStack', ipFamilies: ['IPv4'],
      ports: [{ port: 80, protocol: 'TCP', targetPort: 80 }, { port: 53, protocol: 'UDP', targetPort: 'dns' }],
    });
  });

  it('selector-less headless Services default to RequireDualStack, others to SingleStack', () => {
    const headless = svc({ clusterIP: 'None' });
    svcS.defaults(headless);
    assert.deepEqual([headless.spec.ipFamilyPolicy, headless.spec.ipFamilies], ['RequireDualStack', ['IPv4']]);
    const selected = svc({ clusterIP: 'None', selector: { app: 'db' } });
    svcS.defaults(selected);
    assert.equal(selected.spec.ipFamilyPolicy, 'SingleStack');
    const ext = svc({ type: 'ExternalName', externalName: 'db.example.com' });
    svcS.defaults(ext);
    assert.deepEqual([ext.spec.ipFamilyPolicy, ext.spec.internalTrafficPolicy], [undefined, undefined]);
  });

  it('a PUT that omits clusterIP/clusterIPs keeps the allocated values (patchAllocatedValues)', () => {
    const old = svc({ type: 'ClusterIP', clusterIP: '10.96.0.20', clusterIPs: ['10.96.0.20'], ports: [{ port: 80, protocol: 'TCP', targetPort: 80 }] });
    const put = svc({ type: 'ClusterIP', ports: [{ port: 81, protocol: 'TCP', targetPort: 81 }] });
    svcS.prepareForUpdate(put, old);
    assert.deepEqual([put.spec.clusterIP, put.spec.clusterIPs], ['10.96.0.20', ['10.96.0.20']]);
    assert.deepEqual(svcS.validateUpdate(put, old), []);
  });

  it('changing the cluster IP is rejected: "may not change once set"', () => {
    const old = svc({ clusterIP: '10.96.0.20', clusterIPs: ['10.96.0.20'], ports: [{ port: 80, protocol: 'TCP', targetPort: 80 }] });
    const put = svc({ clusterIP: '10.96.0.21', ports: [{ port: 80, protocol: 'TCP', targetPort: 80 }] });
    svcS.prepareForUpdate(put, old);
    const errs = svcS.validateUpdate(put, old);
    assert.deepEqual(errs.map((e) => [e.field, e.detail]), [['spec.clusterIPs[0]', 'may not change once set']]);
  });

  const cases: Array<[string, Record<string, unknown>, string[]]> = [
    ['valid', { type: 'ClusterIP', ports: [{ port: 80, protocol: 'TCP', targetPort: 8080 }] }, []],
    ['no ports', { type: 'ClusterIP', ports: [] }, ['FieldValueRequired spec.ports']],
    ['headless without ports', { type: 'ClusterIP', clusterIP: 'None', clusterIPs: ['None'], ports: [] }, []],
    ['two unnamed ports', { type: 'ClusterIP', ports: [{ port: 80, protocol: 'TCP', targetPort: 80 }, { port: 81, protocol: 'TCP', targetPort: 81 }] },
      ['FieldValueRequired spec.ports[0].name', 'FieldValueRequired spec.ports[1].name']],
    ['port out of range', { type: 'ClusterIP', ports: [{ port: 70000, protocol: 'TCP', targetPort: 80 }] }, ['FieldValueInvalid spec.ports[0].port']],
    ['bad protocol', { type: 'ClusterIP', ports: [{ port: 80, protocol: 'HTTP', targetPort: 80 }] }, ['FieldValueNotSupported spec.ports[0].protocol']],
    ['nodePort on ClusterIP', { type: 'ClusterIP', ports: [{ port: 80, protocol: 'TCP', targetPort: 80, nodePort: 30000 }] }, ['FieldValueForbidden spec.ports[0].nodePort']],
    ['unknown type', { type: 'Magic', ports: [{ port: 80, protocol: 'TCP', targetPort: 80 }] }, ['FieldValueNotSupported spec.type']],
    ['ExternalName without name', { type: 'ExternalName' }, ['FieldValueRequired spec.externalName']],
    ['bad cluster IP', { type: 'ClusterIP', clusterIP: '10.96.0.300', clusterIPs: ['10.96.0.300'], ports: [{ port: 80, protocol: 'TCP', targetPort: 80 }] },
      ['FieldValueInvalid spec.clusterIPs[0]']],
  ];
  for (const [name, spec, want] of cases) it(`validate: ${name}`, () => assert.deepEqual(fields(svcS.validate(svc(spec))), want));

  it('names must be DNS-1035 labels', () => {
    const s = svc({ type: 'ClusterIP', ports: [{ port: 80, protocol: 'TCP', targetPort: 80 }] });
    s.metadata.name = '1svc';
    assert.deepEqual(fields(svcS.validate(s)), ['FieldValueInvalid metadata.name']);
  });

  it('main update keeps status; status update keeps spec', () => {
    const old = svc({ clusterIP: '10.96.0.2', clusterIPs: ['10.96.0.2'], ports: [] });
    old.status = { loadBalancer: {} };
    const s = svc({ clusterIP: 'x' });
    s.status = { loadBalancer: { ingress: [{ ip: '1.2.3.4' }] } };
    svcS.prepareForUpdate(s, old, 'status');
    assert.deepEqual([s.spec, s.status.loadBalancer.ingress[0].ip], [old.spec, '1.2.3.4']);
  });
});

describe('kube-api Endpoints strategy', () => {
  const ipCases: Array<[string, string[]]> = [
    ['10.0.0.1', []], ['2001:db8::1', []],
    ['127.0.0.1', ['may not be in the loopback range (127.0.0.0/8, ::1/128)']],
    ['::1', ['may not be in the loopback range (127.0.0.0/8, ::1/128)']],
    ['0.0.0.0', ['may not be unspecified (0.0.0.0)']],
    ['169.254.1.1', ['may not be in the link-local range (169.254.0.0/16, fe80::/10)']],
    ['fe80::1', ['may not be in the link-local range (169.254.0.0/16, fe80::/10)']],
    ['224.0.0.5', ['may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)']],
    ['224.0.1.5', []],
    ['::ffff:127.0.0.1', ['may not be in the loopback range (127.0.0.0/8, ::1/128)']],
  ];
  for (const [ip, want] of ipCases) {
    it(`ValidateNonSpecialIP(${ip})`, () => assert.deepEqual(validateNonSpecialIP(ip, 'ip').map((e) => e.detail), want));
  }

  it('hostnames are rejected as addresses; >1 port needs names; protocol defaults to TCP', () => {
    const ep: KubeObject = { metadata: { name: 'svc', namespace: 'default' }, subsets: [{
      addresses: [{ ip: 'node-1.example.com' }], ports: [{ port: 80 }, { port: 81, name: 'b' }] }] };
    epS.defaults(ep);
    assert.equal(ep.subsets[0].ports[0].protocol, 'TCP');
    assert.deepEqual(epS.validate(ep).map((e) => `${e.field}: ${e.detail}`), [
      'subsets[0].addresses[0].ip: must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)',
      'subsets[0].addresses[0].ip: must be a valid IP address',
      'subsets[0].ports[0].name: ',
    ]);
  });

  it('warns that v1 Endpoints are deprecated', () => {
    assert.deepEqual(epS.warnings!({ metadata: {} }), ['v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice']);
  });
});

describe('kube-api ClusterIP range', () => {
  it('normalises the CIDR, reserves the first address for the kubernetes Service and checks membership', () => {
    const a = new ClusterIPAllocator('10.96.3.7/12');
    assert.equal(a.cidr, '10.96.0.0/12');
    assert.equal(a.kubernetesServiceIP, '10.96.0.1');
    assert.equal(a.contains('10.96.0.0'), false, 'network address');
    assert.equal(a.contains('10.111.255.255'), false, 'broadcast address');
    assert.equal(a.contains('10.111.255.254'), true);
    assert.equal(a.contains('10.112.0.1'), false);
  });

  for (const bad of ['10.96.0.0', '10.96.0.0/31', 'fd00::/108', 'x/12']) {
    it(`rejects the service CIDR ${bad}`, () => assert.throws(() => new ClusterIPAllocator(bad), ServiceCidrError));
  }
});
