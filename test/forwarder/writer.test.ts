/**
 * A controller's own writes do not come back to it: when a function wrote an object and wrote the returned
 * version back to the cache (tagged with its name), the forwarder's event for that version carries
 * `writer`, and the writer's subscription (serverless.yml, as the local stack creates it) leaves it out
 * while the other controllers still receive it.
 *
 * The first test stops the forwarder while the "controller" writes, so that the write-back deterministically
 * lands before the watch brings the version. In production the two race: the forwarder leaves such a
 * version unwritten and looks it up before sending it (review.ts), holding it while its write-back may
 * still come. The second and third tests make the write-back land after the forwarder's first look, within
 * its own-write hold, and show that the forwarder never writes the version itself. The last shows versions
 * written back before the forwarder saw them found by its look and not written again.
 */
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Logger } from '@aws-lambda-powertools/logger';
import { CoreV1Api, KubeConfig, type V1PersistentVolume } from '@kubernetes/client-node';
import { startForwarder, type Forwarder, type ForwarderOptions } from '../../lib/forwarder/forwarder.ts';
import { BatchGetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { ObjectCache } from '../../lib/state/cache.ts';
import { indexAttributes } from '../../lib/kube/cache-index.ts';
import { EventRecorder, eventually, startTestStack, type Stack } from '../support/stack.ts';

describe('writer-tagged versions skip the writer’s queue', () => {
  let stack: Stack;
  let core: CoreV1Api;
  let kubeConfig: KubeConfig;
  const recorder = new EventRecorder();
  const forwarders: Forwarder[] = [];
  const startOne = async (overrides: Partial<ForwarderOptions> = {}): Promise<Forwarder> => {
    const f = await startForwarder({
      cluster: stack.env.CLUSTER_ID ?? 'local',
      kubeConfig,
      sns: stack.sns.client,
      topicArn: stack.topicArn,
      doc: stack.dynamodb.doc,
      tables: stack.tables,
      kinds: ['PersistentVolume'],
      lease: false,
      logger: new Logger({ logLevel: 'SILENT' }),
      ...overrides,
    });
    forwarders.push(f);
    await eventually(() => f.isReady(), 20_000, 'forwarder synced');
    return f;
  };

  /**
   * A document client that records what the forwarder's reviews (its BatchGetItems) found cached for volume
   * `name`, and the versions of it the forwarder wrote itself (its PutItems).
   */
  const watchingLooks = (name: string) => {
    const key = ObjectCache.itemKey(stack.env.CLUSTER_ID ?? 'local', 'PersistentVolume', name);
    const looks: Array<{ rv: string; writer?: string }> = [];
    const puts: string[] = [];
    /** BatchGetItems that asked for the volume's entry, whether or not it was there. */
    let asked = 0;
    const doc = {
      send: async (command: unknown) => {
        if (command instanceof BatchGetCommand) {
          const keys = Object.values(command.input.RequestItems ?? {}).flatMap((r) => r.Keys ?? []);
          if (keys.some((k) => k.pk === key.pk && k.sk === key.sk)) asked++;
        }
        if (command instanceof PutCommand) {
          const item = command.input.Item as { pk?: unknown; sk?: unknown; rv?: unknown };
          if (item.pk === key.pk && item.sk === key.sk) puts.push(String(item.rv));
        }
        const out: unknown = await stack.dynamodb.doc.send(command as never);
        if (command instanceof BatchGetCommand) {
          const items = Object.values((out as { Responses?: Record<string, Array<Record<string, unknown>>> }).Responses ?? {}).flat();
          for (const item of items) if (item.pk === key.pk && item.sk === key.sk) looks.push({ rv: String(item.rv), ...(item.writer ? { writer: String(item.writer) } : {}) });
        }
        return out;
      },
    } as unknown as typeof stack.dynamodb.doc;
    return { doc, looks, puts, asked: () => asked };
  };

  before(async () => {
    stack = await startTestStack({ functions: { binder: recorder.handler('binder'), provisioner: recorder.handler('provisioner') }, storageApi: false });
    kubeConfig = new KubeConfig();
    kubeConfig.loadFromString(stack.kubeApi!.kubeconfig());
    core = kubeConfig.makeApiClient(CoreV1Api);
  });
  after(async () => {
    for (const f of forwarders) await f.stop();
    await stack?.stop();
  });

  it('an event of a version the binder wrote back reaches the provisioner, not the binder; other versions reach both', async () => {
    const spec = { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], storageClassName: 'w', hostPath: { path: '/tmp/w' } };
    // A provisioned, Released volume: the provisioner's subscription leaves static ones out (`unprovisioned`),
    // and provisioned ones that are not Released (`unreleased`).
    const made = await core.createPersistentVolume({ body: { metadata: { name: 'written', annotations: { 'pv.kubernetes.io/provisioned-by': 'example.com/p' } }, spec } });
    const created = await core.replacePersistentVolumeStatus({ name: 'written', body: { ...made, status: { phase: 'Released' } } });
    const first = await startOne();
    const seen = (consumer: string, rv: string) => recorder.events(consumer).some((e) => e.key === 'written' && e.resourceVersion === rv);
    await eventually(() => seen('binder', created.metadata!.resourceVersion!) && seen('provisioner', created.metadata!.resourceVersion!), 20_000, 'initial version at both');
    await first.stop();

    // The "binder" writes and writes the returned version back, tagged; then a plain change by someone else.
    const ours = await core.replacePersistentVolume({ name: 'written', body: { ...created, metadata: { ...created.metadata, labels: { by: 'binder' } } } });
    await new ObjectCache(stack.dynamodb.doc, stack.tables.cache, { indexer: indexAttributes }).put(stack.env.CLUSTER_ID ?? 'local', 'PersistentVolume', JSON.parse(JSON.stringify(ours)), { writer: 'binder' });
    const theirs = await core.replacePersistentVolume({ name: 'written', body: { ...ours, metadata: { ...ours.metadata, labels: { by: 'someone' } } } });

    const second = await startOne();
    await second.flush();
    await eventually(() => seen('provisioner', ours.metadata!.resourceVersion!) && seen('provisioner', theirs.metadata!.resourceVersion!), 20_000, 'both versions at the provisioner');
    await eventually(() => seen('binder', theirs.metadata!.resourceVersion!), 20_000, 'the other writer’s version at the binder');
    const tagged = recorder.events('provisioner').find((e) => e.key === 'written' && e.resourceVersion === ours.metadata!.resourceVersion);
    assert.equal(tagged?.writer, 'binder', 'the event names the writer');
    assert.equal(seen('binder', ours.metadata!.resourceVersion!), false, 'the binder never received its own version');
    const untagged = recorder.events('binder').find((e) => e.key === 'written' && e.resourceVersion === theirs.metadata!.resourceVersion);
    assert.equal(untagged?.writer, undefined);
  });

  it('a new volume (what the provisioner creates, and leaves to the watch) is cached when seen, never looked up, and cached before it goes out', async () => {
    const { doc, puts, asked } = watchingLooks('fresh');
    for (const earlier of forwarders.splice(0)) await earlier.stop();
    await startOne({ doc, ownWriteHoldMs: 60_000 });
    const cache = new ObjectCache(stack.dynamodb.doc, stack.tables.cache, { indexer: indexAttributes });
    const cluster = stack.env.CLUSTER_ID ?? 'local';
    const spec = { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], storageClassName: 'w', hostPath: { path: '/tmp/fresh' } };
    const made = await core.createPersistentVolume({ body: { metadata: { name: 'fresh', annotations: { 'pv.kubernetes.io/provisioned-by': 'example.com/p' } }, spec } });
    const rv = made.metadata!.resourceVersion!;
    await eventually(() => recorder.events('binder').some((e) => e.key === 'fresh' && e.resourceVersion === rv), 20_000, 'the new volume at the binder (not held: the hold is 60 s)');
    assert.equal((await cache.get(cluster, 'PersistentVolume', 'fresh'))?.rv, Number(rv), 'cached by the time its event arrived');
    assert.deepEqual(puts, [rv], 'written once, by the forwarder');
    assert.equal(asked(), 0, 'never looked up: no write-back can have brought it');
  });

  it('a write-back that lands after the forwarder’s first look, within its hold, still keeps the version from the writer', async () => {
    // What the forwarder's reviews found cached for this volume: the write-back waits until one has found
    // the new version untagged.
    const { doc, looks, puts } = watchingLooks('late');
    // Only this test's forwarder publishes (another one's untagged copy would reach the binder first).
    for (const earlier of forwarders.splice(0)) await earlier.stop();
    const f = await startOne({ doc, ownWriteHoldMs: 60_000 });
    const cache = new ObjectCache(stack.dynamodb.doc, stack.tables.cache, { indexer: indexAttributes });
    const cluster = stack.env.CLUSTER_ID ?? 'local';
    const seen = (consumer: string, rv: string) => recorder.events(consumer).some((e) => e.key === 'late' && e.resourceVersion === rv);
    const spec = { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], storageClassName: 'w', hostPath: { path: '/tmp/late' } };
    const made = await core.createPersistentVolume({ body: { metadata: { name: 'late', annotations: { 'pv.kubernetes.io/provisioned-by': 'example.com/p' } }, spec } });
    // The "provisioner" releases it and writes the version back (an untagged user's write would be held 60 s).
    const created = await core.replacePersistentVolumeStatus({ name: 'late', body: { ...made, status: { phase: 'Released' } } });
    await cache.put(cluster, 'PersistentVolume', JSON.parse(JSON.stringify(created)), { writer: 'provisioner', classify: false });
    await eventually(() => seen('binder', created.metadata!.resourceVersion!), 20_000, 'the released version at the binder');

    const looked = looks.length;
    const ours = await core.replacePersistentVolume({ name: 'late', body: { ...created, metadata: { ...created.metadata, labels: { by: 'binder' } } } });
    await eventually(() => looks.length > looked, 20_000, 'the forwarder looked at the volume before the write-back');
    assert.ok(looks.slice(looked).every((l) => Number(l.rv) < Number(ours.metadata!.resourceVersion)), 'it found an older version cached: the forwarder did not write this one');
    assert.equal(seen('provisioner', ours.metadata!.resourceVersion!), false, 'held, not sent untagged');
    await cache.put(cluster, 'PersistentVolume', JSON.parse(JSON.stringify(ours)), { writer: 'binder', classify: false });
    await eventually(() => seen('provisioner', ours.metadata!.resourceVersion!), 20_000, 'the version at the provisioner once tagged (long before the hold’s 60 s)');
    await f.flush();
    const tagged = recorder.events('provisioner').find((e) => e.key === 'late' && e.resourceVersion === ours.metadata!.resourceVersion);
    assert.equal(tagged?.writer, 'binder');
    assert.equal(seen('binder', ours.metadata!.resourceVersion!), false, 'the binder never received its own version');
    const held = (await f.metrics.held.get()).values.find((v) => v.labels.outcome === 'tagged');
    assert.ok((held?.value ?? 0) >= 1, 'counted as held, then tagged');
    assert.ok(!puts.includes(ours.metadata!.resourceVersion!), `the forwarder did not write the version: the write-back did (it wrote ${JSON.stringify(puts)})`);
  });

  it('two writes in one sync, written back once: the first version, cached and held meanwhile, is kept from the writer too', async () => {
    const { doc, looks, puts } = watchingLooks('twice');
    for (const earlier of forwarders.splice(0)) await earlier.stop();
    const f = await startOne({ doc, ownWriteHoldMs: 60_000 });
    const cache = new ObjectCache(stack.dynamodb.doc, stack.tables.cache, { indexer: indexAttributes });
    const cluster = stack.env.CLUSTER_ID ?? 'local';
    const seen = (consumer: string, rv: string) => recorder.events(consumer).some((e) => e.key === 'twice' && e.resourceVersion === rv);
    const spec = { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], storageClassName: 'w', hostPath: { path: '/tmp/twice' } };
    const made = await core.createPersistentVolume({ body: { metadata: { name: 'twice', annotations: { 'pv.kubernetes.io/provisioned-by': 'example.com/p' } }, spec } });
    const created = await core.replacePersistentVolumeStatus({ name: 'twice', body: { ...made, status: { phase: 'Released' } } });
    await cache.put(cluster, 'PersistentVolume', JSON.parse(JSON.stringify(created)), { writer: 'provisioner', classify: false });
    await eventually(() => seen('binder', created.metadata!.resourceVersion!), 20_000, 'the released version at the binder');

    // The "binder" writes twice (as a bind's update and then its status); both versions reach the forwarder,
    // which holds them unwritten (the first looked up, the second queued behind it in its group) before the
    // one write-back naming the first lands.
    const looked = looks.length;
    const first = await core.replacePersistentVolume({ name: 'twice', body: { ...created, metadata: { ...created.metadata, labels: { step: '1' } } } });
    const second = await core.replacePersistentVolume({ name: 'twice', body: { ...first, metadata: { ...first.metadata, labels: { step: '2' } } } });
    await eventually(() => looks.length > looked, 20_000, 'the forwarder looked at the volume before the write-back');
    assert.ok(looks.slice(looked).every((l) => l.rv === created.metadata!.resourceVersion), 'it found the older version: it wrote neither of the new ones');
    assert.equal(seen('provisioner', first.metadata!.resourceVersion!), false, 'the first version held');
    await cache.put(cluster, 'PersistentVolume', JSON.parse(JSON.stringify(second)), { writer: 'binder', classify: false, earlier: [first.metadata!.resourceVersion!] });
    await eventually(() => seen('provisioner', first.metadata!.resourceVersion!) && seen('provisioner', second.metadata!.resourceVersion!), 20_000, 'both versions at the provisioner once tagged');
    await f.flush();
    for (const version of [first, second]) {
      const rv = version.metadata!.resourceVersion!;
      assert.equal(recorder.events('provisioner').find((e) => e.key === 'twice' && e.resourceVersion === rv)?.writer, 'binder', `version ${rv} tagged`);
      assert.equal(seen('binder', rv), false, `the binder never received version ${rv}`);
    }
    const own = [first, second].map((v) => v.metadata!.resourceVersion!);
    assert.deepEqual(puts.filter((rv) => own.includes(rv)), [], 'the forwarder wrote neither version: the one write-back did');
  });

  it('versions written back before the forwarder saw them are found by its look, not written again, and still tagged', async () => {
    for (const earlier of forwarders.splice(0)) await earlier.stop();
    const cluster = stack.env.CLUSTER_ID ?? 'local';
    const names = ['many-a', 'many-b', 'many-c', 'many-d'];
    const seen = (consumer: string, name: string, rv: string) => recorder.events(consumer).some((e) => e.key === name && e.resourceVersion === rv);
    const spec = (name: string) => ({ capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], storageClassName: 'w', hostPath: { path: `/tmp/${name}` } });
    const released: V1PersistentVolume[] = [];
    for (const name of names) {
      const made = await core.createPersistentVolume({ body: { metadata: { name, annotations: { 'pv.kubernetes.io/provisioned-by': 'example.com/p' } }, spec: spec(name) } });
      released.push(await core.replacePersistentVolumeStatus({ name, body: { ...made, status: { phase: 'Released' } } }));
    }
    const first = await startOne();
    await eventually(() => names.every((n, i) => seen('binder', n, released[i]!.metadata!.resourceVersion!)), 20_000, 'the released versions at the binder');
    await first.stop();

    // The "binder" writes each volume and writes each returned version back while no forwarder watches; the
    // next forwarder's watch brings them all at once from its bookmark.
    const cache = new ObjectCache(stack.dynamodb.doc, stack.tables.cache, { indexer: indexAttributes });
    const ours: V1PersistentVolume[] = [];
    for (const [i, name] of names.entries()) {
      const written = await core.replacePersistentVolume({ name, body: { ...released[i]!, metadata: { ...released[i]!.metadata, labels: { by: 'binder' } } } });
      await cache.put(cluster, 'PersistentVolume', JSON.parse(JSON.stringify(written)), { writer: 'binder' });
      ours.push(written);
    }
    const puts: string[] = [];
    const doc = {
      send: (command: unknown) => {
        if (command instanceof PutCommand) puts.push(String((command.input.Item as { sk?: unknown }).sk));
        return stack.dynamodb.doc.send(command as never);
      },
    } as unknown as typeof stack.dynamodb.doc;
    const second = await startOne({ doc });
    await eventually(() => names.every((n, i) => seen('provisioner', n, ours[i]!.metadata!.resourceVersion!)), 20_000, 'the written-back versions at the provisioner');
    await second.flush();
    for (const [i, name] of names.entries()) {
      const rv = ours[i]!.metadata!.resourceVersion!;
      assert.equal(recorder.events('provisioner').find((e) => e.key === name && e.resourceVersion === rv)?.writer, 'binder', `${name} tagged`);
      assert.equal(seen('binder', name, rv), false, `the binder never received ${name}'s own version`);
    }
    // Every one was found written back: the forwarder wrote none of them, nor counted a write.
    assert.deepEqual(puts.filter((key) => names.includes(key)), [], 'none written again');
    assert.deepEqual((await second.metrics.cacheWrites.get()).values.filter((v) => v.value > 0), [], 'no write of its own counted');
  });

  it('a version the binder wrote back that no subscription takes is cached, counted and never published; the next change goes out', async () => {
    for (const earlier of forwarders.splice(0)) await earlier.stop();
    const cluster = stack.env.CLUSTER_ID ?? 'local';
    const cache = new ObjectCache(stack.dynamodb.doc, stack.tables.cache, { indexer: indexAttributes });
    const seen = (consumer: string, rv: string) => recorder.events(consumer).some((e) => e.key === 'static' && e.resourceVersion === rv);
    // Every PublishBatch entry the forwarder sends, as key@resourceVersion.
    const published: string[] = [];
    stack.sns.client.middlewareStack.add(
      (next) => async (args: any) => {
        for (const entry of args.input.PublishBatchRequestEntries ?? []) {
          const body = JSON.parse(entry.Message) as { key: string; resourceVersion: string };
          published.push(`${body.key}@${body.resourceVersion}`);
        }
        return next(args);
      },
      { step: 'initialize', name: 'recordPublished' },
    );
    try {
      // A static volume (no provisioner's name on it): the provisioner's subscription leaves it out, the
      // shared-volume's and label sync's take no volumes, and the binder's leaves out its own versions.
      const spec = { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], storageClassName: 'w', hostPath: { path: '/tmp/static' } };
      const created = await core.createPersistentVolume({ body: { metadata: { name: 'static' }, spec } });
      const first = await startOne();
      await eventually(() => seen('binder', created.metadata!.resourceVersion!), 20_000, 'the new volume at the binder');
      await first.stop();
      // While no forwarder watches (so the write-back lands first, as in the first test): the "binder" writes
      // it and writes the returned version back, as a bind does; then a user labels it.
      const ours = await core.replacePersistentVolume({ name: 'static', body: { ...created, metadata: { ...created.metadata, labels: { by: 'binder' } } } });
      await cache.put(cluster, 'PersistentVolume', JSON.parse(JSON.stringify(ours)), { writer: 'binder', classify: false });
      const theirs = await core.replacePersistentVolume({ name: 'static', body: { ...ours, metadata: { ...ours.metadata, labels: { by: 'someone' } } } });
      const f = await startOne();
      await f.flush();
      await eventually(() => seen('binder', theirs.metadata!.resourceVersion!), 20_000, 'the user\'s version at the binder');
      const ourRv = ours.metadata!.resourceVersion!;
      assert.ok(!published.includes(`static@${ourRv}`), `the binder's own version was not published (published: ${published.join(', ')})`);
      assert.ok(published.includes(`static@${theirs.metadata!.resourceVersion!}`), 'the user\'s version was');
      assert.equal(seen('binder', ourRv) || seen('provisioner', ourRv), false, 'no queue received it');
      const unsubscribed = (await f.metrics.unsubscribed.get()).values.find((v) => v.labels.kind === 'PersistentVolume' && v.labels.type === 'MODIFIED');
      assert.equal(unsubscribed?.value, 1, 'counted as unsubscribed');
      assert.equal((await cache.get(cluster, 'PersistentVolume', 'static'))?.rv, Number(theirs.metadata!.resourceVersion), 'the cache holds the latest version');
    } finally {
      stack.sns.client.middlewareStack.remove('recordPublished');
    }
  });
});
