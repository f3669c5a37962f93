/**
 * The forwarder's Deployment is locked down as the restricted Pod Security Standard asks, and runs an image
 * pinned by digest: non-root, read-only root filesystem, no privilege escalation, every capability dropped,
 * seccomp RuntimeDefault, no host namespaces, CPU and memory requests and limits; `kubectl kustomize
 * infra/k8s` renders the image as `<name>@sha256:<digest>` (the kustomization pins it).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { PROJECT_ROOT } from '../../infra/build/bundle.ts';

const dir = join(PROJECT_ROOT, 'infra/k8s');
const deployment = parseAllDocuments(readFileSync(join(dir, 'deployment.yaml'), 'utf8')).map((d) => d.toJS()).find((d) => d.kind === 'Deployment');
const kustomization = parseYaml(readFileSync(join(dir, 'kustomization.yaml'), 'utf8'));
const DIGEST = /^sha256:[0-9a-f]{64}$/;

/** The restricted checks on one rendered pod template. */
function assertLockedDown(pod: any): void {
  assert.equal(pod.securityContext.runAsNonRoot, true, 'runAsNonRoot');
  assert.ok(pod.securityContext.runAsUser > 0, 'a non-zero uid');
  assert.deepEqual(pod.securityContext.seccompProfile, { type: 'RuntimeDefault' });
  for (const field of ['hostNetwork', 'hostPID', 'hostIPC']) assert.ok(!pod[field], field);
  assert.ok(!(pod.volumes ?? []).some((v: any) => v.hostPath), 'no hostPath volume');
  for (const c of [...pod.containers, ...(pod.initContainers ?? [])]) {
    const sc = c.securityContext;
    assert.equal(sc.allowPrivilegeEscalation, false, `${c.name}: allowPrivilegeEscalation`);
    assert.equal(sc.readOnlyRootFilesystem, true, `${c.name}: readOnlyRootFilesystem`);
    assert.deepEqual(sc.capabilities.drop, ['ALL'], `${c.name}: capabilities`);
    assert.ok(!sc.capabilities.add?.length, `${c.name}: adds no capability`);
    assert.ok(!sc.privileged, `${c.name}: not privileged`);
    assert.ok(sc.runAsUser === undefined || sc.runAsUser > 0, `${c.name}: not root`);
    for (const kind of ['requests', 'limits']) {
      for (const resource of ['cpu', 'memory']) assert.ok(c.resources?.[kind]?.[resource], `${c.name}: ${kind}.${resource}`);
    }
    assert.ok(!(c.ports ?? []).some((p: any) => p.hostPort), `${c.name}: no hostPort`);
  }
}

describe('infra/k8s: the forwarder Deployment', () => {
  it('is non-root, read-only, unprivileged, seccomp RuntimeDefault, with requests and limits', () => {
    assertLockedDown(deployment.spec.template.spec);
  });

  it('keeps the Prometheus scrape annotations its monitoring relies on', () => {
    assert.equal(deployment.spec.template.metadata.annotations['prometheus.io/scrape'], 'true');
  });

  it('pins its image by digest in the kustomization, and deployment.yaml carries no moving tag', () => {
    const [container] = deployment.spec.template.spec.containers;
    assert.doesNotMatch(container.image, /:[^/]+$/, 'no tag in deployment.yaml');
    const pinned = (kustomization.images ?? []).find((i: any) => i.name === container.image);
    assert.ok(pinned, `kustomization.yaml images: pins ${container.image}`);
    assert.match(pinned.digest, DIGEST);
    assert.equal(pinned.newTag, undefined, 'a digest, not a tag');
  });

  const kubectl = spawnSync('kubectl', ['version', '--client', '-o', 'json'], { encoding: 'utf8' }).status === 0;
  it('kubectl kustomize renders the pinned image and keeps every security setting', { skip: !kubectl && 'kubectl is not installed' }, async () => {
    const { stdout } = await promisify(execFile)('kubectl', ['kustomize', dir], { env: { PATH: process.env.PATH, HOME: dir }, timeout: 30_000 });
    const rendered = parseAllDocuments(stdout).map((d) => d.toJS()).find((d) => d.kind === 'Deployment');
    const [container] = rendered.spec.template.spec.containers;
    const [name, digest] = container.image.split('@');
    assert.equal(name, deployment.spec.template.spec.containers[0].image);
    assert.match(digest, DIGEST);
    assertLockedDown(rendered.spec.template.spec);
  });
});
