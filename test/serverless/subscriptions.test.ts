/**
 * The forwarder publishes only what some subscription of its topic takes, evaluating each subscription's
 * filter policy itself (lib/forwarder/filter-policy.ts, the policies read from SNS:
 * lib/forwarder/topic-subscriptions.ts). That is safe only while its evaluation says "taken" wherever SNS
 * would deliver. Checked here against fauxqs's own filter evaluation (the one the local stack delivers
 * with), for every filter policy serverless.yml can deploy (each `Fn::If` both ways) and every combination
 * of the attributes the forwarder sets.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { compileTemplate, type CfnTemplate } from '../../infra/local/stack/template.ts';
import { referencedId, resolveIfs } from '../../infra/local/stack/wiring.ts';
import { WATCHED_KINDS, type ClusterEvent } from '../../lib/runtime/message.ts';
import { eventAttributeValues, policyTakes, type AttributeValues, type FilterPolicy } from '../../lib/forwarder/filter-policy.ts';

let template: CfnTemplate;
/** fauxqs's filter evaluation (not in its package exports: loaded from beside its entry point). */
let matchesFilterPolicy: (policy: Record<string, unknown>, attributes: Record<string, { DataType: string; StringValue: string }>) => boolean;

before(async () => {
  template = await compileTemplate({ stage: 'dev', region: 'eu-west-1' });
  ({ matchesFilterPolicy } = (await import(new URL('./sns/filter.js', import.meta.resolve('fauxqs')).href)) as { matchesFilterPolicy: typeof matchesFilterPolicy });
});

/** Every value `value` can take: each `Fn::If` both ways (conditions or parameters aside). */
function variants(value: unknown): unknown[] {
  if (Array.isArray(value)) {
    return value.reduce<unknown[][]>((acc, item) => acc.flatMap((prefix) => variants(item).map((v) => [...prefix, v])), [[]]);
  }
  if (!value || typeof value !== 'object') return [value];
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 1 && entries[0][0] === 'Fn::If') {
    const [, then, otherwise] = entries[0][1] as [string, unknown, unknown];
    return [...variants(then), ...variants(otherwise)];
  }
  return entries.reduce<Array<Record<string, unknown>>>(
    (acc, [key, v]) => acc.flatMap((prefix) => variants(v).map((x) => ({ ...prefix, [key]: x }))),
    [{}],
  );
}

/** Every filter policy a subscription of the cluster-events topic can be deployed with, by queue. */
function deployablePolicies(): Array<[string, FilterPolicy]> {
  const out: Array<[string, FilterPolicy]> = [];
  for (const resource of Object.values(template.Resources)) {
    if (resource.Type !== 'AWS::SNS::Subscription' || referencedId(resource.Properties!.TopicArn) !== 'ClusterEventsTopic') continue;
    assert.equal(resource.Properties!.FilterPolicyScope, 'MessageAttributes');
    for (const policy of variants(resource.Properties!.FilterPolicy)) out.push([referencedId(resource.Properties!.Endpoint), policy as FilterPolicy]);
  }
  return out;
}

describe('the forwarder\'s filter policy evaluation', () => {
  it('finds every subscription serverless.yml deploys, the provisioner\'s in both finalizer modes', () => {
    const queues = deployablePolicies().map(([queue]) => queue).sort();
    assert.deepEqual(queues, ['BinderQueue', 'LabelSyncQueue', 'ProvisionerQueue', 'ProvisionerQueue', 'SharedVolumeQueue']);
  });

  it('takes exactly what fauxqs delivers, for every deployable policy and every combination of the attributes the forwarder sets', () => {
    let taken = 0;
    let left = 0;
    for (const [queue, policy] of deployablePolicies()) {
      for (const attributes of attributeCombinations()) {
        const delivered = matchesFilterPolicy(policy as Record<string, unknown>, asFauxqs(attributes));
        assert.equal(policyTakes(policy, attributes), delivered, `${queue} ${JSON.stringify(policy)} on ${JSON.stringify(attributes)}`);
        if (delivered) taken++;
        else left++;
      }
    }
    assert.ok(taken > 0 && left > 0, `both outcomes were tried (${taken} taken, ${left} left out)`);
  });

  it('a condition it does not know, or anything-but on a missing attribute, counts as taken (it errs towards publishing)', () => {
    assert.equal(policyTakes({ kind: [{ prefix: 'Persistent' }] }, { kind: 'Node' }), true);
    assert.equal(policyTakes({ size: [{ numeric: ['>', 3] }] }, {}), true);
    assert.equal(policyTakes({ writer: [{ 'anything-but': ['binder'] }] }, {}), true);
    assert.equal(policyTakes({ writer: [{ 'anything-but': 'binder' }] }, { writer: 'binder' }), false);
    assert.equal(policyTakes({ kind: ['Node'] }, { kind: 'Service' }), false);
  });

  it('with the default deployment: a static bind\'s own writes are taken by none; what a controller acts on is taken', () => {
    const deployed = Object.values(template.Resources)
      .filter((r) => r.Type === 'AWS::SNS::Subscription' && referencedId(r.Properties!.TopicArn) === 'ClusterEventsTopic')
      .map((r) => resolveIfs(template, r.Properties!.FilterPolicy) as FilterPolicy);
    const claim = { metadata: { name: 'c', namespace: 'ns' }, spec: { accessModes: ['ReadWriteOnce'], volumeName: 'pv1' } };
    const volume = { metadata: { name: 'pv1' }, spec: { claimRef: { name: 'c', namespace: 'ns' } }, status: { phase: 'Bound' } };
    const takes = (event: Partial<ClusterEvent>) =>
      deployed.some((policy) => policyTakes(policy, eventAttributeValues({ v: 1, cluster: 'c1', uid: 'u', resourceVersion: '5', observedAt: new Date(0).toISOString(), ...event } as ClusterEvent)));
    // The binder's writes, written back by it (tagged): nothing takes them.
    assert.equal(takes({ kind: 'PersistentVolumeClaim', type: 'MODIFIED', key: 'ns/c', object: claim, writer: 'binder' }), false);
    assert.equal(takes({ kind: 'PersistentVolume', type: 'MODIFIED', key: 'pv1', object: volume, writer: 'binder' }), false);
    // The same versions untagged (a user's edit, or a write-back not seen in time): the binder takes them.
    assert.equal(takes({ kind: 'PersistentVolumeClaim', type: 'MODIFIED', key: 'ns/c', object: claim }), true);
    assert.equal(takes({ kind: 'PersistentVolume', type: 'MODIFIED', key: 'pv1', object: volume }), true);
    // A claim the binder annotated for a provisioner: the provisioner takes it.
    const asked = { ...claim, metadata: { ...claim.metadata, annotations: { 'volume.kubernetes.io/storage-provisioner': 'x' } }, spec: { accessModes: ['ReadWriteOnce'] } };
    assert.equal(takes({ kind: 'PersistentVolumeClaim', type: 'MODIFIED', key: 'ns/c', object: asked, writer: 'binder' }), true);
    // A ReadWriteMany claim bound by the binder: the shared-volume controller takes it.
    const shared = { ...claim, spec: { ...claim.spec, accessModes: ['ReadWriteMany'] } };
    assert.equal(takes({ kind: 'PersistentVolumeClaim', type: 'MODIFIED', key: 'ns/c', object: shared, writer: 'binder' }), true);
    // Deletions go everywhere; nodes to label sync.
    assert.equal(takes({ kind: 'PersistentVolume', type: 'DELETED', key: 'pv1', object: volume, writer: 'binder' }), true);
    assert.equal(takes({ kind: 'Node', type: 'MODIFIED', key: 'n1', object: { metadata: { name: 'n1' } } }), true);
  });
});

/** Every combination of the attributes the forwarder sets (lib/runtime/message.ts messageAttributes), as string values. */
function* attributeCombinations(): Generator<AttributeValues> {
  const flags = ['boundClaim', 'unprovisioned', 'unshared', 'unreleased'];
  for (const kind of WATCHED_KINDS) {
    for (const type of ['ADDED', 'MODIFIED', 'DELETED', 'SYNC']) {
      for (const writer of ['cluster', 'binder', 'provisioner', 'shared-volume']) {
        for (let mask = 0; mask < 1 << flags.length; mask++) {
          const attributes: Record<string, string> = { kind, cluster: 'c1', type, writer };
          flags.forEach((flag, i) => {
            if (mask & (1 << i)) attributes[flag] = 'true';
          });
          yield attributes;
        }
      }
    }
  }
}

/** A message's attributes as fauxqs's evaluation takes them. */
function asFauxqs(attributes: AttributeValues): Record<string, { DataType: string; StringValue: string }> {
  const out: Record<string, { DataType: string; StringValue: string }> = {};
  for (const [name, value] of Object.entries(attributes)) if (value !== undefined) out[name] = { DataType: 'String', StringValue: value };
  return out;
}
