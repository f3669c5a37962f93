/**
 * Test helper: an in-memory dynalite on an ephemeral port with the cache and control tables created
 * exactly as lib/state/schema.ts describes (see lib/state/tables.ts).
 *
 * @example
 * const db = await startDynalite();
 * after(() => db.stop());
 * await db.doc.send(new PutCommand({ TableName: db.tables.control, Item: { pk: 'x' } }));
 */
import { createRequire } from 'node:module';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createDocumentClient, type DocumentClient } from '../../lib/state/client.ts';
import { createTables } from '../../lib/state/tables.ts';
import type { TableNames } from '../../lib/state/schema.ts';

const require = createRequire(import.meta.url);
const dynalite = require('dynalite') as (options: { createTableMs?: number; deleteTableMs?: number; updateTableMs?: number }) => Server;

/** Static credentials dynalite accepts (it checks the signature's shape, not its validity). */
export const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' } as const;
export const LOCAL_REGION = 'us-east-1';

export interface Dynalite {
  /** `http://127.0.0.1:<port>` */
  endpoint: string;
  /** Document client bound to this dynalite. */
  doc: DocumentClient;
  /** Low-level client bound to this dynalite. */
  client: DynamoDBClient;
  tables: TableNames;
  /** Closes the clients and the server. */
  stop(): Promise<void>;
}

export interface DynaliteOptions {
  /** Table names (default: `cache-<random>` / `control-<random>`). */
  tables?: Partial<TableNames>;
}

/** Starts dynalite in memory on port 0 and creates both tables. */
export async function startDynalite(options: DynaliteOptions = {}): Promise<Dynalite> {
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const endpoint = `http://127.0.0.1:${port}`;
  const suffix = randomBytes(4).toString('hex');
  const tables: TableNames = {
    cache: options.tables?.cache ?? `cache-${suffix}`,
    control: options.tables?.control ?? `control-${suffix}`,
  };
  const config = { endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS };
  const client = new DynamoDBClient(config);
  const doc = createDocumentClient(config);
  await createTables(client, tables);
  let stopped = false;
  return {
    endpoint,
    doc,
    client,
    tables,
    async stop() {
      if (stopped) return;
      stopped = true;
      doc.destroy();
      client.destroy();
      server.closeAllConnections?.();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
