/**
 * `npm run bench:kube-api`: the emulator as a separate process (as the local stack runs it), driven over HTTP.
 * Measures updates/s from 1 and 8 clients, p50/p99 write latency, watch delivery p99 with 100 watchers and
 * RSS with 10,000 PVs + 10,000 PVCs; and, against a second emulator serving https with a token (as a real
 * API server does), the CPU the functions' own client (`KubeClients`, lib/kube/client.ts) spends per GET and
 * per update in this process, 10 requests at a time, over HTTP/2 (as to kube-apiserver) and over HTTPS/1.1
 * (`--http1`). Prints one JSON summary.
 * Targets: ≥1,000 updates/s, watch p99 < 20 ms, < 400 MiB RSS.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeClients } from '../../lib/kube/client.ts';
import { coreV1 } from '../../lib/kube/core-v1.ts';

const now = (): number => performance.timeOrigin + performance.now();

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

const round = (n: number, digits = 2): number => Number(n.toFixed(digits));

async function startServer(extra: string[] = []): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const child = spawn(process.execPath, [fileURLToPath(new URL('../../infra/local/kube-api/main.ts', import.meta.url)), '--port', '0', '--watch-history', '50000', ...extra], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve) => createInterface({ input: child.stdout! }).once('line', resolve));
  const url = /listening on (\S+)/.exec(line)![1];
  return {
    url, pid: child.pid!,
    stop: () => new Promise((resolve) => { child.once('exit', () => resolve()); child.kill('SIGTERM'); }),
  };
}

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

/** A JSON request over a keep-alive node:http agent (lighter than fetch, so the server is what is measured). */
function request(url: string, method: string, body?: unknown): Promise<any> {
  const u = new URL(url);
  const text = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest({
      host: u.hostname, port: u.port, path: u.pathname + u.search, method, agent,
      headers: text ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) } : {},
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const json = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        if (res.statusCode! >= 300) reject(new Error(`${method} ${url}: ${res.statusCode} ${json.message}`));
        else resolve(json);
      });
    });
    req.on('error', reject);
    req.end(text);
  });
}

/**
 * The event type and the send time a write stored in `data.t`, read without a full JSON.parse: 100 watchers
 * share this process, and parsing every event would measure the benchmark client more than the server.
 */
function parseLine(line: string, at: number): { type: string; t: string; at: number } {
  const type = /^\{"type":"([A-Z]+)"/.exec(line)?.[1] ?? '';
  const t = /"t":"([\d.]+)"/.exec(line)?.[1] ?? '';
  return { type, t, at };
}

/** Opens a watch; calls `onEvent` per newline-delimited event; returns a function that closes it. */
function openWatch(url: string, onEvent: (event: any) => void): Promise<() => void> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: u.hostname, port: u.port, path: u.pathname + u.search, method: 'GET' }, (res) => {
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let nl: number;
        const at = now();
        while ((nl = buffer.indexOf('\n')) >= 0) {
          onEvent(parseLine(buffer.slice(0, nl), at));
          buffer = buffer.slice(nl + 1);
        }
      });
      res.on('error', () => undefined);
      resolve(() => req.destroy());
    });
    req.on('error', (err) => { if (!req.destroyed) reject(err); });
    req.end();
  });
}

/** One client: `count` sequential PUTs of its own ConfigMap, each carrying the RV it read. */
async function updateLoop(base: string, name: string, count: number, latencies: number[]): Promise<void> {
  const path = `${base}/api/v1/namespaces/default/configmaps`;
  let obj = await request(path, 'POST', { metadata: { name }, data: { n: '0' } });
  for (let i = 1; i <= count; i++) {
    const started = performance.now();
    obj = await request(`${path}/${name}`, 'PUT', { ...obj, data: { n: String(i) } });
    latencies.push(performance.now() - started);
  }
}

async function updates(base: string, clients: number, perClient: number, latencies: number[]): Promise<number> {
  const started = performance.now();
  await Promise.all(Array.from({ length: clients }, (_, i) => updateLoop(base, `bench-${clients}-${i}`, perClient, latencies)));
  return (clients * perClient) / ((performance.now() - started) / 1000);
}

/** 100 watchers on one ConfigMap; each write carries its send time; delivery = receive − send. */
async function watchDelivery(base: string, watchers: number, writes: number): Promise<number[]> {
  const path = `${base}/api/v1/namespaces/default/configmaps`;
  let obj = await request(path, 'POST', { metadata: { name: 'watched' }, data: { t: '0' } });
  const delays: number[] = [];
  const closers: Array<() => void> = [];
  for (let w = 0; w < watchers; w++) {
    closers.push(await openWatch(`${path}?watch=true&fieldSelector=metadata.name%3Dwatched&resourceVersion=${obj.metadata.resourceVersion}`, (event) => {
      if (event.type === 'MODIFIED') delays.push(event.at - Number(event.t));
    }));
  }
  for (let i = 0; i < writes; i++) {
    obj = await request(`${path}/watched`, 'PUT', { ...obj, data: { t: String(now()) } });
    await new Promise((r) => setTimeout(r, 10));
  }
  for (let i = 0; i < 200 && delays.length < watchers * writes; i++) await new Promise((r) => setTimeout(r, 10));
  for (const close of closers) close();
  return delays;
}

async function fill(base: string, count: number, concurrency: number): Promise<number> {
  const started = performance.now();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const i = next++;
      await request(`${base}/api/v1/persistentvolumes`, 'POST', {
        metadata: { name: `pv-${i}`, labels: { bench: 'true' } },
        spec: { capacity: { storage: '10Gi' }, accessModes: ['ReadWriteOnce'], persistentVolumeReclaimPolicy: 'Delete', storageClassName: 'standard', csi: { driver: 'bench.example.com', volumeHandle: `vol-${i}` } },
      });
      await request(`${base}/api/v1/namespaces/default/persistentvolumeclaims`, 'POST', {
        metadata: { name: `pvc-${i}`, labels: { bench: 'true' } },
        spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'standard', resources: { requests: { storage: '10Gi' } } },
      });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return (count * 2) / ((performance.now() - started) / 1000);
}

/**
 * CPU of this process per request of the functions' client over https, µs (GET, then update): over HTTP/2
 * (what kube-apiserver and the emulator pick) or, with `http1`, over HTTPS/1.1.
 */
async function clientCpu(http1 = false): Promise<{ getUs: number; updateUs: number; requests: number }> {
  const dir = await mkdtemp(join(tmpdir(), 'claimflow-bench-client-'));
  const kubeconfig = join(dir, 'kubeconfig');
  const secure = await startServer(['--authorization-mode', 'AlwaysAllow', '--write-kubeconfig', kubeconfig, ...(http1 ? ['--http1'] : [])]);
  try {
    const core = await coreV1(new KubeClients({ env: { KUBECONFIG: kubeconfig } }), 'bench');
    const requests = 3000;
    // `call(i, worker)`: each of the 10 workers has its own object.
    const measure = async (call: (i: number, worker: number) => Promise<unknown>): Promise<number> => {
      for (let i = 0; i < 200; i++) await call(i, 0); // warm: connections, JIT
      const started = process.cpuUsage();
      let next = 0;
      await Promise.all(Array.from({ length: 10 }, async (_, worker) => {
        while (next < requests) await call(next++, worker);
      }));
      const used = process.cpuUsage(started);
      return round((used.user + used.system) / requests, 0);
    };
    const getUs = await measure(() => core.readNamespace({ name: 'default' }));
    const maps = await Promise.all(Array.from({ length: 10 }, (_, i) => core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: `bench-${i}` }, data: { n: '0' } } })));
    const updateUs = await measure(async (i, worker) => {
      maps[worker] = await core.replaceNamespacedConfigMap({ name: `bench-${worker}`, namespace: 'default', body: { ...maps[worker], data: { n: String(i) } } });
    });
    return { getUs, updateUs, requests };
  } finally {
    await secure.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

const server = await startServer();
try {
  const single: number[] = [];
  const eight: number[] = [];
  const updatesPerSecond1 = await updates(server.url, 1, 3000, single);
  const updatesPerSecond8 = await updates(server.url, 8, 1000, eight);
  const delays = await watchDelivery(server.url, 100, 200);
  const rssBefore = rssMiB(server.pid);
  const createsPerSecond = await fill(server.url, 10_000, 8);
  const listStarted = performance.now();
  const list = await request(`${server.url}/api/v1/persistentvolumeclaims`, 'GET');
  const listMs = performance.now() - listStarted;
  const rssAfter = rssMiB(server.pid);
  const client = await clientCpu();
  const client1 = await clientCpu(true);
  const summary = {
    updatesPerSecond: { oneClient: round(updatesPerSecond1, 0), eightClients: round(updatesPerSecond8, 0) },
    writeLatencyMs: {
      oneClient: { p50: round(percentile(single, 50)), p99: round(percentile(single, 99)) },
      eightClients: { p50: round(percentile(eight, 50)), p99: round(percentile(eight, 99)) },
    },
    watchDeliveryMs: { watchers: 100, writes: 200, delivered: delays.length, p50: round(percentile(delays, 50)), p99: round(percentile(delays, 99)) },
    objects: { pvs: 10_000, pvcs: list.items.length, createsPerSecond: round(createsPerSecond, 0), listAllPvcsMs: round(listMs, 0) },
    rssMiB: { beforeFill: round(rssBefore, 0), with10kPvsAnd10kPvcs: round(rssAfter, 0) },
    functionsClientOverHttps: { cpuUsPerGet: client.getUs, cpuUsPerUpdate: client.updateUs, requestsEach: client.requests, concurrency: 10, protocol: 'HTTP/2' },
    functionsClientOverHttps1: { cpuUsPerGet: client1.getUs, cpuUsPerUpdate: client1.updateUs, requestsEach: client1.requests, concurrency: 10, protocol: 'HTTP/1.1' },
    targets: {
      updatesPerSecond: updatesPerSecond1 >= 1000 && updatesPerSecond8 >= 1000,
      watchP99Under20ms: percentile(delays, 99) < 20,
      rssUnder400MiB: rssAfter < 400,
    },
  };
  console.log(JSON.stringify(summary, null, 2));
} finally {
  agent.destroy();
  await server.stop();
}
