import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createEksToken, EKS_TOKEN_LIFETIME_MS, EKS_TOKEN_PREFIX } from '../../../lib/kube/eks-token.ts';

test('EKS token: k8s-aws-v1. + unpadded base64url of a presigned STS GetCallerIdentity URL', async () => {
  const signingDate = new Date('2026-11-21T10:00:00Z');
  const { token, expiresAt } = await createEksToken({
    clusterName: 'prod-east',
    region: 'eu-west-1',
    credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret', sessionToken: 'session/token+1' },
    signingDate,
  });
  assert.ok(token.startsWith(EKS_TOKEN_PREFIX));
  const encoded = token.slice(EKS_TOKEN_PREFIX.length);
  assert.match(encoded, /^[A-Za-z0-9_-]+$/, 'base64url without padding');
  assert.ok(token.length <= 4096, 'the server rejects tokens over 4 KiB');
  const url = new URL(Buffer.from(encoded, 'base64url').toString('utf8'));
  assert.equal(url.protocol, 'https:');
  assert.equal(url.host, 'sts.eu-west-1.amazonaws.com');
  assert.equal(url.pathname, '/');
  const q = url.searchParams;
  assert.equal(q.get('Action'), 'GetCallerIdentity');
  assert.equal(q.get('Version'), '2011-06-15');
  assert.equal(q.get('X-Amz-Algorithm'), 'AWS4-HMAC-SHA256');
  assert.equal(q.get('X-Amz-Credential'), 'AKIDEXAMPLE/20261121/eu-west-1/sts/aws4_request');
  assert.equal(q.get('X-Amz-Date'), '20261121T100000Z');
  assert.equal(q.get('X-Amz-Expires'), '60');
  assert.equal(q.get('X-Amz-Security-Token'), 'session/token+1');
  assert.equal(q.get('X-Amz-SignedHeaders'), 'host;x-k8s-aws-id');
  assert.match(q.get('X-Amz-Signature') ?? '', /^[0-9a-f]{64}$/);
  // Only the parameters the authenticator whitelists.
  const allowed = new Set(['action', 'version', 'x-amz-algorithm', 'x-amz-credential', 'x-amz-date', 'x-amz-expires', 'x-amz-security-token', 'x-amz-signature', 'x-amz-signedheaders']);
  for (const name of q.keys()) assert.ok(allowed.has(name.toLowerCase()), `unexpected parameter ${name}`);
  assert.equal(expiresAt, signingDate.getTime() + EKS_TOKEN_LIFETIME_MS);
});

test('EKS token: the signature depends on the cluster name (x-k8s-aws-id is signed)', async () => {
  const base = { region: 'us-east-1', credentials: { accessKeyId: 'A', secretAccessKey: 'S' }, signingDate: new Date('2026-01-01T00:00:00Z') };
  const one = await createEksToken({ ...base, clusterName: 'one' });
  const two = await createEksToken({ ...base, clusterName: 'two' });
  const sig = (t: string) => new URL(Buffer.from(t.slice(EKS_TOKEN_PREFIX.length), 'base64url').toString()).searchParams.get('X-Amz-Signature');
  assert.notEqual(sig(one.token), sig(two.token));
  assert.equal(sig(one.token), sig((await createEksToken({ ...base, clusterName: 'one' })).token), 'deterministic for the same inputs');
});
