/**
 * `npm run bench:aws-sdk`: the CPU one AWS SDK call costs the caller, by how its client is built.
 *
 * A DynamoDB GetItem and a conditional PutItem of a PersistentVolume-sized cache item, 10 at a time, against
 * a local HTTP server that answers every request with the same canned body (so the figures hold the client,
 * the server's share being the same for all). Three clients, interleaved round after round so a busy moment
 * of the machine touches each alike:
 * - `sdkDefault`: the SDK as it comes (node:http handler, its default logger);
 * - `claimflow`: as every claimflow client is built (lib/runtime/sdk-client.ts: undici, the silent logger,
 *   the SHA-256 of lib/runtime/sdk-sha256.ts);
 * - `noTransport`: claimflow's, with a handler that answers without any HTTP: the SDK's own floor
 *   (serialization, signing, middleware, parsing).
 *
 * Reported: CPU µs per call (user + system of this process), the median over the rounds; and the
 * claimflow client's share of the default's. `BENCH_SDK_CALLS` calls per client and round (default 3000),
 * `BENCH_SDK_ROUNDS` rounds (default 3). Prints one JSON document.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { HttpResponse } from '@smithy/protocol-http';
import { createDocumentClient, type DocumentClient } from '../../lib/state/client.ts';

const CALLS = Number(process.env.BENCH_SDK_CALLS ?? 3000);
const ROUNDS = Number(process.env.BENCH_SDK_ROUNDS ?? 3);
const CONCURRENCY = 10;

const volume = {
  apiVersion: 'v1',
  kind: 'PersistentVolume',
  metadata: { name: 'pvc-0b8c2a52-6b4f-4c55-9f0a-1f6f6f3b7c11', uid: '7d1f3c0e-2a44-4d0c-b6f5-4f1b8d2c9e10', resourceVersion: '123456', annotations: { 'pv.kubernetes.io/provisioned-by': 'csi.storageos.com' } },
  spec: {
    capacity: { storage: '10Gi' },
    accessModes: ['ReadWriteOnce'],
    persistentVolumeReclaimPolicy: 'Delete',
    storageClassName: 'storageos',
    csi: { driver: 'csi.storageos.com', volumeHandle: '4f1b8d2c-9e10-7d1f-3c0e-2a444d0cb6f5', fsType: 'ext4' },
    claimRef: { kind: 'PersistentVolumeClaim', namespace: 'default', name: 'data', uid: '0b8c2a52-6b4f-4c55-9f0a-1f6f6f3b7c11', resourceVersion: '123400' },
  },
  status: { phase: 'Bound' },
};
const obj = JSON.stringify(volume);
const answer = Buffer.from(JSON.stringify({ Item: { pk: { S: 'c1#PersistentVolume' }, sk: { S: volume.metadata.name }, rv: { N: '123456' }, uid: { S: volume.metadata.uid }, obj: { S: obj }, deleted: { BOOL: false } } }));
const headers = { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'bench', 'content-length': String(answer.length) };

const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, headers).end(answer));
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const config = { endpoint, region: 'us-east-1', credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' } };

const clients: Record<string, DocumentClient> = {
  sdkDefault: DynamoDBDocumentClient.from(new DynamoDBClient(config), { marshallOptions: { removeUndefinedValues: true } }),
  claimflow: createDocumentClient(config),
  noTransport: createDocumentClient({
    ...config,
    requestHandler: { handle: async () => ({ response: new HttpResponse({ statusCode: 200, headers, body: Readable.from([answer]) }) }) },
  }),
};

const calls = {
  get: (doc: DocumentClient) => doc.send(new GetCommand({ TableName: 'cache', Key: { pk: 'c1#PersistentVolume', sk: volume.metadata.name }, ConsistentRead: true })),
  put: (doc: DocumentClient) =>
    doc.send(
      new PutCommand({
        TableName: 'cache',
        Item: { pk: 'c1#PersistentVolume', sk: volume.metadata.name, rv: 123456, uid: volume.metadata.uid, obj, deleted: false, claimRefPk: 'c1#default/data' },
        ConditionExpression: 'attribute_not_exists(#rv) OR #rv < :rv',
        ExpressionAttributeNames: { '#rv': 'rv' },
        ExpressionAttributeValues: { ':rv': 123456 },
      }),
    ),
};

/** CPU µs per call of `n` calls, `CONCURRENCY` at a time. */
async function cpuPerCall(call: () => Promise<unknown>, n: number): Promise<number> {
  const before = process.cpuUsage();
  let next = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next++ < n) await call();
  }));
  const used = process.cpuUsage(before);
  return (used.user + used.system) / n;
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const samples: Record<string, Record<string, number[]>> = {};
try {
  // Warm-up: connections, JIT, the SDK's lazily resolved config.
  for (const [name, doc] of Object.entries(clients)) {
    samples[name] = {};
    for (const [op, call] of Object.entries(calls)) {
      await cpuPerCall(() => call(doc), 300);
      samples[name][op] = [];
    }
  }
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, doc] of Object.entries(clients)) {
      for (const [op, call] of Object.entries(calls)) samples[name]![op]!.push(await cpuPerCall(() => call(doc), CALLS));
    }
    process.stderr.write(`[aws-sdk] round ${r + 1}/${ROUNDS}\n`);
  }
} finally {
  for (const doc of Object.values(clients)) doc.destroy();
  server.close();
}

const cpuUsPerCall = Object.fromEntries(Object.entries(samples).map(([name, ops]) => [name, Object.fromEntries(Object.entries(ops).map(([op, values]) => [op, Math.round(median(values))]))]));
const share = (op: 'get' | 'put') => Number((cpuUsPerCall.claimflow![op]! / cpuUsPerCall.sdkDefault![op]!).toFixed(2));
console.log(
  JSON.stringify(
    {
      bench: 'aws-sdk',
      callsPerRound: CALLS,
      rounds: ROUNDS,
      concurrency: CONCURRENCY,
      cpuUsPerCall,
      claimflowToSdkDefault: { get: share('get'), put: share('put') },
    },
    null,
    2,
  ),
);
