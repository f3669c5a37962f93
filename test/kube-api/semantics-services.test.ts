// Services and Endpoints over HTTP: ClusterIP allocation inside the POST, requested IPs, uniqueness,
// release on delete and rebuild from persisted data, immutability with the value-preserving PUT,
// Endpoints address rules and cleanup with their Service (apiserver-semantics.md §8; divergence 9).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHarness, rejection, type Harness } from '../../infra/local/kube-api/testing/client.ts';
import { ipv4ToNumber } from '../../infra/local/kube-api/kinds/common/ip.ts';

const svc = (name: string, spec: Record<string, unknown> = {}) => ({ metadata: { name }, spec: { ports: [{ port: 80 }], ...spec } }) as any;

async function eventually<T>(probe: () => Promise<T | undefined>, what: string, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('kube-api semantics: Service ClusterIP', () => {
  let h: Harness;
  before(async () => { h = await startHarness({ kinds: undefined, serviceCidr: '10.0.0.0/24' }); });
  after(async () => { await h.api.stop(); });

  it('the POST response carries the allocated clusterIP/clusterIPs from the upper band of the range', async () => {
    const s = await h.core.createNamespacedService({ namespace: 'default', body: svc('alloc') });
    const ip = s.spec!.clusterIP!;
    assert.deepEqual(s.spec!.clusterIPs, [ip]);
    const n = ipv4ToNumber(ip)! - ipv4ToNumber('10.0.0.0')!;
    // /24: 254 usable, static band = max(16, 256/16) = 16 addresses after the network address.
    assert.ok(n >= 17 && n <= 254, `dynamic pick ${ip} lies in the upper band`);
    assert.deepEqual([s.spec!.type, s.spec!.sessionAffinity, s.spec!.ipFamilyPolicy, s.spec!.ipFamilies, s.spec!.ports![0].targetPort],
      ['ClusterIP', 'None', 'SingleStack', ['IPv4'], 80]);
  });

  it('never hands out an IP twice while allocated', async () => {
    const made = await Promise.all(Array.from({ length: 60 }, (_, i) => h.core.createNamespacedService({ namespace: 'default', body: svc(`many-${i}`) })));
    const all = (await h.core.listNamespacedService({ namespace: 'default' })).items.map((s) => s.spec!.clusterIP!);
    assert.equal(new Set(all).size, all.length);
    assert.equal(made.length, 60);
  });

  it('a requested IP is validated: in range, not allocated, not the kubernetes Service address', async () => {
    const s = await h.core.createNamespacedService({ namespace: 'default', body: svc('want', { clusterIP: '10.0.0.10' }) });
    assert.deepEqual(s.spec!.clusterIPs, ['10.0.0.10']);
    const taken = await rejection(h.core.createNamespacedService({ namespace: 'default', body: svc('want2', { clusterIP: '10.0.0.10' }) }));
    assert.equal(taken.code, 422);
    assert.equal(taken.message, 'Service "want2" is invalid: spec.clusterIPs: Invalid value: ["10.0.0.10"]: failed to allocate IP 10.0.0.10: provided IP is already allocated');
    const outside = await rejection(h.core.createNamespacedService({ namespace: 'default', body: svc('far', { clusterIP: '192.168.0.1' }) }));
    assert.equal(outside.code, 422);
    assert.match(outside.message, /the provided IP \(192\.168\.0\.1\) is not in the valid range\. The range of valid IPs is 10\.0\.0\.0\/24$/);
    const first = await rejection(h.core.createNamespacedService({ namespace: 'default', body: svc('first', { clusterIP: '10.0.0.1' }) }));
    assert.match(first.message, /provided IP is already allocated/);
  });

  it('an IP is released when its Service is deleted', async () => {
    await h.core.createNamespacedService({ namespace: 'default', body: svc('rel', { clusterIP: '10.0.0.11' }) });
    await h.core.deleteNamespacedService({ name: 'rel', namespace: 'default' });
    const again = await h.core.createNamespacedService({ namespace: 'default', body: svc('rel2', { clusterIP: '10.0.0.11' }) });
    assert.equal(again.spec!.clusterIP, '10.0.0.11');
  });

  it('headless Services allocate nothing; ExternalName has no cluster IP', async () => {
    const hl = await h.core.createNamespacedService({ namespace: 'default', body: svc('headless', { clusterIP: 'None', ports: [] }) });
    assert.deepEqual([hl.spec!.clusterIP, hl.spec!.clusterIPs], ['None', ['None']]);
    const ext = await h.core.createNamespacedService({ namespace: 'default', body: { metadata: { name: 'ext' }, spec: { type: 'ExternalName', externalName: 'db.example.com' } } });
    assert.equal(ext.spec!.clusterIP, undefined);
  });

  it('a PUT that omits clusterIP keeps it; changing it is 422', async () => {
    const s = await h.core.createNamespacedService({ namespace: 'default', body: svc('keep') });
    const resubmitted = await h.core.replaceNamespacedService({ name: 'keep', namespace: 'default',
      body: { metadata: { name: 'keep', labels: { v: '2' } }, spec: { ports: [{ port: 8080 }] } } });
    assert.deepEqual([resubmitted.spec!.clusterIP, resubmitted.spec!.clusterIPs], [s.spec!.clusterIP, s.spec!.clusterIPs]);
    const st = await rejection(h.core.replaceNamespacedService({ name: 'keep', namespace: 'default',
      body: { ...resubmitted, spec: { ...resubmitted.spec, clusterIP: '10.0.0.12', clusterIPs: ['10.0.0.12'] } } }));
    assert.equal(st.code, 422);
    assert.equal(st.details.causes[0].field, 'spec.clusterIPs[0]');
    assert.match(st.details.causes[0].message, /may not change once set$/);
  });

  it('the main PUT ignores status; /status ignores spec', async () => {
    const s = await h.core.createNamespacedService({ namespace: 'default', body: svc('st', { type: 'LoadBalancer' }) });
    const put = await h.core.replaceNamespacedService({ name: 'st', namespace: 'default',
      body: { ...s, status: { loadBalancer: { ingress: [{ ip: '203.0.113.1' }] } } } });
    assert.equal(put.status!.loadBalancer!.ingress, undefined);
    const st = await h.core.replaceNamespacedServiceStatus({ name: 'st', namespace: 'default',
      body: { ...put, spec: { ...put.spec, type: 'ClusterIP' }, status: { loadBalancer: { ingress: [{ ip: '203.0.113.1' }] } } } });
    assert.deepEqual([st.spec!.type, st.status!.loadBalancer!.ingress![0].ip], ['LoadBalancer', '203.0.113.1']);
  });
});

describe('kube-api semantics: Service NodePort', () => {
  let h: Harness;
  before(async () => { h = await startHarness({ kinds: undefined }); });
  after(async () => { await h.api.stop(); });

  it('allocates node ports for NodePort Services in the POST, one per port (TCP/UDP of one port share)', async () => {
    const s = await h.core.createNamespacedService({ namespace: 'default', body: svc('np', { type: 'NodePort',
      ports: [{ name: 'a', port: 53, protocol: 'TCP' }, { name: 'b', port: 53, protocol: 'UDP' }, { name: 'c', port: 80 }] }) });
    const [a, b, c] = s.spec!.ports!.map((p) => p.nodePort!);
    for (const p of [a, c]) assert.ok(p >= 30000 && p <= 32767, `${p} in the default range`);
    assert.equal(a, b);
    assert.notEqual(a, c);
    const plain = await h.core.createNamespacedService({ namespace: 'default', body: svc('np-cip') });
    assert.equal(plain.spec!.ports![0].nodePort, undefined);
  });

  it('a requested node port is checked: in range and not allocated', async () => {
    const s = await h.core.createNamespacedService({ namespace: 'default', body: svc('np-fixed', { type: 'NodePort', ports: [{ port: 80, nodePort: 30080 }] }) });
    assert.equal(s.spec!.ports![0].nodePort, 30080);
    const taken = await rejection(h.core.createNamespacedService({ namespace: 'default', body: svc('np-taken', { type: 'NodePort', ports: [{ port: 80, nodePort: 30080 }] }) }));
    assert.equal(taken.message, 'Service "np-taken" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated');
    const far = await rejection(h.core.createNamespacedService({ namespace: 'default', body: svc('np-far', { type: 'NodePort', ports: [{ port: 80, nodePort: 40000 }] }) }));
    assert.match(far.message, /provided port is not in the valid range\. The range of valid ports is 30000-32767$/);
  });

  it('a PUT that omits node ports keeps them; type ClusterIP → NodePort allocates; deleting frees', async () => {
    const s = await h.core.createNamespacedService({ namespace: 'default', body: svc('np-keep', { type: 'NodePort' }) });
    const put = await h.core.replaceNamespacedService({ name: 'np-keep', namespace: 'default', body: { metadata: { name: 'np-keep' }, spec: { type: 'NodePort', ports: [{ port: 80 }] } } });
    assert.equal(put.spec!.ports![0].nodePort, s.spec!.ports![0].nodePort);
    const c = await h.core.createNamespacedService({ namespace: 'default', body: svc('np-change') });
    const changed = await h.core.replaceNamespacedService({ name: 'np-change', namespace: 'default', body: { ...c, spec: { ...c.spec, type: 'NodePort' } } });
    assert.ok(changed.spec!.ports![0].nodePort! >= 30000);
    await h.core.deleteNamespacedService({ name: 'np-fixed', namespace: 'default' });
    const again = await h.core.createNamespacedService({ namespace: 'default', body: svc('np-again', { type: 'NodePort', ports: [{ port: 80, nodePort: 30080 }] }) });
    assert.equal(again.spec!.ports![0].nodePort, 30080);
  });
});

describe('kube-api semantics: ClusterIP allocations survive a restart', () => {
  it('rebuilds the allocated set from persisted Services', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kube-api-cip-'));
    const dataFile = join(dir, 'state.json');
    try {
      const a = await startHarness({ kinds: undefined, serviceCidr: '10.0.0.0/24', dataFile });
      const made = await a.core.createNamespacedService({ namespace: 'default', body: svc('persisted') });
      await a.api.stop();
      const b = await startHarness({ kinds: undefined, serviceCidr: '10.0.0.0/24', dataFile });
      try {
        const st = await rejection(b.core.createNamespacedService({ namespace: 'default', body: svc('clash', { clusterIP: made.spec!.clusterIP }) }));
        assert.equal(st.code, 422);
        assert.match(st.message, /provided IP is already allocated/);
      } finally {
        await b.api.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('kube-api semantics: Endpoints', () => {
  let h: Harness;
  before(async () => { h = await startHarness({ kinds: undefined }); });
  after(async () => { await h.api.stop(); });

  it('rejects loopback, link-local, multicast and hostname addresses with 422 (divergence 9)', async () => {
    for (const [ip, detail] of [
      ['127.0.0.1', 'may not be in the loopback range (127.0.0.0/8, ::1/128)'],
      ['169.254.10.1', 'may not be in the link-local range (169.254.0.0/16, fe80::/10)'],
      ['224.0.0.1', 'may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)'],
      ['storage-node-1', 'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)'],
    ]) {
      const st = await rejection(h.core.createNamespacedEndpoints({ namespace: 'default', body: { metadata: { name: 'ep-bad' },
        subsets: [{ addresses: [{ ip }], ports: [{ port: 5705 }] }] } }));
      assert.equal(st.code, 422, ip);
      assert.equal(st.details.causes[0].field, 'subsets[0].addresses[0].ip');
      assert.equal(st.details.causes[0].message, `Invalid value: "${ip}": ${detail}`);
    }
  });

  it('more than one port needs names; protocol defaults to TCP; writes carry the deprecation Warning', async () => {
    const st = await rejection(h.core.createNamespacedEndpoints({ namespace: 'default', body: { metadata: { name: 'ep-ports' },
      subsets: [{ addresses: [{ ip: '10.1.0.1' }], ports: [{ port: 1 }, { port: 2 }] }] } }));
    assert.deepEqual(st.details.causes.map((c: { field: string }) => c.field), ['subsets[0].ports[0].name', 'subsets[0].ports[1].name']);
    const res = await h.http('/api/v1/namespaces/default/endpoints', { method: 'POST', body: { metadata: { name: 'ep-ok' },
      subsets: [{ addresses: [{ ip: '10.1.0.1' }], ports: [{ port: 5705 }] }] } });
    assert.equal(res.status, 201);
    assert.equal(res.body.subsets[0].ports[0].protocol, 'TCP');
    assert.match(res.headers.get('warning') ?? '', /v1 Endpoints is deprecated in v1\.33\+; use discovery\.k8s\.io\/v1 EndpointSlice/);
  });

  it('the Endpoints of a selector-less Service are deleted with the Service', async () => {
    await h.core.createNamespacedService({ namespace: 'default', body: svc('shared') });
    await h.core.createNamespacedEndpoints({ namespace: 'default', body: { metadata: { name: 'shared' },
      subsets: [{ addresses: [{ ip: '10.1.0.2' }], ports: [{ port: 5705 }] }] } });
    await h.core.deleteNamespacedService({ name: 'shared', namespace: 'default' });
    await eventually(async () => ((await h.http('/api/v1/namespaces/default/endpoints/shared')).status === 404 ? true : undefined), 'endpoints deleted');
  });

  it('Endpoints without a Service are left alone, and the controller can be switched off', async () => {
    await h.core.createNamespacedEndpoints({ namespace: 'default', body: { metadata: { name: 'lonely' },
      subsets: [{ addresses: [{ ip: '10.1.0.3' }], ports: [{ port: 80 }] }] } });
    await new Promise((r) => setTimeout(r, 50));
    assert.equal((await h.http('/api/v1/namespaces/default/endpoints/lonely')).status, 200);
    const off = await startHarness({ kinds: undefined, disableControllers: ['endpoints'] });
    try {
      await off.core.createNamespacedService({ namespace: 'default', body: svc('s') });
      await off.core.createNamespacedEndpoints({ namespace: 'default', body: { metadata: { name: 's' }, subsets: [] } });
      await off.core.deleteNamespacedService({ name: 's', namespace: 'default' });
      await new Promise((r) => setTimeout(r, 50));
      assert.equal((await off.http('/api/v1/namespaces/default/endpoints/s')).status, 200);
    } finally {
      await off.api.stop();
    }
  });
});
