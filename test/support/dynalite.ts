/**
 * Test helper: an in-memory dynalite on an ephemeral port with the cache and control tables created
 * exactly as lib/state/schema.ts describes (see lib/state/tables.ts).
 *
 * @example
 * const db = await startDynalite();
 * after(() => db.stop());
 * await db.doc.send(new PutCommand({ TableName: db.tables.control, Item: { pk: 'x' } }));
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createDocumentClient, type DocumentClient } from '../../lib/state/client.ts';
import { createTables } from '../../lib/state/tables.ts';
import type { TableNames } from '../../lib/state/schema.ts';
import { listenDynalite, stopDynalite } from '../../infra/local/dynalite.ts';


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
  /** A DynamoDB-compatible endpoint already running (its tables are created; `stop()` closes only the clients). */
  endpoint?: string;
}

/** Starts dynalite in memory on port 0 (or uses `options.endpoint`) and creates both tables. */
export async function startDynalite(options: DynaliteOptions = {}): Promise<Dynalite> {
  let server: Server | undefined;
  let endpoint = options.endpoint;
  if (endpoint === undefined) {
    const started = await listenDynalite();
    server = started;
    endpoint = `http://127.0.0.1:${(started.address() as AddressInfo).port}`;
  }
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
      if (!server) return;
      await stopDynalite(server);
    },
  };
}
