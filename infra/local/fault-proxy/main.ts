/**
 * `node infra/local/fault-proxy/main.ts --upstream URL [--port N] [--seed S]` (or `--sqs URL --sns URL
 * --dynamodb URL` for one endpoint per service): the fault proxy on its own, e.g. in front of LocalStack,
 * for `npm start -- --aws-endpoint http://127.0.0.1:N`. Faults are added over HTTP:
 *
 *   curl -X POST localhost:N/_fault-proxy/faults -d '{"service":"dynamodb","kind":"throttle","times":20}'
 *   curl localhost:N/_fault-proxy/faults          # rules left, faults injected, requests seen
 *   curl -X DELETE localhost:N/_fault-proxy/faults
 */
import { parseArgs } from 'node:util';
import { startFaultProxy } from './proxy.ts';

const { values } = parseArgs({
  options: {
    upstream: { type: 'string' },
    sqs: { type: 'string' },
    sns: { type: 'string' },
    dynamodb: { type: 'string' },
    port: { type: 'string', default: '0' },
    host: { type: 'string', default: '127.0.0.1' },
    seed: { type: 'string', default: '1' },
  },
});
const upstreams = values.upstream ?? { ...(values.sqs ? { sqs: values.sqs } : {}), ...(values.sns ? { sns: values.sns } : {}), ...(values.dynamodb ? { dynamodb: values.dynamodb } : {}) };
if (typeof upstreams !== 'string' && Object.keys(upstreams).length === 0) {
  console.error('fault proxy: give --upstream URL, or --sqs/--sns/--dynamodb URL');
  process.exit(2);
}
const proxy = await startFaultProxy({ upstreams, port: Number(values.port), host: values.host, seed: Number(values.seed) });
console.log(`fault proxy on ${proxy.url} (control: ${proxy.url}/_fault-proxy/faults)`);
const stop = () => void proxy.stop().then(() => process.exit(0));
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
