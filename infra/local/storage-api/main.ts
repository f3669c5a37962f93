/**
 * `npm run storage-api -- --port <n> --data <file> --volume-root <dir> [--node <name>]...`
 *
 * Runs the embedded storage control plane until SIGINT/SIGTERM and prints one line
 * `storage-api listening on http://127.0.0.1:<port>`. Credentials come from `--username`/`--password`
 * or `STORAGE_API_USERNAME`/`STORAGE_API_PASSWORD` (default `storageos`/`storageos`).
 */
import { parseArgs } from 'node:util';
import { ENV } from '../../../lib/runtime/reconcile.ts';
import { startStorageApi } from './server.ts';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '5705' },
    host: { type: 'string', default: '127.0.0.1' },
    data: { type: 'string' },
    'volume-root': { type: 'string' },
    username: { type: 'string' },
    password: { type: 'string' },
    'token-ttl-seconds': { type: 'string' },
    node: { type: 'string', multiple: true },
  },
  strict: true,
});

const port = Number.parseInt(values.port, 10);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`storage-api: invalid --port ${values.port}`);
  process.exit(2);
}
const ttl = values['token-ttl-seconds'] === undefined ? undefined : Number(values['token-ttl-seconds']) * 1000;

const api = await startStorageApi({
  port,
  host: values.host,
  ...(values.data === undefined ? {} : { dataFile: values.data }),
  ...(values['volume-root'] === undefined ? {} : { volumeRoot: values['volume-root'] }),
  username: values.username ?? process.env[ENV.storageApiUsername] ?? 'storageos',
  password: values.password ?? process.env[ENV.storageApiPassword] ?? 'storageos',
  ...(ttl === undefined || !(ttl > 0) ? {} : { tokenTtlMs: ttl }),
  nodes: values.node ?? [],
});
console.log(`storage-api listening on ${api.url}`);

let stopping = false;
const shutdown = (): void => {
  if (stopping) return;
  stopping = true;
  api.stop().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(`storage-api: stop failed: ${(err as Error).message}`);
      process.exit(1);
    },
  );
};
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
