/**
 * The DynamoDB document client every state module shares. Endpoints come from the standard SDK
 * environment (`AWS_ENDPOINT_URL_DYNAMODB` points it at dynalite locally).
 */
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

export type DocumentClient = DynamoDBDocumentClient;

/** A document client that drops `undefined` attributes and keeps numbers exact where they fit. */
export function createDocumentClient(config: DynamoDBClientConfig = {}): DocumentClient {
  return DynamoDBDocumentClient.from(new DynamoDBClient(config), {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
    unmarshallOptions: { wrapNumbers: false },
  });
}
