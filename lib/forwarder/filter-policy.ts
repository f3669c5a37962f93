/**
 * SNS subscription filter policies (scope `MessageAttributes`) evaluated the way SNS evaluates them, so the
 * forwarder can tell whether any subscription of its topic would deliver a message (topic-subscriptions.ts).
 *
 * Covered: a key's list of conditions (any matches), every key of a policy (all must), `$or` (one branch
 * must), exact strings, `exists` and `anything-but` with a string or a list of strings, which is what
 * serverless.yml uses. The evaluation errs towards "taken": a condition it does not know matches, and so
 * does `anything-but` on an attribute the message lacks (SNS would not deliver it; the forwarder then
 * publishes it needlessly, never skips it wrongly). `test/serverless/subscriptions.test.ts` checks it against
 * fauxqs's own evaluation for every policy serverless.yml declares.
 */
import { messageAttributes, type ClusterEvent } from '../runtime/message.ts';

/** One attribute's condition in an SNS filter policy. */
export type FilterCondition = string | { exists: boolean } | { 'anything-but': string | readonly string[] } | Readonly<Record<string, unknown>>;

/** An SNS filter policy: every attribute key must match one of its conditions, and one `$or` branch must match. */
export interface FilterPolicy {
  readonly [attribute: string]: readonly FilterCondition[] | readonly FilterPolicy[] | undefined;
  readonly $or?: readonly FilterPolicy[];
}

/** Message attributes by name: their string values. */
export type AttributeValues = Readonly<Record<string, string | undefined>>;

/** A cluster event's message attributes as their string values (what a filter policy matches on). */
export function eventAttributeValues(event: ClusterEvent): AttributeValues {
  return attributeValues(messageAttributes(event));
}

/** Message attributes as the SNS API takes them, as their string values. */
export function attributeValues(attributes: Readonly<Record<string, { StringValue?: string }>>): AttributeValues {
  const values: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(attributes)) values[name] = value.StringValue;
  return values;
}

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
    // A key whose value is not a list is not a policy SNS accepts; err towards publishing.
    if (!Array.isArray(conditions)) continue;
    if (!(conditions as readonly FilterCondition[]).some((c) => conditionMatches(c, attributes[key]))) return false;
  }
  if (policy.$or === undefined) return true;
  if (!Array.isArray(policy.$or)) return true;
  return policy.$or.some((branch) => typeof branch !== 'object' || branch === null || policyTakes(branch, attributes));
}
