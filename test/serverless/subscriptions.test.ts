/**
 * The forwarder publishes only what one of claimflow's subscriptions takes (lib/runtime/subscriptions.ts).
 * That is safe only while its copy of the filter policies is serverless.yml's, and while its evaluation
 * says "taken" wherever SNS would deliver. Both are checked here: against the template osls compiles
 * (every subscription of the topic, both provisioner finalizer modes), and against fauxqs's own filter
 * evaluation (the one the local stack delivers with) for every combination of the attributes the
 * forwarder sets.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { compileTemplate, type CfnTemplate } from '../../infra/local/stack/template.ts';
import { activeResources, referencedId } from '../../infra/local/stack/wiring.ts';
import { messageAttributes, WATCHED_KINDS, type ClusterEvent } from '../../lib/runtime/message.ts';
import { anySubscriptionTakes, policyTakes, SUBSCRIPTION_POLICIES, type AttributeValues, type FilterPolicy } from '../../lib/runtime/subscriptions.ts';

/** Each controller's queue, by the name subscriptions.ts lists it under. */
const QUEUES: Record<string, string> = { binder: 'BinderQueue', provisioner: 'ProvisionerQueue', 'shared-volume': 'SharedVolumeQueue', 'label-sync': 'LabelSyncQueue' };

/** Every subscription of the cluster-events topic that CloudFormation would create: queue logical id → policy. */
function topicSubscriptions(template: CfnTemplate): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const resource of Object.values(activeResources(template))) {
    if (resource.Type !== 'AWS::SNS::Subscription' || referencedId(resource.Properties!.TopicArn) !== 'ClusterEventsTopic') continue;
    assert.equal(resource.Properties!.FilterPolicyScope, 'MessageAttributes');
    out.set(referencedId(resource.Properties!.Endpoint), resource.Properties!.FilterPolicy);
  }
  return out;
}

let templates: Array<[string, CfnTemplate]>;
/** fauxqs's filter evaluation (not in its package exports: loaded from beside its entry point). */
let matchesFilterPolicy: (policy: Record<string, unknown>, attributes: Record<string, { DataType: string; StringValue: string }>) => boolean;

before(async () => {
  ({ matchesFilterPolicy } = (await import(new URL('./sns/filter.js', import.meta.resolve('fauxqs')).href)) as { matchesFilterPolicy: typeof matchesFilterPolicy });
  templates = await Promise.all(
    ['false', 'true'].map(async (value) => [`provisionerAddFinalizer=${value}`, await compileTemplate({ stage: 'dev', region: 'eu-west-1', params: { provisionerAddFinalizer: value } })] as [string, CfnTemplate]),
  );
});

describe('the subscriptions the forwarder publishes for', () => {
  it('are serverless.yml\'s: every subscription of the topic, in both finalizer modes, and no other policy', () => {
    const used = new Set<FilterPolicy>();
    for (const [mode, template] of templates) {
      const subscriptions = topicSubscriptions(template);
      assert.deepEqual([...subscriptions.keys()].sort(), Object.values(QUEUES).sort(), `${mode}: one subscription per controller`);
      for (const [controller, queue] of Object.entries(QUEUES)) {
        const declared = subscriptions.get(queue);
        const copy = SUBSCRIPTION_POLICIES[controller].find((policy) => JSON.stringify(sorted(policy)) === JSON.stringify(sorted(declared)));
        assert.ok(copy, `${mode}: ${controller}'s policy ${JSON.stringify(declared)} is in subscriptions.ts`);
        used.add(copy);
      }
    }
    const listed = Object.values(SUBSCRIPTION_POLICIES).flat();
    assert.equal(used.size, listed.length, 'every listed policy is one serverless.yml declares');
  });

  it('are taken exactly where fauxqs delivers, for every combination of the attributes the forwarder sets', () => {
    let taken = 0;
    let left = 0;
    for (const attributes of attributeCombinations()) {
      for (const [controller, policies] of Object.entries(SUBSCRIPTION_POLICIES)) {
        for (const policy of policies) {
          const fauxqs = matchesFilterPolicy(policy as Record<string, unknown>, asFauxqs(attributes));
          assert.equal(policyTakes(policy, attributes), fauxqs, `${controller} ${JSON.stringify(policy)} on ${JSON.stringify(attributes)}`);
        }
      }
      if (anySubscriptionTakes(attributes)) taken++;
      else left++;
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

  it('leave out a static bind\'s own writes coming back, and take what the controllers act on', () => {
    const claim = { metadata: { name: 'c', namespace: 'ns' }, spec: { accessModes: ['ReadWriteOnce'], volumeName: 'pv1' } };
    const volume = { metadata: { name: 'pv1' }, spec: { claimRef: { name: 'c', namespace: 'ns' } }, status: { phase: 'Bound' } };
    const takes = (event: Partial<ClusterEvent>) => anySubscriptionTakes(values({ v: 1, cluster: 'c1', uid: 'u', resourceVersion: '5', observedAt: new Date(0).toISOString(), ...event } as ClusterEvent));
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

/** Every combination of the attributes the forwarder sets (messageAttributes), as string values. */
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
  return Object.fromEntries(Object.entries(attributes).flatMap(([name, value]) => (value === undefined ? [] : [[name, { DataType: 'String', StringValue: value }]])));
}

function values(event: ClusterEvent): AttributeValues {
  return Object.fromEntries(Object.entries(messageAttributes(event)).map(([name, v]) => [name, v.StringValue]));
}

/** A JSON value with its object keys sorted, so two policies compare by content. */
function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted);
  if (!value || typeof value !== 'object') return value;
  return Object.fromEntries(Object.keys(value).sort().map((k) => [k, sorted((value as Record<string, unknown>)[k])]));
}
