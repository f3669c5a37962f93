/**
 * lib/runtime/sdk-sha256.ts, the SHA-256 our AWS SDK clients sign with:
 * - digests and HMACs equal Node's own for every form of key (none, string, bytes at an offset, an
 *   ArrayBuffer), over several updates;
 * - the `Checksum` contract as `@smithy/core`'s: a plain hash may be digested twice and updated after,
 *   an HMAC is finished by its digest, `reset()` starts over;
 * - a key array changed in place keys the next HMAC by its new bytes (the cached `KeyObject` is not reused);
 * - SigV4 signs a request to the same signature as with an independent SHA-256 (`@aws-crypto/sha256-js`);
 * - every client built from `sdkClientConfig()` signs with it.
 */
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { test } from 'node:test';
import { Sha256 as JsSha256 } from '@aws-crypto/sha256-js';
import { SQSClient } from '@aws-sdk/client-sqs';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4, clearCredentialCache } from '@smithy/signature-v4';
import { sdkClientConfig } from '../../../lib/runtime/sdk-client.ts';
import { Sha256 } from '../../../lib/runtime/sdk-sha256.ts';
import { createDocumentClient } from '../../../lib/state/client.ts';

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');
const chunks = [Buffer.from('GET\n/\n'), Buffer.from('host:dynamodb.eu-west-1.amazonaws.com\n'), new Uint8Array(0), Buffer.from('x'.repeat(300))];
const whole = Buffer.concat(chunks);

test('digests and HMACs equal Node’s own for every form of key', async () => {
  const backing = new Uint8Array(48).map((_, i) => (i * 37) % 256);
  const atOffset = backing.subarray(7, 39);
  const cases: Array<[string, ConstructorParameters<typeof Sha256>[0], string]> = [
    ['no key', undefined, createHash('sha256').update(whole).digest('hex')],
    ['empty string (a plain hash, as upstream)', '', createHash('sha256').update(whole).digest('hex')],
    ['null (a plain hash, as upstream)', null as unknown as undefined, createHash('sha256').update(whole).digest('hex')],
    ['string', 'AWS4secret', createHmac('sha256', 'AWS4secret').update(whole).digest('hex')],
    ['bytes at an offset', atOffset, createHmac('sha256', Buffer.from(atOffset)).update(whole).digest('hex')],
    ['ArrayBuffer', backing.buffer.slice(3, 35), createHmac('sha256', Buffer.from(backing.buffer.slice(3, 35))).update(whole).digest('hex')],
    ['empty bytes (an HMAC, as upstream)', new Uint8Array(0), createHmac('sha256', Buffer.alloc(0)).update(whole).digest('hex')],
  ];
  for (const [name, key, expected] of cases) {
    for (let round = 0; round < 2; round++) {
      const hash = new Sha256(key);
      for (const c of chunks) hash.update(c);
      assert.equal(hex(await hash.digest()), expected, `${name}, round ${round}`);
    }
  }
});

test('a plain hash digests twice and goes on after; an HMAC is finished by its digest; reset starts over', async () => {
  const plain = new Sha256();
  plain.update(Buffer.from('ab'));
  const first = hex(await plain.digest());
  assert.equal(first, createHash('sha256').update('ab').digest('hex'));
  assert.equal(hex(await plain.digest()), first);
  plain.update(Buffer.from('c'));
  assert.equal(hex(await plain.digest()), createHash('sha256').update('abc').digest('hex'));
  plain.reset();
  plain.update(Buffer.from('z'));
  assert.equal(hex(await plain.digest()), createHash('sha256').update('z').digest('hex'));

  const key = new Uint8Array(32).fill(9);
  const mac = new Sha256(key);
  mac.update(Buffer.from('ab'));
  assert.equal(hex(await mac.digest()), createHmac('sha256', Buffer.from(key)).update('ab').digest('hex'));
  assert.throws(() => mac.update(Buffer.from('c')), /already finished/);
  mac.reset();
  mac.update(Buffer.from('c'));
  assert.equal(hex(await mac.digest()), createHmac('sha256', Buffer.from(key)).update('c').digest('hex'));
});

test('a key array changed in place keys the next HMAC by its new bytes', async () => {
  const key = new Uint8Array(32).fill(1);
  const mac = async () => {
    const h = new Sha256(key);
    h.update(Buffer.from('payload'));
    return hex(await h.digest());
  };
  assert.equal(await mac(), createHmac('sha256', Buffer.alloc(32, 1)).update('payload').digest('hex'));
  assert.equal(await mac(), createHmac('sha256', Buffer.alloc(32, 1)).update('payload').digest('hex'));
  key[5] = 2;
  const changed = Buffer.alloc(32, 1);
  changed[5] = 2;
  assert.equal(await mac(), createHmac('sha256', changed).update('payload').digest('hex'));
});

test('SigV4 signs a request to the same signature as with an independent SHA-256', async () => {
  const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
  const signingDate = new Date('2026-11-28T12:00:00Z');
  const request = () =>
    new HttpRequest({
      method: 'POST',
      protocol: 'https:',
      hostname: 'dynamodb.eu-west-1.amazonaws.com',
      path: '/',
      headers: { host: 'dynamodb.eu-west-1.amazonaws.com', 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'DynamoDB_20120810.GetItem' },
      body: JSON.stringify({ TableName: 'cache', Key: { pk: { S: 'PersistentVolume#pv-1' } } }),
    });
  // SigV4 caches signing keys across signers: each signer here derives its own (the chain of HMACs keyed by bytes).
  const sign = async (sha256: typeof Sha256 | typeof JsSha256, fresh = true) => {
    if (fresh) clearCredentialCache();
    const signer = new SignatureV4({ credentials, region: 'eu-west-1', service: 'dynamodb', sha256 });
    const signed = (await signer.sign(request(), { signingDate })) as HttpRequest;
    return signed.headers.authorization;
  };
  const expected = await sign(JsSha256);
  assert.match(expected ?? '', /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/20261128\/eu-west-1\/dynamodb\/aws4_request, SignedHeaders=.*, Signature=[0-9a-f]{64}$/);
  assert.equal(await sign(Sha256), expected, 'the signing key derived with ours');
  assert.equal(await sign(Sha256, false), expected, 'again, with the signing key from the signer’s cache');
});

test('every client built from sdkClientConfig() signs with it', () => {
  assert.equal(sdkClientConfig().sha256, Sha256);
  const sqs = new SQSClient({ ...sdkClientConfig(), region: 'eu-west-1' });
  const documents = createDocumentClient({ region: 'eu-west-1' });
  try {
    assert.equal(sqs.config.sha256, Sha256);
    assert.equal(documents.config.sha256, Sha256);
  } finally {
    sqs.destroy();
    documents.destroy();
  }
});
