/**
 * Stopping dynalite (infra/local/dynalite.ts, `stopDynalite`) while a request is under way: the request is
 * answered and the server closes. Cutting its connection first left dynalite reading its closed database,
 * and it threw that where nothing catches it (the soak's "Database is closed").
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { listenDynalite, stopDynalite } from '../../infra/local/dynalite.ts';

test('a request under way when dynalite stops is answered, and nothing is thrown after', async () => {
  const server = await listenDynalite();
  const uncaught: Error[] = [];
  const onUncaught = (error: Error) => uncaught.push(error);
  process.on('uncaughtException', onUncaught);
  let stopping: Promise<void> | undefined;
  // Stop the moment dynalite has the whole request and has started on it.
  server.prependListener('request', (request) => request.once('end', () => (stopping ??= stopDynalite(server))));
  const client = new DynamoDBClient({ endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, region: 'us-east-1', credentials: { accessKeyId: 'l', secretAccessKey: 'l' }, maxAttempts: 1 });
  try {
    const answer = await client.send(new ListTablesCommand({}));
    assert.deepEqual(answer.TableNames, []);
    assert.ok(stopping, 'the stop began while the request was being answered');
    await stopping;
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(uncaught.map((e) => e.message), []);
    assert.equal(server.listening, false);
  } finally {
    process.off('uncaughtException', onUncaught);
    client.destroy();
  }
});
