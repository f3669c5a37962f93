/**
 * The SQS client the runtime uses. When `AWS_ENDPOINT_URL_SQS` points it at a local stand-in, requests go
 * there whatever host the queue URL names (the SDK otherwise switches to the queue URL's host, which for
 * local queue URLs like `http://sqs.us-east-1.127.0.0.1:4566/…` is not even a valid URL).
 */
import { SQSClient, type SQSClientConfig } from '@aws-sdk/client-sqs';
import { sdkClientConfig, withCachedHandlers, withFastConfig } from './sdk-client.ts';

/** An SQS client for this environment. */
export function createSqsClient(config: SQSClientConfig = {}, env: NodeJS.ProcessEnv = process.env): SQSClient {
  const local = Boolean(env.AWS_ENDPOINT_URL_SQS || env.AWS_ENDPOINT_URL || config.endpoint);
  return withFastConfig(withCachedHandlers(new SQSClient({ ...sdkClientConfig(), ...(local ? { useQueueUrlAsEndpoint: false } : {}), ...config, cacheMiddleware: true })));
}

/** `arn:aws:sqs:<region>:<account>:<name>` → the queue URL. */
export function queueUrlFromArn(arn: string): string | undefined {
  const parts = arn.split(':');
  if (parts.length !== 6 || parts[2] !== 'sqs') return undefined;
  const [, partition, , region, account, name] = parts;
  const domain = partition === 'aws-cn' ? 'amazonaws.com.cn' : 'amazonaws.com';
  return `https://sqs.${region}.${domain}/${account}/${name}`;
}
