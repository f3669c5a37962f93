/**
 * The fault proxy: an HTTP proxy in front of AWS-compatible endpoints (fauxqs for SQS/SNS, dynalite for
 * DynamoDB, or one LocalStack-like URL) that injects faults into the requests matching a rule:
 * - `throttle`: the service's throttling error (DynamoDB `ProvisionedThroughputExceededException` or, with
 *   `code`, `ThrottlingException`; SQS `RequestThrottled`; SNS `Throttled`), see errors.ts;
 * - `internal`: a 500 (DynamoDB `InternalServerError`, SQS/SNS `InternalError`);
 * - `latency`: `latencyMs` before the request is forwarded;
 * - `drop`: the connection is closed without an answer, the request never forwarded;
 * - `lose-response`: the request is forwarded and done, then the connection is closed (the client does not
 *   know it happened).
 *
 * A request is classified by service (the SigV4 credential scope, else `X-Amz-Target`, else the query
 * `Version`) and operation (`X-Amz-Target` after the dot, else the query `Action`). A rule matches by
 * service and operations, applies to `times` matching requests (default: all), each with `probability`
 * drawn from the proxy's seeded generator. Rules are added in code (`proxy.faults.add`) or over HTTP:
 * `POST /_fault-proxy/faults` (a rule as JSON), `DELETE /_fault-proxy/faults`, `GET /_fault-proxy/faults`
 * (rules left and what was injected).
 *
 * @example
 * const proxy = await startFaultProxy({ upstreams: { sqs: fauxqsUrl, sns: fauxqsUrl, dynamodb: dynaliteUrl }, seed: 7 });
 * proxy.faults.add({ service: 'dynamodb', operations: ['PutItem'], kind: 'throttle', times: 2 });
 * // startStack({ awsEndpoint: proxy.url }): the next two PutItems are throttled (the SDK retries them)
 */
import { createServer, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { awsError, type AwsProtocol, type AwsService } from './errors.ts';

export type { AwsService } from './errors.ts';
export type AwsFaultKind = 'throttle' | 'internal' | 'latency' | 'drop' | 'lose-response';

export interface AwsFaultRule {
  /** Any service when absent. */
  service?: AwsService;
  /** Operation names (`ReceiveMessage`, `PutItem`, `Publish`); any when absent. */
  operations?: string[];
  kind: AwsFaultKind;
  /** Error code instead of the service's default (e.g. `ThrottlingException` for DynamoDB). */
  code?: string;
  /** With `latency`: the delay (default 500 ms). */
  latencyMs?: number;
  /** Matching requests it applies to (default: every one until removed). */
  times?: number;
  /** Chance that a matching request is hit (default 1), from the proxy's seeded generator. */
  probability?: number;
  /** A name for the counts (default `service operations kind`). */
  label?: string;
}

/** A classified request. */
export interface AwsRequestInfo {
  service: AwsService | undefined;
  operation: string;
  protocol: AwsProtocol;
}

export interface FaultProxyOptions {
  /** Where each service's requests go; a string: one endpoint for all three. */
  upstreams: string | Partial<Record<AwsService, string>>;
  /** Seed of the generator `probability` draws from (default 1). */
  seed?: number;
  port?: number;
  host?: string;
}

/** A rule as the proxy holds it. */
export interface ActiveRule extends AwsFaultRule {
  id: number;
  /** Requests it hit so far. */
  hits: number;
}

export interface FaultProxy {
  url: string;
  port: number;
  faults: {
    add(rule: AwsFaultRule): number;
    remove(id: number): void;
    clear(): void;
    readonly rules: readonly ActiveRule[];
  };
  /** Faults injected, by `label` (or `service operation kind`). */
  readonly injected: Record<string, number>;
  /** Requests seen, by `service operation`. */
  readonly requests: Record<string, number>;
  stop(): Promise<void>;
}

const CONTROL_PATH = '/_fault-proxy/faults';
const SERVICES = new Set<string>(['sqs', 'sns', 'dynamodb']);

/** Service, operation and protocol of a request (its body as read). */
export function classify(headers: IncomingHttpHeaders, body: string): AwsRequestInfo {
  const target = String(headers['x-amz-target'] ?? '');
  const scope = /Credential=[^/]+\/\d+\/[^/]+\/([^/]+)\/aws4_request/.exec(String(headers.authorization ?? ''))?.[1];
  let service: AwsService | undefined = scope && SERVICES.has(scope) ? (scope as AwsService) : undefined;
  if (target) {
    service ??= target.startsWith('DynamoDB_') ? 'dynamodb' : target.startsWith('AmazonSQS.') ? 'sqs' : undefined;
    return { service, operation: target.slice(target.indexOf('.') + 1), protocol: 'json' };
  }
  const form = new URLSearchParams(body);
  service ??= form.get('Version') === '2010-03-31' ? 'sns' : form.get('Version') === '2012-11-05' ? 'sqs' : undefined;
  return { service, operation: form.get('Action') ?? '', protocol: 'query' };
}

/** mulberry32: a small seeded generator, so a plan's `probability` draws repeat with the seed. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const labelOf = (rule: AwsFaultRule, info: AwsRequestInfo) => rule.label ?? `${info.service ?? 'unknown'} ${info.operation} ${rule.kind}`;

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((ok, fail) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => ok(Buffer.concat(chunks)));
    req.on('error', fail);
  });
}

/** Checks a rule given over HTTP (or in code): a message naming what is wrong. */
export function checkRule(rule: AwsFaultRule): void {
  const kinds: AwsFaultKind[] = ['throttle', 'internal', 'latency', 'drop', 'lose-response'];
  if (!kinds.includes(rule.kind)) throw new Error(`fault rule: kind must be one of ${kinds.join(', ')}, got ${JSON.stringify(rule.kind)}`);
  if (rule.service !== undefined && !SERVICES.has(rule.service)) throw new Error(`fault rule: service must be sqs, sns or dynamodb, got ${JSON.stringify(rule.service)}`);
  if (rule.operations !== undefined && (!Array.isArray(rule.operations) || rule.operations.some((o) => typeof o !== 'string'))) throw new Error('fault rule: operations must be a list of names');
  if (rule.probability !== undefined && !(rule.probability >= 0 && rule.probability <= 1)) throw new Error('fault rule: probability must be in [0, 1]');
}

export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const upstreams = typeof options.upstreams === 'string' ? { sqs: options.upstreams, sns: options.upstreams, dynamodb: options.upstreams } : options.upstreams;
  const random = seeded(options.seed ?? 1);
  let rules: ActiveRule[] = [];
  let nextId = 1;
  const injected: Record<string, number> = {};
  const requests: Record<string, number> = {};

  const add = (rule: AwsFaultRule): number => {
    checkRule(rule);
    const id = nextId++;
    rules.push({ ...rule, id, hits: 0 });
    return id;
  };
  /** The first live rule that takes this request (and counts it), or none. */
  const take = (info: AwsRequestInfo): ActiveRule | undefined => {
    for (const rule of rules) {
      if (rule.service !== undefined && rule.service !== info.service) continue;
      if (rule.operations !== undefined && !rule.operations.includes(info.operation)) continue;
      if (rule.probability !== undefined && rule.probability < 1 && random() >= rule.probability) continue;
      rule.hits++;
      if (rule.times !== undefined && rule.hits >= rule.times) rules = rules.filter((r) => r !== rule);
      const label = labelOf(rule, info);
      injected[label] = (injected[label] ?? 0) + 1;
      return rule;
    }
    return undefined;
  };

  const control = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const send = (status: number, value: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(value));
    };
    if (req.method === 'GET') return send(200, { rules, injected, requests });
    if (req.method === 'DELETE') {
      rules = [];
      return send(200, { cleared: true });
    }
    if (req.method === 'POST') {
      try {
        const id = add(JSON.parse((await readBody(req)).toString('utf8')) as AwsFaultRule);
        return send(201, { id });
      } catch (error) {
        return send(400, { message: (error as Error).message });
      }
    }
    send(405, { message: 'GET, POST or DELETE' });
  };

  const forward = (req: IncomingMessage, res: ServerResponse, body: Buffer, upstream: string, loseResponse: boolean): void => {
    const target = new URL(upstream);
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const out = send(
      { protocol: target.protocol, hostname: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        if (loseResponse) {
          // done upstream; the client never hears of it
          answer.resume();
          answer.on('end', () => req.socket.destroy());
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    out.on('error', (error) => res.destroy(error));
    out.end(body);
  };

  const server: Server = createServer((req, res) => {
    void (async () => {
      if ((req.url ?? '').startsWith(CONTROL_PATH)) return control(req, res);
      const body = await readBody(req);
      const info = classify(req.headers, body.toString('utf8'));
      const key = `${info.service ?? 'unknown'} ${info.operation}`;
      requests[key] = (requests[key] ?? 0) + 1;
      const upstream = info.service ? upstreams[info.service] : undefined;
      if (!upstream) {
        res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(`fault proxy: no upstream for ${key}`);
        return;
      }
      const rule = take(info);
      switch (rule?.kind) {
        case 'throttle':
        case 'internal': {
          const e = awsError({ service: info.service!, protocol: info.protocol }, rule.kind, rule.code);
          res.writeHead(e.status, { ...e.headers, 'content-length': String(Buffer.byteLength(e.body)) });
          res.end(e.body);
          return;
        }
        case 'drop':
          req.socket.destroy();
          return;
        case 'latency':
          await new Promise((r) => setTimeout(r, rule.latencyMs ?? 500));
          break;
      }
      forward(req, res, body, upstream, rule?.kind === 'lose-response');
    })().catch((error: unknown) => res.destroy(error as Error));
  });
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => ok());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}`,
    port,
    faults: {
      add,
      remove: (id) => void (rules = rules.filter((r) => r.id !== id)),
      clear: () => void (rules = []),
      get rules() {
        return rules;
      },
    },
    injected,
    requests,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((ok) => server.close(() => ok()));
    },
  };
}
