/**
 * AWS-shaped error responses, in the protocol each SDK v3 client speaks to its service here:
 * - DynamoDB: JSON 1.0 (`X-Amz-Target: DynamoDB_20120810.Op`), the error in `__type`;
 * - SQS: JSON 1.0 (`X-Amz-Target: AmazonSQS.Op`) and query compatible: the query error code in the
 *   `x-amzn-query-error` header (`Code;Sender|Receiver`) as SQS sends it; a query-protocol request
 *   (`Action=…`, older clients) gets the XML form;
 * - SNS: query (`Action=Publish&…`), the error as `<ErrorResponse>` XML.
 *
 * @example
 * awsError({ service: 'dynamodb', protocol: 'json' }, 'throttle')
 * // { status: 400, headers: {…x-amz-json-1.0}, body: '{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",…}' }
 */
import { randomUUID } from 'node:crypto';

export type AwsService = 'sqs' | 'sns' | 'dynamodb';
export type AwsProtocol = 'json' | 'query';

/** Error a fault answers with: AWS throttling, or a server-side error. */
export type ErrorFault = 'throttle' | 'internal';

interface ErrorShape {
  status: number;
  /** Error code (the query `Code`, the JSON `__type` after `#`). */
  code: string;
  /** JSON `__type` namespace. */
  namespace: string;
  message: string;
}

/** What each service answers by default; `code` of a rule may name another (see {@link awsError}). */
const DEFAULTS: Record<AwsService, Record<ErrorFault, ErrorShape>> = {
  dynamodb: {
    throttle: { status: 400, code: 'ProvisionedThroughputExceededException', namespace: 'com.amazonaws.dynamodb.v20120810', message: 'The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.' },
    internal: { status: 500, code: 'InternalServerError', namespace: 'com.amazonaws.dynamodb.v20120810', message: 'Internal server error' },
  },
  sqs: {
    throttle: { status: 400, code: 'RequestThrottled', namespace: 'com.amazonaws.sqs', message: 'Request is throttled.' },
    internal: { status: 500, code: 'InternalError', namespace: 'com.amazonaws.sqs', message: 'We encountered an internal error. Please try again.' },
  },
  sns: {
    throttle: { status: 429, code: 'Throttled', namespace: 'com.amazonaws.sns', message: 'Rate exceeded' },
    internal: { status: 500, code: 'InternalError', namespace: 'com.amazonaws.sns', message: 'Internal Error' },
  },
};

/** Namespaces of codes a rule may name that are not the service's own (`__type` as DynamoDB sends it). */
const NAMESPACE_OF_CODE: Record<string, string> = {
  ThrottlingException: 'com.amazon.coral.availability',
};

export interface AwsErrorResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const xmlEscape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** The response `service` sends for `fault` (with `code` instead of the default code when given). */
export function awsError(request: { service: AwsService; protocol: AwsProtocol }, fault: ErrorFault, code?: string): AwsErrorResponse {
  const shape = { ...DEFAULTS[request.service][fault] };
  if (code && code !== shape.code) {
    shape.code = code;
    shape.namespace = NAMESPACE_OF_CODE[code] ?? shape.namespace;
  }
  const requestId = randomUUID();
  const type = fault === 'internal' ? 'Receiver' : 'Sender';
  if (request.protocol === 'json') {
    const headers: Record<string, string> = { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': requestId };
    if (request.service === 'sqs') headers['x-amzn-query-error'] = `${shape.code};${type}`;
    return { status: shape.status, headers, body: JSON.stringify({ __type: `${shape.namespace}#${shape.code}`, message: shape.message }) };
  }
  const body =
    `<?xml version="1.0"?><ErrorResponse xmlns="${request.service === 'sns' ? 'http://sns.amazonaws.com/doc/2010-03-31/' : 'http://queue.amazonaws.com/doc/2012-11-05/'}">` +
    `<Error><Type>${type}</Type><Code>${xmlEscape(shape.code)}</Code><Message>${xmlEscape(shape.message)}</Message></Error>` +
    `<RequestId>${requestId}</RequestId></ErrorResponse>`;
  return { status: shape.status, headers: { 'content-type': 'text/xml', 'x-amzn-requestid': requestId }, body };
}
