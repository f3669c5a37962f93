/**
 * The ServiceMonitor-free Prometheus scrape example (infra/k8s/monitoring/prometheus-scrape.yaml): it keeps
 * exactly the forwarder pods (claimflow namespace, app label, scrape annotation), scrapes the port and path
 * the Deployment's annotations name — the container's http port and the server's /metrics — and stays out
 * of `kubectl apply -k infra/k8s` (it is Prometheus configuration, not a Kubernetes object).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse, parseAllDocuments } from 'yaml';
import { startHealthServer } from '../../lib/forwarder/server.ts';
import { ForwarderMetrics } from '../../lib/forwarder/metrics.ts';

const dir = new URL('../../infra/k8s/', import.meta.url);
const scrape = parse(readFileSync(new URL('monitoring/prometheus-scrape.yaml', dir), 'utf8'));
const deployment = parseAllDocuments(readFileSync(new URL('deployment.yaml', dir), 'utf8')).map((d) => d.toJS()).find((d: any) => d.kind === 'Deployment');

/** Applies the job's relabel rules (keep / replace, as Prometheus does) to a pod's discovered labels. */
function relabel(rules: any[], labels: Record<string, string>): Record<string, string> | null {
  const out = { ...labels };
  for (const rule of rules) {
    const value = (rule.source_labels ?? []).map((l: string) => out[l] ?? '').join(rule.separator ?? ';');
    const regex = new RegExp(`^(?:${rule.regex ?? '(.*)'})$`);
    const match = regex.exec(value);
    const action = rule.action ?? 'replace';
    if (action === 'keep' && !match) return null;
    if (action === 'replace' && match) {
      out[rule.target_label] = (rule.replacement ?? '$1').replace(/\$(\d)/g, (_: string, i: string) => match[Number(i)] ?? '');
    }
  }
  return out;
}

const podLabels = (over: Record<string, string> = {}): Record<string, string> => {
  const annotations = deployment.spec.template.metadata.annotations;
  const labels = deployment.spec.template.metadata.labels;
  return {
    __address__: '10.0.0.7:8080',
    __metrics_path__: '/metrics',
    __meta_kubernetes_namespace: deployment.metadata.namespace,
    __meta_kubernetes_pod_name: 'claimflow-forwarder-abc',
    ...Object.fromEntries(Object.entries(labels).map(([k, v]) => [`__meta_kubernetes_pod_label_${k.replace(/[^a-zA-Z0-9_]/g, '_')}`, String(v)])),
    ...Object.fromEntries(Object.entries(annotations).map(([k, v]) => [`__meta_kubernetes_pod_annotation_${k.replace(/[^a-zA-Z0-9_]/g, '_')}`, String(v)])),
    ...over,
  };
};

test('scrapes the forwarder pods on the port and path their annotations name', () => {
  const [job] = scrape.scrape_configs;
  assert.equal(job.kubernetes_sd_configs[0].role, 'pod');
  assert.deepEqual(job.kubernetes_sd_configs[0].namespaces.names, [deployment.metadata.namespace]);
  const target = relabel(job.relabel_configs, podLabels());
  assert.ok(target, 'the forwarder pod is kept');
  const httpPort = deployment.spec.template.spec.containers[0].ports.find((p: any) => p.name === 'http').containerPort;
  assert.equal(target.__address__, `10.0.0.7:${httpPort}`);
  assert.equal(target.__metrics_path__, '/metrics');
  assert.deepEqual([target.namespace, target.pod], ['claimflow', 'claimflow-forwarder-abc']);
  assert.equal(relabel(job.relabel_configs, podLabels({ __meta_kubernetes_pod_label_app_kubernetes_io_name: 'other' })), null, 'other pods are not');
  assert.equal(relabel(job.relabel_configs, podLabels({ __meta_kubernetes_pod_annotation_prometheus_io_scrape: 'false' })), null, 'nor a pod that opts out');
  const moved = relabel(job.relabel_configs, podLabels({ __meta_kubernetes_pod_annotation_prometheus_io_port: '9100' }));
  assert.equal(moved?.__address__, '10.0.0.7:9100');
});

test('the annotated path serves the forwarder metrics, heartbeat included', async () => {
  const metrics = new ForwarderMetrics();
  const { server, port } = await startHealthServer({ healthy: () => true, ready: () => true, registry: metrics.registry }, 0, '127.0.0.1');
  try {
    const path = deployment.spec.template.metadata.annotations['prometheus.io/path'];
    const text = await (await fetch(`http://127.0.0.1:${port}${path}`)).text();
    for (const name of ['claimflow_forwarder_is_leader', 'claimflow_forwarder_heartbeat_timestamp_seconds', 'claimflow_forwarder_heartbeat_errors_total', 'claimflow_forwarder_publish_errors_total']) {
      assert.match(text, new RegExp(`^# TYPE ${name} `, 'm'), name);
    }
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

test('is not part of kubectl apply -k infra/k8s', () => {
  const kustomization = parse(readFileSync(new URL('kustomization.yaml', dir), 'utf8'));
  assert.ok(kustomization.resources.every((r: string) => !r.startsWith('monitoring')));
});
