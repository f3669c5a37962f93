import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KubeClients } from '../../../lib/kube/client.ts';
import { EKS_TOKEN_LIFETIME_MS, EKS_TOKEN_PREFIX } from '../../../lib/kube/eks-token.ts';
import { coreV1 } from '../../../lib/kube/core-v1.ts';

test('CLUSTERS with an EKS entry: bearer token for that cluster name, endpoint and CA from the entry, remade after 14 min', async () => {
  let clock = Date.now();
  const clients = new KubeClients({
    env: {
      CLUSTERS: JSON.stringify({
        prod: { eks: { name: 'prod-cluster', region: 'eu-west-1', endpoint: 'https://ABC.gr7.eu-west-1.eks.amazonaws.com', caData: Buffer.from('not a real CA').toString('base64') } },
      }),
    },
    credentials: async () => ({ accessKeyId: 'AKID', secretAccessKey: 'secret', sessionToken: 'tok' }),
    now: () => clock,
  });
  const first = await clients.kubeConfig('prod');
  assert.equal(first.getCurrentCluster()?.server, 'https://ABC.gr7.eu-west-1.eks.amazonaws.com');
  assert.equal(first.getCurrentCluster()?.caData, Buffer.from('not a real CA').toString('base64'));
  const token = first.getCurrentUser()?.token ?? '';
  assert.ok(token.startsWith(EKS_TOKEN_PREFIX));
  const url = new URL(Buffer.from(token.slice(EKS_TOKEN_PREFIX.length), 'base64url').toString());
  assert.equal(url.host, 'sts.eu-west-1.amazonaws.com');
  assert.match(url.searchParams.get('X-Amz-Credential') ?? '', /^AKID\/\d{8}\/eu-west-1\/sts\/aws4_request$/);
  assert.equal(await clients.kubeConfig('prod'), first, 'cached while the token is fresh');
  const core = await coreV1(clients, 'prod');
  assert.equal(await coreV1(clients, 'prod'), core, 'API clients are cached too');
  clock += EKS_TOKEN_LIFETIME_MS + 1;
  const second = await clients.kubeConfig('prod');
  assert.notEqual(second, first, 'an aged token is remade');
  assert.notEqual(await coreV1(clients, 'prod'), core, 'and API clients are rebuilt on the new token');
});
