/**
 * The subscriptions of the forwarder's topic, as SNS reports them, and whether any of them takes a message:
 * the forwarder publishes only the events some subscriber will receive.
 *
 * Most of a bind's watch events are the binder's own writes coming back (a volume and a claim, each
 * updated and then its status). Every claimflow subscription's filter leaves them out (`writer`,
 * `boundClaim`, `unprovisioned`, `unshared`: lib/runtime/message.ts), yet each was published, signed, sent,
 * parsed and filtered by SNS, and billed, to be delivered nowhere: four of a static bind's five publishes.
 *
 * The policies are read from the topic itself (`ListSubscriptionsByTopic`, then `GetSubscriptionAttributes`
 * per subscription), not copied from serverless.yml, so a forwarder and a stack of different releases, a
 * stage's provisioner finalizer mode and a subscriber added by hand are all seen as deployed. They are read
 * again every `refreshMs` (default a minute; SNS itself takes up to 15 minutes to apply a changed policy).
 * Everything is published (fail open) until the first read succeeds, after any failed read until one
 * succeeds, and while any subscription has no filter policy, filters on the message body, or has a policy
 * this module cannot parse. A subscription still pending confirmation receives nothing, so it is not
 * counted; once confirmed, the next read adds it.
 *
 * @example
 * const subscriptions = new TopicSubscriptions({ sns, topicArn });
 * subscriptions.start();
 * if (subscriptions.takes(eventAttributeValues(event))) await publish(event);
 * subscriptions.stop();
 */
import { GetSubscriptionAttributesCommand, ListSubscriptionsByTopicCommand, type SNSClient } from '@aws-sdk/client-sns';
import { policyTakes, type AttributeValues, type FilterPolicy } from './filter-policy.ts';

export const DEFAULT_SUBSCRIPTIONS_REFRESH_MS = 60_000;

export interface TopicSubscriptionsOptions {
  sns: SNSClient;
  topicArn: string;
  /** How often the subscriptions are read again, ms (default {@link DEFAULT_SUBSCRIPTIONS_REFRESH_MS}). */
  refreshMs?: number;
  /** A read failed (everything is published until one succeeds). */
  onError?: (err: unknown) => void;
  /** After each read: how many subscriptions filter, or 'all' when everything is published. */
  onRead?: (filtering: number | 'all') => void;
}

/** What the last read found: the confirmed subscriptions' policies, or 'all' (publish everything). */
type Known = readonly FilterPolicy[] | 'all';

export class TopicSubscriptions {
  readonly #options: TopicSubscriptionsOptions;
  #known: Known = 'all';
  #timer: NodeJS.Timeout | undefined;
  #reading: Promise<void> | undefined;
  #stopped = false;

  constructor(options: TopicSubscriptionsOptions) {
    this.#options = options;
  }

  /** Reads the subscriptions now and then every `refreshMs`. */
  start(): void {
    this.#stopped = false;
    void this.refresh();
    const every = this.#options.refreshMs ?? DEFAULT_SUBSCRIPTIONS_REFRESH_MS;
    this.#timer = setInterval(() => void this.refresh(), every);
    this.#timer.unref();
  }

  stop(): void {
    this.#stopped = true;
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Whether some subscription of the topic takes a message with these attributes (true while unknown). */
  takes(attributes: AttributeValues): boolean {
    const known = this.#known;
    return known === 'all' || known.some((policy) => policyTakes(policy, attributes));
  }

  /**
   * Resolves when the read under way (the first, right after start()) has ended, or after `timeoutMs`:
   * the forwarder's leader waits for it before its watches start, so its first events are filtered too.
   */
  async settled(timeoutMs: number): Promise<void> {
    const reading = this.#reading;
    if (!reading) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([reading, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
    clearTimeout(timer);
  }

  /** Reads the subscriptions once (a read under way is joined); never throws. */
  refresh(): Promise<void> {
    this.#reading ??= this.#read().finally(() => (this.#reading = undefined));
    return this.#reading;
  }

  async #read(): Promise<void> {
    let known: Known;
    try {
      known = await this.#readPolicies();
    } catch (err) {
      known = 'all';
      this.#options.onError?.(err);
    }
    if (this.#stopped) return;
    this.#known = known;
    this.#options.onRead?.(known === 'all' ? 'all' : known.length);
  }

  async #readPolicies(): Promise<Known> {
    const { sns, topicArn } = this.#options;
    const arns: string[] = [];
    let nextToken: string | undefined;
    do {
      const page = await sns.send(new ListSubscriptionsByTopicCommand({ TopicArn: topicArn, ...(nextToken ? { NextToken: nextToken } : {}) }));
      // A subscription pending confirmation is listed with the ARN 'PendingConfirmation': it receives nothing yet.
      for (const s of page.Subscriptions ?? []) if (s.SubscriptionArn?.startsWith('arn:')) arns.push(s.SubscriptionArn);
      nextToken = page.NextToken;
    } while (nextToken);
    const policies: FilterPolicy[] = [];
    for (const arn of arns) {
      let attributes: Record<string, string>;
      try {
        attributes = (await sns.send(new GetSubscriptionAttributesCommand({ SubscriptionArn: arn }))).Attributes ?? {};
      } catch (err) {
        // Unsubscribed between the list and this read: it receives nothing.
        if ((err as { name?: string }).name === 'NotFoundException' || (err as { name?: string }).name === 'NotFound') continue;
        throw err;
      }
      const policy = parsePolicy(attributes);
      if (policy === 'all') return 'all';
      policies.push(policy);
    }
    return policies;
  }
}

/** A subscription's filter policy, or 'all' when it takes every message as far as this module can tell. */
function parsePolicy(attributes: Readonly<Record<string, string>>): FilterPolicy | 'all' {
  const text = attributes.FilterPolicy;
  if (!text) return 'all';
  if ((attributes.FilterPolicyScope ?? 'MessageAttributes') !== 'MessageAttributes') return 'all';
  try {
    const policy: unknown = JSON.parse(text);
    return policy && typeof policy === 'object' && !Array.isArray(policy) ? (policy as FilterPolicy) : 'all';
  } catch {
    return 'all';
  }
}
