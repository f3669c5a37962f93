/**
 * Storage API credential resolution: environment vs Secrets Manager secret, the per-container cache,
 * and the re-read after the API rejects a login (a rotated secret), against the real embedded
 * StorageOS control plane over HTTP.
 *
 * No Secrets Manager stand-in exists in this project, so the secret is served by a hand-built client
 * whose `send` the test drives (it answers `GetSecretValueCommand` from a list of secret values and
 * records every call). This is the one place the project uses a hand-built AWS client.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { GetSecretValueCommand } from '@aws-sdk/client-secrets-manager';
import { startStorageApi, type StorageApiHandle } from '../../../infra/local/storage-api/index.ts';
import {
  SecretCredentialsSource,
  StaticCredentialsSource,
  STORAGE_API_SECRET_ARN,
  StorageCredentialsError,
  parseStorageSecret,
  storageCredentialsFromEnv,
} from '../../../lib/storage/credentials.ts';
import { UnauthorizedError } from '../../../lib/storage/errors.ts';
import { CredentialSourceTransport, createStorageClientFromEnv } from '../../../lib/storage/storageos/from-env.ts';

const ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:claimflow-storage-api-AbCdEf';

/** A hand-built Secrets Manager client: answers each GetSecretValue with the next value (the last repeats). */
function secretsClient(values: (string | Error | undefined)[]) {
  const calls: string[] = [];
  return {
    calls,
    async send(command: unknown): Promise<{ SecretString?: string }> {
      assert.ok(command instanceof GetSecretValueCommand, 'only GetSecretValue is sent');
      calls.push(String(command.input.SecretId));
      await Promise.resolve();
      const value = values[Math.min(calls.length - 1, values.length - 1)];
      if (value instanceof Error) throw value;
      return value === undefined ? {} : { SecretString: value };
    },
  } as { calls: string[]; send: (command: unknown) => Promise<{ SecretString?: string }> } & Parameters<typeof storageCredentialsFromEnv>[1];
}

const secret = (username: string, password: string) => JSON.stringify({ username, password });

describe('storage credentials', () => {
  test('parseStorageSecret: the api-manager secret shape, and named errors for anything else', () => {
    const table: { text: string; ok?: { username: string; password: string } }[] = [
      { text: secret('storageos', 'pw'), ok: { username: 'storageos', password: 'pw' } },
      { text: JSON.stringify({ username: 'u', password: 'p', url: 'ignored' }), ok: { username: 'u', password: 'p' } },
      { text: 'not json' },
      { text: JSON.stringify({ username: 'u' }) },
      { text: JSON.stringify({ username: '', password: 'p' }) },
      { text: JSON.stringify({ username: 'u', password: 7 }) },
      { text: '[]' },
    ];
    for (const { text, ok } of table) {
      if (ok) assert.deepEqual(parseStorageSecret(text, ARN), ok, text);
      else assert.throws(() => parseStorageSecret(text, ARN), StorageCredentialsError, text);
    }
  });

  test('storageCredentialsFromEnv: the secret when STORAGE_API_SECRET_ARN is set, else the env pair with local defaults', async () => {
    const client = secretsClient([secret('from-secret', 's3cret')]);
    const fromSecret = storageCredentialsFromEnv({ [STORAGE_API_SECRET_ARN]: ARN, STORAGE_API_USERNAME: 'env', STORAGE_API_PASSWORD: 'env' }, client);
    assert.ok(fromSecret instanceof SecretCredentialsSource);
    assert.deepEqual(await fromSecret.get(), { username: 'from-secret', password: 's3cret' });
    assert.deepEqual(client.calls, [ARN]);

    const table: { env: Record<string, string>; want: { username: string; password: string } }[] = [
      { env: { STORAGE_API_USERNAME: 'u', STORAGE_API_PASSWORD: 'p' }, want: { username: 'u', password: 'p' } },
      { env: {}, want: { username: 'storageos', password: 'storageos' } },
      { env: { [STORAGE_API_SECRET_ARN]: '', STORAGE_API_PASSWORD: 'p' }, want: { username: 'storageos', password: 'p' } },
    ];
    for (const { env, want } of table) {
      const source = storageCredentialsFromEnv(env, client);
      assert.ok(source instanceof StaticCredentialsSource, JSON.stringify(env));
      assert.deepEqual(await source.get(), want);
      assert.equal(await source.reread(), undefined, 'environment credentials cannot change');
    }
    assert.equal(client.calls.length, 1, 'the env path never reads a secret');
  });

  test('SecretCredentialsSource: one read per container, shared by concurrent callers; reread bypasses the cache', async () => {
    const client = secretsClient([secret('u', 'one'), secret('u', 'two')]);
    const source = new SecretCredentialsSource({ secretId: ARN, client });
    const all = await Promise.all([source.get(), source.get(), source.get()]);
    assert.deepEqual(all.map((c) => c.password), ['one', 'one', 'one']);
    assert.deepEqual(await source.get(), { username: 'u', password: 'one' });
    assert.equal(client.calls.length, 1);
    assert.deepEqual(await source.reread(), { username: 'u', password: 'two' });
    assert.deepEqual(await source.get(), { username: 'u', password: 'two' }, 'the re-read value is cached');
    assert.equal(client.calls.length, 2);
    assert.equal(source.reads, 2);
  });

  test('SecretCredentialsSource: a failed read is a named error and is not cached', async () => {
    const table: { values: (string | Error | undefined)[]; message: RegExp }[] = [
      { values: [new Error('AccessDeniedException'), secret('u', 'p')], message: /AccessDeniedException/ },
      { values: [undefined, secret('u', 'p')], message: /no SecretString/ },
      { values: ['{"username":"u"}', secret('u', 'p')], message: /"username" and "password"/ },
    ];
    for (const { values, message } of table) {
      const client = secretsClient(values);
      const source = new SecretCredentialsSource({ secretId: ARN, client });
      await assert.rejects(source.get(), (err: unknown) => err instanceof StorageCredentialsError && message.test(err.message));
      assert.deepEqual(await source.get(), { username: 'u', password: 'p' }, 'the next call reads again');
      assert.equal(client.calls.length, 2);
    }
    assert.throws(() => new SecretCredentialsSource({ secretId: '' }), StorageCredentialsError);
  });
});

describe('createStorageClientFromEnv against the control plane', () => {
  let api: StorageApiHandle;
  before(async () => {
    api = await startStorageApi({ port: 0, username: 'storageos', password: 'rotated' });
  });
  after(() => api.stop());

  const logins = () => api.requests.get('POST', '/v2/auth/login');

  test('local path unchanged: STORAGE_API_USERNAME/PASSWORD log in, no secret involved', async () => {
    const storage = createStorageClientFromEnv({ STORAGE_API_URL: api.url, STORAGE_API_USERNAME: 'storageos', STORAGE_API_PASSWORD: 'rotated' });
    assert.ok(!(storage.transport instanceof CredentialSourceTransport));
    assert.ok((await storage.listNamespaces()).some((ns) => ns.name === 'default'));
    assert.equal(storage.transport.logins, 1);
    const wrong = createStorageClientFromEnv({ STORAGE_API_URL: api.url, STORAGE_API_PASSWORD: 'storageos' });
    await assert.rejects(wrong.listNamespaces(), UnauthorizedError);
  });

  test('with STORAGE_API_SECRET_ARN the secret is read once per client, even over many calls and a token expiry', async () => {
    const client = secretsClient([secret('storageos', 'rotated')]);
    const storage = createStorageClientFromEnv(
      { STORAGE_API_URL: api.url, [STORAGE_API_SECRET_ARN]: ARN, STORAGE_API_PASSWORD: 'wrong' },
      { secretsManager: client },
    );
    assert.ok(storage.transport instanceof CredentialSourceTransport);
    await Promise.all([storage.listNamespaces(), storage.listNodes(), storage.listNamespaces()]);
    api.auth.expireAll();
    await storage.listNodes();
    assert.deepEqual(client.calls, [ARN], 'one read: the env password is ignored and the expired token re-logs in from the cache');
    assert.equal(storage.transport.logins, 2);
    assert.equal(storage.transport.authenticated, true);
  });

  test('a rejected login re-reads the secret once and, when it was rotated, repeats the call with the new password', async () => {
    // The container cached the old password; the secret (and the control plane) moved on to 'rotated'.
    const client = secretsClient([secret('storageos', 'old'), secret('storageos', 'rotated')]);
    const storage = createStorageClientFromEnv({ STORAGE_API_URL: api.url, [STORAGE_API_SECRET_ARN]: ARN }, { secretsManager: client });
    const before = logins();
    const results = await Promise.all([storage.listNamespaces(), storage.listNodes(), storage.listNamespaces()]);
    assert.ok(results[0].some((ns) => ns.name === 'default'));
    assert.equal(client.calls.length, 2, 'concurrent rejections share one re-read');
    assert.equal(storage.transport.logins, 1, 'one successful login, with the rotated password');
    // the old password was tried once (one login shared by the three calls), then the new one once
    assert.equal(logins() - before, 2);
    await storage.listNodes();
    assert.equal(client.calls.length, 2, 'the rotated value is cached');
  });

  test('a rejected login whose secret did not change stays a 401 after exactly one re-read', async () => {
    const client = secretsClient([secret('storageos', 'wrong')]);
    const storage = createStorageClientFromEnv({ STORAGE_API_URL: api.url, [STORAGE_API_SECRET_ARN]: ARN }, { secretsManager: client });
    await assert.rejects(storage.listNodes(), UnauthorizedError);
    assert.equal(client.calls.length, 2, 'read, then one re-read');
    await assert.rejects(storage.listNodes(), UnauthorizedError);
    assert.equal(client.calls.length, 3, 'each failing call re-reads at most once');
    assert.equal(storage.transport.authenticated, false);
  });

  test('a secret that cannot be read fails the call with StorageCredentialsError and is retried on the next call', async () => {
    const client = secretsClient([new Error('ResourceNotFoundException'), secret('storageos', 'rotated')]);
    const storage = createStorageClientFromEnv({ STORAGE_API_URL: api.url, [STORAGE_API_SECRET_ARN]: ARN }, { secretsManager: client });
    await assert.rejects(storage.listNodes(), StorageCredentialsError);
    assert.ok(Array.isArray(await storage.listNodes()));
    assert.equal(client.calls.length, 2);
  });
});
