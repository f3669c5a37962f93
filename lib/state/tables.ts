/**
 * The two tables of {@link ./schema.ts} as CreateTable inputs: one definition shared by the local stack,
 * the test helper and (by comparison) serverless.yml, so the layout cannot drift between them.
 */
import { CreateTableCommand, DescribeTableCommand, type CreateTableCommandInput, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CLAIM_REF_INDEX, DUE_INDEX, PENDING_CLAIM_INDEX, RESYNC_INDEX, VOLUME_MATCH_INDEX, type TableNames } from './schema.ts';

const allProjected = { ProjectionType: 'ALL' } as const;

/** The object cache: `pk`/`sk`, plus the binder's three sparse indexes. */
export function cacheTableDefinition(tableName: string): CreateTableCommandInput {
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [
      { AttributeName: 'pk', AttributeType: 'S' },
      { AttributeName: 'sk', AttributeType: 'S' },
      { AttributeName: 'matchPk', AttributeType: 'S' },
      { AttributeName: 'matchSk', AttributeType: 'S' },
      { AttributeName: 'claimRefPk', AttributeType: 'S' },
      { AttributeName: 'pendingPk', AttributeType: 'S' },
      { AttributeName: 'pendingSk', AttributeType: 'S' },
      { AttributeName: 'resyncPk', AttributeType: 'S' },
    ],
    KeySchema: [
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ],
    GlobalSecondaryIndexes: [
      {
        IndexName: VOLUME_MATCH_INDEX,
        KeySchema: [
          { AttributeName: 'matchPk', KeyType: 'HASH' },
          { AttributeName: 'matchSk', KeyType: 'RANGE' },
        ],
        Projection: allProjected,
      },
      {
        IndexName: CLAIM_REF_INDEX,
        KeySchema: [
          { AttributeName: 'claimRefPk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        Projection: allProjected,
      },
      {
        IndexName: PENDING_CLAIM_INDEX,
        KeySchema: [
          { AttributeName: 'pendingPk', KeyType: 'HASH' },
          { AttributeName: 'pendingSk', KeyType: 'RANGE' },
        ],
        Projection: allProjected,
      },
      {
        IndexName: RESYNC_INDEX,
        KeySchema: [
          { AttributeName: 'resyncPk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        Projection: allProjected,
      },
    ],
  };
}

/**
 * The control table: `pk` only, plus {@link DUE_INDEX} (`dueShard` S, `dueAt` N epoch ms), a sparse index
 * over the backoff records that are parked until a retry is due.
 */
export function controlTableDefinition(tableName: string): CreateTableCommandInput {
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [
      { AttributeName: 'pk', AttributeType: 'S' },
      { AttributeName: 'dueShard', AttributeType: 'S' },
      { AttributeName: 'dueAt', AttributeType: 'N' },
    ],
    KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
    GlobalSecondaryIndexes: [
      {
        IndexName: DUE_INDEX,
        KeySchema: [
          { AttributeName: 'dueShard', KeyType: 'HASH' },
          { AttributeName: 'dueAt', KeyType: 'RANGE' },
        ],
        Projection: allProjected,
      },
    ],
  };
}

/** Creates both tables (idempotently: an existing table is left as it is) and waits until they are ACTIVE. */
export async function createTables(client: DynamoDBClient, tables: TableNames): Promise<void> {
  for (const input of [cacheTableDefinition(tables.cache), controlTableDefinition(tables.control)]) {
    try {
      await client.send(new CreateTableCommand(input));
    } catch (error) {
      if ((error as { name?: string }).name !== 'ResourceInUseException') throw error;
    }
    for (let attempt = 0; ; attempt++) {
      const { Table } = await client.send(new DescribeTableCommand({ TableName: input.TableName }));
      if (Table?.TableStatus === 'ACTIVE') break;
      if (attempt > 200) throw new Error(`table ${input.TableName} did not become ACTIVE`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
}
