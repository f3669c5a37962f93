/**
 * dynalite, the local DynamoDB, started the one way every local stack, fault proxy and test uses it, with
 * the one piece of DynamoDB it lacks and claimflow relies on:
 *
 * `ReturnValuesOnConditionCheckFailure: 'ALL_OLD'` on PutItem, UpdateItem and DeleteItem. DynamoDB then
 * returns the item that made the condition fail inside the `ConditionalCheckFailedException` (as `Item`, in
 * attribute-value form), so a refused write needs no read to learn what won (lib/state/cache.ts). dynalite
 * 4 drops the unknown parameter and answers without the item. Here the parameter is accepted (validated
 * as DynamoDB does: `ALL_OLD` or `NONE`) and the refused item is put in the error. Without this, the local
 * figures count a GetItem per refused write that AWS does not send.
 */
import { createRequire } from 'node:module';
import type { Server } from 'node:http';

const require = createRequire(import.meta.url);

type Conditional = (data: Record<string, unknown>, existingItem: Record<string, unknown> | undefined) => (Error & { body?: Record<string, unknown> }) | null | undefined;

let patched = false;

/** Teaches dynalite `ReturnValuesOnConditionCheckFailure` (idempotent; see the module comment). */
export function patchDynalite(): void {
  if (patched) return;
  patched = true;
  const parameter = { type: 'String', enum: ['ALL_OLD', 'NONE'] };
  for (const action of ['putItem', 'updateItem', 'deleteItem']) {
    const validation = require(`dynalite/validations/${action}.js`) as { types: Record<string, unknown> };
    validation.types.ReturnValuesOnConditionCheckFailure = parameter;
  }
  const db = require('dynalite/db/index.js') as { checkConditional: Conditional };
  const checkConditional = db.checkConditional;
  db.checkConditional = (data, existingItem) => {
    const refused = checkConditional(data, existingItem);
    if (refused?.body && existingItem && data.ReturnValuesOnConditionCheckFailure === 'ALL_OLD') refused.body.Item = existingItem;
    return refused;
  };
}

/** Requests each dynalite server is answering (counted from its creation, for {@link stopDynalite}). */
const answering = new WeakMap<Server, { count: number; drained: Array<() => void> }>();

/** A dynalite server (in memory, tables created at once), patched, not yet listening. */
export function createDynalite(): Server {
  patchDynalite();
  const dynalite = require('dynalite') as (options: { createTableMs?: number; deleteTableMs?: number; updateTableMs?: number }) => Server;
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  const state = { count: 0, drained: [] as Array<() => void> };
  answering.set(server, state);
  server.on('request', (_request, response) => {
    state.count++;
    response.once('close', () => {
      if (--state.count === 0) for (const resolve of state.drained.splice(0)) resolve();
    });
  });
  return server;
}

/**
 * Stops a dynalite server without cutting a request it is working on: it takes no new connection, the
 * requests under way are answered (for `graceMs` at most), then every connection is closed and its database
 * with them. A connection cut mid-request leaves dynalite reading a closed database, and it throws that
 * error where no one can catch it (an uncaught exception in whatever process it runs in).
 */
export async function stopDynalite(server: Server, graceMs = 2000): Promise<void> {
  // close() also closes the idle connections.
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  const state = answering.get(server);
  if (state && state.count > 0) {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([new Promise<void>((resolve) => state.drained.push(resolve)), new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
    clearTimeout(timer);
  }
  // Kept-alive connections would hold the close open: nothing is being answered on them now.
  server.closeAllConnections();
  await closed;
}

/** {@link createDynalite}, listening on `port` (default: any free one) of 127.0.0.1. */
export async function listenDynalite(port = 0): Promise<Server> {
  const server = createDynalite();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return server;
}
