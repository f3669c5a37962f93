/**
 * The filter policies of claimflow's subscriptions to its cluster-events topic, as data, and whether any
 * of them takes a message: the forwarder publishes only the events some controller's queue will receive.
 *
 * Most of a bind's watch events are the binder's own writes coming back (a volume and a claim, each
 * updated and then its status). Every subscription's filter leaves them out (`writer`, `boundClaim`,
 * `unprovisioned`, `unshared`: lib/runtime/message.ts), yet each was still published, signed, sent, parsed
 * and filtered by SNS, to be delivered nowhere: four of a static bind's five publishes. The cache write of
 * such an event (the informer cache) is made as before; only the publish is left out.
 *
 * serverless.yml declares the policies; this module holds the same ones, and
 * `test/serverless/subscriptions.test.ts` fails when the two differ (every subscription of the topic, in
 * both provisioner finalizer modes: both variants are listed, so an event either mode takes is published
 * whichever is deployed). The evaluation errs towards publishing: a condition it does not know matches.
 *
 * A subscription added to the topic outside serverless.yml would not see what none of these takes; the
 * forwarder's `--publish-all` (`PUBLISH_ALL=true`) publishes every event for such a subscriber.
 */

/** One attribute's condition in an SNS filter policy (scope `MessageAttributes`, String attributes). */
export type FilterCondition = string | { exists: boolean } | { 'anything-but': string | readonly string[] } | Readonly<Record<string, unknown>>;

/** An SNS filter policy: every attribute key must match one of its conditions, and one `$or` branch must match. */
export interface FilterPolicy {
  readonly [attribute: string]: readonly FilterCondition[] | readonly FilterPolicy[] | undefined;
  readonly $or?: readonly FilterPolicy[];
}

const notWrittenBy = (writer: string): readonly FilterPolicy[] => [{ writer: [{ exists: false }] }, { writer: [{ 'anything-but': [writer] }] }];

/**
 * Each controller's subscription filter policies, as serverless.yml declares them (`<Controller>Subscription`).
 * The provisioner's are its two variants: `provisionerAddFinalizer` on, then off (`unreleased` left out).
 */
export const SUBSCRIPTION_POLICIES: Readonly<Record<string, readonly FilterPolicy[]>> = {
  binder: [{ kind: ['PersistentVolume', 'PersistentVolumeClaim', 'StorageClass'], $or: notWrittenBy('binder') }],
  provisioner: [
    {
      kind: ['PersistentVolumeClaim', 'PersistentVolume', 'StorageClass', 'VolumeAttachment'],
      boundClaim: [{ exists: false }],
      unprovisioned: [{ exists: false }],
      $or: notWrittenBy('provisioner'),
    },
    {
      kind: ['PersistentVolumeClaim', 'PersistentVolume', 'StorageClass', 'VolumeAttachment'],
      boundClaim: [{ exists: false }],
      unprovisioned: [{ exists: false }],
      unreleased: [{ exists: false }],
      $or: notWrittenBy('provisioner'),
    },
  ],
  'shared-volume': [{ kind: ['VolumeAttachment', 'PersistentVolumeClaim', 'Service', 'Endpoints'], unshared: [{ exists: false }] }],
  'label-sync': [{ kind: ['Node'] }],
};

/** Message attributes by name: their string values. */
export type AttributeValues = Readonly<Record<string, string | undefined>>;

/** Whether `condition` matches the attribute's value (undefined: the message lacks it); unknown conditions match. */
function conditionMatches(condition: FilterCondition, value: string | undefined): boolean {
  if (typeof condition === 'string') return value === condition;
  if (typeof condition !== 'object' || condition === null) return true;
  const keys = Object.keys(condition);
  if (keys.length !== 1) return true;
  if (keys[0] === 'exists' && typeof (condition as { exists?: unknown }).exists === 'boolean') return (condition as { exists: boolean }).exists === (value !== undefined);
  if (keys[0] === 'anything-but') {
    const excluded = (condition as { 'anything-but': unknown })['anything-but'];
    const list = typeof excluded === 'string' ? [excluded] : excluded;
    // A missing attribute is left to SNS (it does not match there); here it errs towards publishing.
    if (!Array.isArray(list) || !list.every((v) => typeof v === 'string') || value === undefined) return true;
    return !list.includes(value);
  }
  return true;
}

/** Whether SNS would deliver a message with these attributes through a subscription with `policy`. */
export function policyTakes(policy: FilterPolicy, attributes: AttributeValues): boolean {
  for (const [key, conditions] of Object.entries(policy)) {
    if (key === '$or' || conditions === undefined) continue;
    if (!(conditions as readonly FilterCondition[]).some((c) => conditionMatches(c, attributes[key]))) return false;
  }
  return policy.$or === undefined || policy.$or.some((branch) => policyTakes(branch, attributes));
}

/** Whether any of claimflow's subscriptions takes a message with these attributes. */
export function anySubscriptionTakes(attributes: AttributeValues, policies: Readonly<Record<string, readonly FilterPolicy[]>> = SUBSCRIPTION_POLICIES): boolean {
  for (const list of Object.values(policies)) for (const policy of list) if (policyTakes(policy, attributes)) return true;
  return false;
}
