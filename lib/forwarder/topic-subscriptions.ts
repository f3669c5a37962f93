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
 * again every `refreshMs` (default a minute). A subscription added or widened therefore counts from the next
 * read: events only it takes, seen before then, are cached and not published (SNS itself takes up to 15
 * minutes to apply a changed filter policy; the controllers' resyncs pick up what is still to do).
 *
 * Everything is published (fail open): until the first read succeeds; after a failed read, until one
 * succeeds; when the last successful read is older than {@link STALE_AFTER_REFRESHES} refreshes (a read that
 * hangs: each request is also cut at {@link REQUEST_TIMEOUT_MS}); and while any subscription has no filter
 * policy, filters on the message body, or has a policy this module cannot parse. A subscription still
 * pending confirmation receives nothing, so it is not counted; once confirmed, the next read adds it.
 *
 * @example
 * const subscriptions = new TopicSubscriptions({ sns, topicArn });
 * subscriptions.start();
 * await subscriptions.settled(5_000);
 * if (subscriptions.takes(eventAttributeValues(event))) await publish(event);
 * subscriptions.stop();
 */
import { GetSubscriptionAttributesCommand, ListSubscriptionsByTopicCommand, type SNSClient } from '@aws-sdk/client-sns';
import { policyTakes, type AttributeValues, type FilterPolicy } from './filter-policy.ts';

export const DEFAULT_SUBSCRIPTIONS_REFRESH_MS = 60_000;
/** Each SNS request of a read is cut after this long, ms (the read then fails: everything is published). */
export const REQUEST_TIMEOUT_MS = 10_000;
/** The policies read count for this many refreshes; older ones publish everything. */
export const STALE_AFTER_REFRESHES = 3;

export interface TopicSubscriptionsOptions {
  sns: SNSClient;
  topicArn: string;
  /** How often the subscriptions are read again, ms (default {@link DEFAULT_SUBSCRIPTIONS_REFRESH_MS}). */
  refreshMs?: number;
  /** Each SNS request is cut after this long, ms (default {@link REQUEST_TIMEOUT_MS}). */
  requestTimeoutMs?: number;
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
  /** When `#known` was read (epoch ms). */
  #readAt = 0;
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

  /** Whether some subscription of the topic takes a message with these attributes (true while unknown or stale). */
  takes(attributes: AttributeValues): boolean {
    const known = this.#known;
    if (known === 'all') return true;
    if (Date.now() - this.#readAt > STALE_AFTER_REFRESHES * (this.#options.refreshMs ?? DEFAULT_SUBSCRIPTIONS_REFRESH_MS)) return true;
    return known.some((policy) => policyTakes(policy, attributes));
  }

  /**
   * Resolves when the read under way (the first, right after start()) has ended, or after `timeoutMs`:
   * the forwarder waits for it before it starts leading, so its first events are filtered too.
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
    let failure: unknown;
    try {
      known = await this.#readPolicies();
    } catch (err) {
      known = 'all';
      failure = err;
    }
    if (this.#stopped) return;
    this.#known = known;
    this.#readAt = Date.now();
    // A callback that throws must not make the read reject (it runs from a timer, and the leader waits on it).
    try {
      if (failure !== undefined) this.#options.onError?.(failure);
      this.#options.onRead?.(known === 'all' ? 'all' : known.length);
    } catch {
      // nothing to do: the state above is what matters
    }
  }

  async #readPolicies(): Promise<Known> {
    const { sns, topicArn } = this.#options;
    const arns: string[] = [];
    let nextToken: string | undefined;
    do {
      const page = await sns.send(new ListSubscriptionsByTopicCommand({ TopicArn: topicArn, ...(nextToken ? { NextToken: nextToken } : {}) }), { abortSignal: AbortSignal.timeout(this.#options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS) });
      // A subscription pending confirmation is listed with the ARN 'PendingConfirmation': it receives nothing yet.
      for (const s of page.Subscriptions ?? []) if (s.SubscriptionArn?.startsWith('arn:')) arns.push(s.SubscriptionArn);
      nextToken = page.NextToken;
    } while (nextToken);
    const policies: FilterPolicy[] = [];
    for (const arn of arns) {
      let attributes: Record<string, string>;
      try {
        attributes = (await sns.send(new GetSubscriptionAttributesCommand({ SubscriptionArn: arn }), { abortSignal: AbortSignal.timeout(this.#options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS) })).Attributes ?? {};
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
