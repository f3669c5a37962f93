/**
 * KubeEventRecorder's correlation state (lib/kube/recorder.ts): one control-table item per (cluster, source,
 * involvedObject), read once and written once (conditionally on its version) per event. Real dynalite and the
 * Kubernetes API emulator; several recorders on one table stand for several Lambda containers.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { CoreV1Api, KubeConfig, type CoreV1Event } from '@kubernetes/client-node';
import { startKubeApi, type KubeApi } from '../../infra/local/kube-api/index.ts';
import { AGGREGATE_MAX_EVENTS, COMBINED_PREFIX, KubeEventRecorder, SPAM_BURST, type InvolvedObject } from '../../lib/kube/recorder.ts';
import { KubeJsonApi } from '../../lib/kube/json-api.ts';
import type { DocumentClient } from '../../lib/state/client.ts';
import { startDynalite, type Dynalite } from '../support/dynalite.ts';

const CLUSTER = 'c1';
const COMPONENT = 'persistentvolume-controller';
const sha = (value: string): string => createHash('sha256').update(value).digest('hex');

/** The keys the recorder derives (its module comment), to find its item and to plant older records. */
function keysOf(object: InvolvedObject, type: string, reason: string) {
  const meta = object.metadata ?? {};
  const namespace = meta.namespace || 'default';
  const spamKey = JSON.stringify([COMPONENT, '', object.kind ?? '', namespace, meta.name, meta.uid ?? '', object.apiVersion ?? '']);
  const aggregateKey = JSON.stringify([COMPONENT, '', object.apiVersion ?? '', object.kind ?? '', namespace, meta.name, meta.uid ?? '', '', type, reason]);
  return { spamKey, aggregateKey, pk: `event#${CLUSTER}#${sha(spamKey)}` };
}

interface StoredItem {
  pk: string;
  version: number;
  tokens: number;
  updatedAt: number;
  aggregates: Record<string, { messages: string[]; lastTimestamp: number }>;
  events: Record<string, { name: string; count: number; firstTimestamp: number; validUntil: number }>;
  expiresAt: number;
}

/** Lets `parties` callers through together once all of them have arrived (later callers pass at once). */
function barrier(parties: number): () => Promise<void> {
  let arrived = 0;
  let release!: () => void;
  const open = new Promise<void>((resolve) => (release = resolve));
  return async () => {
    if (++arrived === parties) release();
    await open;
  };
}

/**
 * A document client that counts what goes through it: commands by name, failed conditions, and the inputs
 * of the GetCommands. `afterGet` runs after each GetCommand has its answer and before the caller sees it.
 */
function counting(doc: DocumentClient, afterGet?: () => Promise<void>) {
  const counts: Record<string, number> = {};
  const gets: Array<Record<string, unknown>> = [];
  let conflicts = 0;
  const wrapped = {
    send: async (command: { constructor: { name: string }; input: Record<string, unknown> }) => {
      const name = command.constructor.name;
      counts[name] = (counts[name] ?? 0) + 1;
      if (name === 'GetCommand') gets.push(command.input);
      try {
        const out = await (doc.send as (c: unknown) => Promise<unknown>)(command);
        if (name === 'GetCommand' && afterGet) await afterGet();
        return out;
      } catch (error) {
        if ((error as { name?: string }).name === 'ConditionalCheckFailedException') conflicts++;
        throw error;
      }
    },
  };
  return {
    doc: wrapped as unknown as DocumentClient,
    counts,
    gets,
    get conflicts() {
      return conflicts;
    },
    /** Counts since the last take (and resets them). */
    take(): Record<string, number> {
      const out = { ...counts };
      for (const key of Object.keys(counts)) delete counts[key];
      gets.length = 0;
      return out;
    },
  };
}

/** The JSON API with the Event writes it is sent logged (verb, name, count). */
function logging(api: KubeJsonApi) {
  const sent: Array<{ verb: string; name: string; count: number }> = [];
  const proxy = new Proxy(api, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (prop === 'post' || prop === 'patch') {
        return (path: string, body: { metadata?: { name?: string }; count?: number }, ...rest: unknown[]) => {
          if (/\/events(\/|$)/.test(path)) sent.push({ verb: prop === 'post' ? 'create' : 'patch', name: prop === 'post' ? (body.metadata?.name ?? '') : decodeURIComponent(path.split('/').pop()!), count: body.count ?? 0 });
          return (value as (...args: unknown[]) => unknown).call(target, path, body, ...rest);
        };
      }
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { api: proxy, sent };
}

/** The JSON API that deletes the Event a call names just before the first call of `method` (a read, a patch) goes through. */
function deletingBefore(api: KubeJsonApi, method: 'get' | 'patch') {
  let armed = true;
  return new Proxy(api, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (prop !== method) return typeof value === 'function' ? value.bind(target) : value;
      return async (path: string, ...rest: unknown[]) => {
        if (armed && /\/events\//.test(path)) {
          armed = false;
          await target.delete(path);
        }
        return (value as (...args: unknown[]) => unknown).call(target, path, ...rest);
      };
    },
  });
}

describe('KubeEventRecorder state: one item per (source, object), two requests per event', () => {
  let kube: KubeApi;
  let db: Dynalite;
  let api: CoreV1Api;
  /** What the recorders send with (the test reads through `api`). */
  let json: KubeJsonApi;
  let clock = Date.parse('2026-11-21T12:00:00Z');
  before(async () => {
    [kube, db] = await Promise.all([startKubeApi({ port: 0 }), startDynalite()]);
    const kc = new KubeConfig();
    kc.loadFromString(kube.kubeconfig());
    api = kc.makeApiClient(CoreV1Api);
    json = kc.makeApiClient(KubeJsonApi);
  });
  after(async () => {
    await Promise.all([kube.stop(), db.stop()]);
  });

  const recorder = (doc: DocumentClient = db.doc, core: KubeJsonApi = json, onError?: (error: unknown) => void) =>
    new KubeEventRecorder({
      api: core,
      component: COMPONENT,
      cluster: CLUSTER,
      doc,
      table: db.tables.control,
      now: () => clock,
      onError: onError ?? ((error) => assert.fail(`recording failed: ${String(error)}`)),
    });
  const claimNamed = (name: string, namespace = 'default'): InvolvedObject => ({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace, uid: `uid-${name}`, resourceVersion: '7' },
  });
  const eventsOf = async (name: string): Promise<CoreV1Event[]> =>
    (await api.listNamespacedEvent({ namespace: 'default' })).items.filter((e) => e.involvedObject.name === name);
  const itemOf = async (object: InvolvedObject): Promise<StoredItem> => {
    const { Item } = await db.doc.send(new GetCommand({ TableName: db.tables.control, Key: { pk: keysOf(object, 'Normal', 'x').pk }, ConsistentRead: true }));
    assert.ok(Item, 'the (source, object) item exists');
    return Item as StoredItem;
  };

  test('(1) a new event, a dedup (count+1), an aggregated one, a re-create after 404 and a spam drop: one PutItem each, and one GetItem only when this container did not write the item last', async () => {
    const counted = counting(db.doc);
    const r = recorder(counted.doc);
    const claim = claimNamed('counted');
    let firstStep = true;
    const step = async (what: string, reason: string, message: string) => {
      clock += 1000;
      await r.event(claim, 'Warning', reason, message);
      const gets = [...counted.gets];
      assert.deepEqual(counted.take(), firstStep ? { GetCommand: 1, PutCommand: 1 } : { PutCommand: 1 }, what);
      if (firstStep) assert.equal(gets[0].ConsistentRead, true, `${what}: the read is consistent`);
      firstStep = false;
    };

    await step('new event', 'ProvisioningFailed', 'storageclass "gold" not found');
    await step('dedup', 'ProvisioningFailed', 'storageclass "gold" not found');
    assert.deepEqual((await eventsOf('counted')).map((e) => e.count), [2]);

    // Nine distinct messages for one reason stand alone; the 10th is combined, the 11th patches the combined one.
    for (let i = 1; i < AGGREGATE_MAX_EVENTS; i++) await step(`distinct message ${i}`, 'FailedBinding', `attempt ${i}`);
    await step('aggregated (creates the combined Event)', 'FailedBinding', `attempt ${AGGREGATE_MAX_EVENTS}`);
    await step('aggregated (patches the combined Event)', 'FailedBinding', `attempt ${AGGREGATE_MAX_EVENTS + 1}`);
    const combined = (await eventsOf('counted')).filter((e) => e.message?.startsWith(COMBINED_PREFIX));
    assert.deepEqual(combined.map((e) => [e.count, e.message]), [[2, `${COMBINED_PREFIX}attempt ${AGGREGATE_MAX_EVENTS + 1}`]]);

    const [first] = (await eventsOf('counted')).filter((e) => e.reason === 'ProvisioningFailed');
    await api.deleteNamespacedEvent({ name: first.metadata!.name!, namespace: 'default' });
    await step('re-created after a 404 on the patch', 'ProvisioningFailed', 'storageclass "gold" not found');
    const again = (await eventsOf('counted')).filter((e) => e.reason === 'ProvisioningFailed');
    assert.deepEqual(again.map((e) => [e.metadata?.name, e.count]), [[first.metadata?.name, 3]]);

    // 14 events so far: spend the rest of the burst, then one more is dropped.
    for (let spent = 14; spent < SPAM_BURST; spent++) {
      clock += 10;
      await r.event(claim, 'Warning', 'ProvisioningFailed', 'storageclass "gold" not found');
    }
    counted.take();
    clock += 10;
    await step('dropped by the spam filter (the aggregate window is still kept)', 'ProvisioningFailed', 'storageclass "gold" not found');
    assert.equal((await eventsOf('counted')).find((e) => e.reason === 'ProvisioningFailed')?.count, 3 + SPAM_BURST - 14);
    assert.equal(counted.conflicts, 0);

    // Another container records for the object (dropped by the spam filter, but its state is written): this
    // one's copy is stale, so its write is refused and it reads.
    const other = recorder(db.doc);
    clock += 10;
    await other.event(claim, 'Normal', 'Provisioning', 'external provisioner is provisioning volume for claim "default/counted"');
    counted.take();
    clock += 10;
    await r.event(claim, 'Normal', 'ProvisioningSucceeded', 'successfully provisioned volume pvc-1');
    assert.deepEqual(counted.take(), { GetCommand: 1, PutCommand: 2 }, 'a stale copy costs one refused write and a read');
    assert.equal(counted.conflicts, 1);
  });

  test('(2) two containers recording the same event at once: one Event, no lost count', async () => {
    const meet = barrier(2);
    const a = counting(db.doc, meet);
    const b = counting(db.doc, meet);
    const logged = logging(json);
    const claim = claimNamed('raced');
    clock += 1000;
    // Both read before either writes (the barrier holds each read's answer until the other has one).
    await Promise.all([recorder(a.doc, logged.api).event(claim, 'Normal', 'Provisioning', 'provisioning'), recorder(b.doc, logged.api).event(claim, 'Normal', 'Provisioning', 'provisioning')]);
    assert.equal(a.conflicts + b.conflicts, 1, 'one write lost the race and decided again');
    let list = await eventsOf('raced');
    assert.equal(list.length, 1);
    assert.equal(list[0].count, 2);
    assert.deepEqual(new Set(logged.sent.map((s) => s.count)), new Set([1, 2]), 'each decision sent once: create with 1, patch with 2');
    assert.equal((await itemOf(claim)).version, 2);

    // The same for a dedup: both read count 2.
    const meetAgain = barrier(2);
    const c = counting(db.doc, meetAgain);
    const d = counting(db.doc, meetAgain);
    logged.sent.length = 0;
    clock += 1000;
    await Promise.all([recorder(c.doc, logged.api).event(claim, 'Normal', 'Provisioning', 'provisioning'), recorder(d.doc, logged.api).event(claim, 'Normal', 'Provisioning', 'provisioning')]);
    assert.equal(c.conflicts + d.conflicts, 1);
    assert.deepEqual(logged.sent.map((s) => s.count).sort(), [3, 4], 'counts 3 and 4 each sent once');
    assert.deepEqual(Object.values((await itemOf(claim)).events).map((e) => e.count), [4]);
    list = await eventsOf('raced');
    assert.equal(list.length, 1);
  });

  test('(3) the spam filter is shared: the 26th event about one object is dropped whichever container sends it', async () => {
    const recorders = [recorder(), recorder()];
    const claim = claimNamed('spammy');
    for (let i = 0; i < 30; i++) {
      clock += 10;
      await recorders[i % 2].event(claim, 'Normal', 'FailedBinding', 'no persistent volumes available for this claim');
    }
    assert.deepEqual((await eventsOf('spammy')).map((e) => e.count), [SPAM_BURST]);

    // Pairs at once from two containers: still exactly SPAM_BURST decisions reach the API.
    const logged = logging(json);
    const other = claimNamed('spammy-racing');
    for (let i = 0; i < 15; i++) {
      clock += 10;
      await Promise.all([0, 1].map(() => recorder(db.doc, logged.api).event(other, 'Normal', 'FailedBinding', 'no persistent volumes available for this claim')));
    }
    const counts = [...new Set(logged.sent.map((s) => s.count))].sort((x, y) => x - y);
    assert.deepEqual(counts, Array.from({ length: SPAM_BURST }, (_, i) => i + 1), 'counts 1..25 each decided once, the rest dropped');
    const item = await itemOf(other);
    assert.ok(item.tokens < 1, `the bucket is empty (${item.tokens})`);
    assert.deepEqual(Object.values(item.events).map((e) => e.count), [SPAM_BURST]);
    assert.equal((await eventsOf('spammy-racing')).length, 1);
  });

  test('(4) the item stays bounded: many distinct messages and reasons, long names; lapsed entries go on the next write', async () => {
    const claim = claimNamed('n'.repeat(253));
    const r = recorder();
    let largest = 0;
    const measure = async () => {
      const item = await itemOf(claim);
      largest = Math.max(largest, Buffer.byteLength(JSON.stringify(item)));
      return item;
    };
    // 400 distinct messages for one reason: one aggregate of 10 hashes; 9 plain Events and the combined one.
    for (let i = 0; i < 400; i++) {
      clock += 1000;
      await r.event(claim, 'Warning', 'ProvisioningFailed', `attempt ${i}: ${'x'.repeat(200)}`);
      if (i % 50 === 0) await measure();
    }
    let item = await measure();
    assert.deepEqual(Object.values(item.aggregates).map((a) => a.messages.length), [AGGREGATE_MAX_EVENTS]);
    assert.equal(Object.keys(item.events).length, AGGREGATE_MAX_EVENTS);

    // 300 reasons inside one aggregation window (dropped events count for aggregation too): capped.
    for (let i = 0; i < 300; i++) {
      clock += 1000;
      await r.event(claim, 'Warning', `Reason${i}`, `message ${i}`);
      if (i % 50 === 0) await measure();
    }
    item = await measure();
    assert.equal(Object.keys(item.aggregates).length, 64, 'the aggregates are capped at 64, the stalest dropped');
    assert.ok(Object.keys(item.events).length <= SPAM_BURST + 12, `${Object.keys(item.events).length} events: bounded by the spam filter`);
    assert.ok(largest < 64 * 1024, `the item peaked at ${largest} bytes as JSON`);

    // Three hours on, everything has lapsed and the bucket is full: the next write keeps only what it records.
    clock += 3 * 3_600_000;
    await r.event(claim, 'Normal', 'Provisioning', 'provisioning');
    item = await measure();
    assert.equal(Object.keys(item.aggregates).length, 1);
    assert.deepEqual(Object.values(item.events).map((e) => e.count), [1]);
    assert.equal(item.tokens, SPAM_BURST - 1, 'the bucket refilled');
    assert.ok(Buffer.byteLength(JSON.stringify(item)) < 1024, 'a one-event item is under 1 KB (one write unit)');
    assert.equal(item.expiresAt, Math.ceil((clock + 7_500_000) / 1000), 'TTL when the bucket is full again (the latest part to lapse)');
  });

  test('records of the previous layout (eventspam#, eventagg#, per-key event#) and a version-less item are ignored', async () => {
    const claim = claimNamed('upgraded');
    const message = 'waiting for a volume to be created';
    const { spamKey, aggregateKey, pk } = keysOf(claim, 'Normal', 'ExternalProvisioning');
    const expiresAt = Math.ceil(clock / 1000) + 3600;
    const old = [
      { pk: `eventspam#${CLUSTER}#${sha(spamKey)}`, tokens: 0, updatedAt: clock, expiresAt },
      { pk: `eventagg#${CLUSTER}#${sha(aggregateKey)}`, localKeys: new Set(Array.from({ length: 12 }, (_, i) => `k${i}`)), lastTimestamp: clock, expiresAt },
      { pk: `event#${CLUSTER}#${sha(JSON.stringify([aggregateKey, message]))}`, name: 'upgraded.gone', namespace: 'default', count: 7, firstTimestamp: clock, validUntil: clock + 3_600_000, expiresAt },
      { pk, tokens: 0, updatedAt: clock, expiresAt },
    ];
    for (const Item of old) await db.doc.send(new PutCommand({ TableName: db.tables.control, Item }));
    const counted = counting(db.doc);
    clock += 1000;
    await recorder(counted.doc).event(claim, 'Normal', 'ExternalProvisioning', message);
    assert.deepEqual(counted.take(), { GetCommand: 1, PutCommand: 1 });
    const list = await eventsOf('upgraded');
    assert.deepEqual(list.map((e) => [e.count, e.message]), [[1, message]], 'not dropped, not combined, not a patch of the old name');
    assert.notEqual(list[0].metadata?.name, 'upgraded.gone');
    assert.equal((await itemOf(claim)).version, 1);
  });

  test('state first: an API failure after the write loses that send; the next repeat re-creates the Event under the stored name', async () => {
    const claim = claimNamed('crashy');
    const errors: unknown[] = [];
    kube.faults.inject({ verb: 'create', resource: 'events', count: 1, status: 500, message: 'etcd is sad' });
    clock += 1000;
    await recorder(db.doc, json, (error) => errors.push(error)).event(claim, 'Normal', 'Provisioning', 'provisioning');
    assert.equal(errors.length, 1, 'the failed create went to onError');
    assert.equal((await eventsOf('crashy')).length, 0);
    const [stored] = Object.values((await itemOf(claim)).events);
    assert.equal(stored.count, 1, 'the decision was stored before the call');

    clock += 1000;
    await recorder().event(claim, 'Normal', 'Provisioning', 'provisioning');
    const list = await eventsOf('crashy');
    assert.deepEqual(list.map((e) => [e.metadata?.name, e.count]), [[stored.name, 2]]);
  });
  test('(5) a claim created in the last minute: its new Events from one container cost no DynamoDB request, its first repeat stores them all; twins and late repeats count into the one Event', async () => {
    const young = (name: string): InvolvedObject => {
      const claim = claimNamed(name);
      return { ...claim, metadata: { ...claim.metadata, creationTimestamp: new Date(clock - 5_000).toISOString() } };
    };
    const counted = counting(db.doc);
    const r = recorder(counted.doc);
    clock += 1000;
    await r.event(young('fresh'), 'Normal', 'Provisioning', 'provisioning "default/fresh"');
    assert.deepEqual(counted.take(), {}, 'no read and no write for a new object\'s first event');
    assert.deepEqual((await eventsOf('fresh')).map((e) => e.count), [1]);
    clock += 1000;
    await r.event(young('fresh'), 'Normal', 'ProvisioningSucceeded', 'provisioned "default/fresh"');
    assert.deepEqual(counted.take(), {}, 'nor for its second, a new Event too');
    const { Item: none } = await db.doc.send(new GetCommand({ TableName: db.tables.control, Key: { pk: keysOf(young('fresh'), 'Normal', 'x').pk }, ConsistentRead: true }));
    assert.equal(none, undefined, 'nothing stored yet');
    clock += 1000;
    await r.event(young('fresh'), 'Normal', 'ProvisioningSucceeded', 'provisioned "default/fresh"');
    assert.deepEqual(counted.take(), { PutCommand: 1 }, 'the first repeat stores all three');
    const stored = await itemOf(young('fresh'));
    assert.equal(stored.version, 3);
    assert.ok(stored.tokens >= SPAM_BURST - 3 && stored.tokens < SPAM_BURST - 2.99, `all three events took their token (2 s of refill since): ${stored.tokens}`);
    assert.deepEqual(Object.values(stored.events).map((e) => e.count).sort(), [1, 2]);
    assert.deepEqual((await eventsOf('fresh')).map((e) => e.count).sort(), [1, 2], 'the repeat counted into its Event');
    assert.deepEqual(
      (await eventsOf('fresh')).map((e) => e.metadata?.name).sort(),
      Object.values(stored.events).map((e) => e.name).sort(),
      'the state names the Events that were created',
    );

    // Two containers send the same first event: one Event (the same name); the second counts into it and
    // stores the count it sent.
    const logged = logging(json);
    const other = recorder(db.doc, logged.api);
    const mine = recorder(counted.doc, logged.api);
    const stateCounts = async () => Object.values((await itemOf(young('shared'))).events).map((e) => e.count);
    clock += 1000;
    await other.event(young('shared'), 'Normal', 'Provisioning', 'provisioning "default/shared"');
    clock += 1000;
    await mine.event(young('shared'), 'Normal', 'Provisioning', 'provisioning "default/shared"');
    assert.deepEqual(counted.take(), { PutCommand: 1 }, 'the merge stores its count');
    assert.deepEqual(logged.sent.map((x) => [x.verb, x.count]), [['create', 1], ['create', 1], ['patch', 2]], 'the second create met the first and patched it');
    assert.deepEqual((await eventsOf('shared')).map((e) => e.count), [2]);
    assert.deepEqual(await stateCounts(), [2]);

    // A third container does the same; the first, repeating within 10 s, finds its unsaved state refused,
    // reads, and counts on: no count is sent twice, none goes back.
    clock += 1000;
    await recorder(db.doc, logged.api).event(young('shared'), 'Normal', 'Provisioning', 'provisioning "default/shared"');
    clock += 1000;
    await other.event(young('shared'), 'Normal', 'Provisioning', 'provisioning "default/shared"');
    assert.deepEqual(logged.sent.map((x) => x.count), [1, 1, 2, 1, 3, 4]);
    assert.deepEqual((await eventsOf('shared')).map((e) => e.count), [4]);
    assert.deepEqual(await stateCounts(), [4]);

    // After its memory lapsed, a container reads the stored state and goes on from it.
    clock += 11_000;
    await mine.event(young('shared'), 'Normal', 'Provisioning', 'provisioning "default/shared"');
    assert.deepEqual(counted.take(), { GetCommand: 1, PutCommand: 1 });
    clock += 1000;
    await mine.event(young('shared'), 'Normal', 'Provisioning', 'provisioning "default/shared"');
    assert.deepEqual(counted.take(), { PutCommand: 1 });
    assert.deepEqual((await eventsOf('shared')).map((e) => e.count), [6]);
    assert.deepEqual(await stateCounts(), [6]);

    // A repeat of a first event nobody stored, from a container that does not hold its state (another one,
    // or this one after evicting it): to it the event is a first one too, decided without a read; it meets
    // the Event, counts into it and stores the count (on absence).
    const held = recorder(counted.doc);
    clock += 1000;
    await held.event(young('lone'), 'Normal', 'Provisioning', 'provisioning "default/lone"');
    clock += 11_000;
    await recorder(counted.doc).event(young('lone'), 'Normal', 'Provisioning', 'provisioning "default/lone"');
    assert.deepEqual(counted.take(), { PutCommand: 1 }, 'no read: the merged count stored on absence');
    assert.deepEqual((await eventsOf('lone')).map((e) => e.count), [2]);
    assert.deepEqual(Object.values((await itemOf(young('lone'))).events).map((e) => e.count), [2]);
    // The container that held it, repeating however much later: its held state is stored on absence,
    // refused (the merge stored one), read, and counted on.
    clock += 1000;
    await held.event(young('lone'), 'Normal', 'Provisioning', 'provisioning "default/lone"');
    assert.deepEqual(counted.take(), { PutCommand: 2, GetCommand: 1 }, 'refused, read, stored');
    assert.deepEqual((await eventsOf('lone')).map((e) => e.count), [3]);

    // An object older than a minute is read first, as before.
    const old = claimNamed('old');
    await recorder(counted.doc).event({ ...old, metadata: { ...old.metadata, creationTimestamp: new Date(clock - 120_000).toISOString() } }, 'Normal', 'Provisioning', 'x');
    assert.deepEqual(counted.take(), { GetCommand: 1, PutCommand: 1 });
  });
  test('(5b) what ends a young object\'s held state: a Warning (a retry counts into it with one PATCH), the object a minute old, a repeat however late, a spam drop', async () => {
    const bornAgo = (name: string, ms: number): InvolvedObject => {
      const claim = claimNamed(name);
      return { ...claim, metadata: { ...claim.metadata, creationTimestamp: new Date(clock - ms).toISOString() } };
    };
    const counted = counting(db.doc);
    const logged = logging(json);
    const r = recorder(counted.doc, logged.api);

    // A failure: Provisioning held, its Warning stores both; the retry's repeat is one PutItem and one PATCH.
    const failing = bornAgo('failing', 5_000);
    clock += 1000;
    await r.event(failing, 'Normal', 'Provisioning', 'provisioning');
    clock += 1000;
    await r.event(failing, 'Warning', 'ProvisioningFailed', 'backend down');
    assert.deepEqual(counted.take(), { PutCommand: 1 }, 'the Warning stores the state held');
    assert.deepEqual(Object.values((await itemOf(failing)).events).map((e) => e.count), [1, 1]);
    clock += 15_000;
    logged.sent.length = 0;
    await r.event(failing, 'Normal', 'Provisioning', 'provisioning');
    await r.event(failing, 'Warning', 'ProvisioningFailed', 'backend down');
    assert.deepEqual(counted.take(), { GetCommand: 1, PutCommand: 2 }, 'read once (the memory lapsed), one PutItem per event');
    assert.deepEqual(logged.sent.map((x) => [x.verb, x.count]), [['patch', 2], ['patch', 2]], 'each counted into its Event, no create met an existing one');

    // Held while the object was young; it turns a minute old: its next event stores (on absence).
    const aging = bornAgo('aging', 55_000);
    await r.event(aging, 'Normal', 'Provisioning', 'provisioning');
    clock += 6_000;
    await r.event(aging, 'Normal', 'ProvisioningSucceeded', 'provisioned');
    assert.deepEqual(counted.take(), { PutCommand: 1 });
    assert.equal((await itemOf(aging)).version, 2, 'both events in the state');

    // Held state does not lapse after 10 s as a written item's memory does (its store is conditional on
    // absence): a new Normal Event 20 s later is held too, and a repeat after that stores both.
    const quiet = bornAgo('quiet', 1_000);
    await r.event(quiet, 'Normal', 'Provisioning', 'provisioning');
    clock += 20_000;
    await r.event(quiet, 'Normal', 'ProvisioningSucceeded', 'provisioned');
    assert.deepEqual(counted.take(), {});
    clock += 1000;
    logged.sent.length = 0;
    await r.event(quiet, 'Normal', 'Provisioning', 'provisioning');
    assert.deepEqual(counted.take(), { PutCommand: 1 });
    assert.deepEqual(logged.sent.map((x) => [x.verb, x.count]), [['patch', 2]], 'counted from the held state, no create met');
    assert.deepEqual(Object.values((await itemOf(quiet)).events).map((e) => e.count).sort(), [1, 2]);

    // A Warning as a young object's first event is stored at once: it is what a retry repeats.
    const refused = bornAgo('refused', 1_000);
    await r.event(refused, 'Warning', 'ProvisioningFailed', 'storageclass "gone" not found');
    assert.deepEqual(counted.take(), { PutCommand: 1 });

    // New Normal Events on a young object, all held, until the spam filter drops one: that stores them.
    const chatty = bornAgo('chatty', 1_000);
    for (let i = 0; i <= SPAM_BURST; i++) await r.event(chatty, 'Normal', `Step${i}`, `step ${i}`);
    assert.deepEqual(counted.take(), { PutCommand: 1 }, 'one write, at the drop');
    assert.equal((await eventsOf('chatty')).length, SPAM_BURST, 'the burst sent, the one over it dropped');
    const stored = await itemOf(chatty);
    assert.ok(stored.tokens < 1, `the burst spent: ${stored.tokens}`);
  });
  test('(6) an Event gone between a create that met it and the merge (expired, deleted) is created again, not lost', async () => {
    const young = (name: string): InvolvedObject => {
      const claim = claimNamed(name);
      return { ...claim, metadata: { ...claim.metadata, creationTimestamp: new Date(clock - 5_000).toISOString() } };
    };
    for (const [name, method] of [['gone-before-read', 'get'], ['gone-before-patch', 'patch']] as const) {
      const errors: unknown[] = [];
      clock += 1000;
      await recorder(db.doc, json, (error) => errors.push(error)).event(young(name), 'Normal', 'Provisioning', `provisioning "default/${name}"`);
      assert.deepEqual((await eventsOf(name)).map((e) => e.count), [1]);
      // A second container's create meets that Event (409); it is deleted just before the merge's `method`.
      clock += 1000;
      await recorder(db.doc, deletingBefore(json, method), (error) => errors.push(error)).event(young(name), 'Normal', 'Provisioning', `provisioning "default/${name}"`);
      assert.deepEqual(errors, [], `${name}: nothing failed`);
      assert.deepEqual((await eventsOf(name)).map((e) => e.count), [1], `${name}: the event is there again, with the count decided`);
    }
  });
});
