import { createServer } from 'node:http';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient } from './lib/state/client.ts';
const obj = JSON.stringify({ apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'pvc-0b8c2a52-6b4f-4c55-9f0a-1f6f6f3b7c11', uid: '7d1f3c0e', resourceVersion: '123456' }, spec: { capacity: { storage: '10Gi' }, accessModes: ['ReadWriteOnce'], csi: { driver: 'csi.storageos.com', volumeHandle: '4f1b8d2c-9e10-7d1f-3c0e-2a444d0cb6f5' } }, status: { phase: 'Bound' } });
const answer = Buffer.from(JSON.stringify({ Item: { pk: { S: 'c1#PersistentVolume' }, sk: { S: 'pvc-0b8c2a52' }, rv: { N: '123456' }, obj: { S: obj }, deleted: { BOOL: false } } }));
const headers = { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'bench', 'content-length': String(answer.length) };
const server = createServer((req, res) => { req.resume(); req.on('end', () => res.writeHead(200, headers).end(answer)); });
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const doc = createDocumentClient({ endpoint: `http://127.0.0.1:${(server.address() as any).port}`, region: 'us-east-1', credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' } });
const call = () => doc.send(new GetCommand({ TableName: 'cache', Key: { pk: 'c1#PersistentVolume', sk: 'pvc-0b8c2a52' }, ConsistentRead: true }));
async function run(n: number) { let i = 0; await Promise.all(Array.from({ length: 10 }, async () => { while (i++ < n) await call(); })); }
await run(3000);
const s = process.cpuUsage(); await run(Number(process.env.N ?? 20000)); const e = process.cpuUsage(s); console.log(Math.round((e.user + e.system) / Number(process.env.N ?? 20000)), 'µs/call');
doc.destroy(); server.close();
