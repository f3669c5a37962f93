/**
 * `node infra/local/fault-proxy/stand-ins-main.ts [--region R] [--port N] [--host H]`: fauxqs (SQS, SNS) and
 * dynalite (DynamoDB) in a process of their own, behind one URL: a fault proxy without rules, routing each
 * request by service, as LocalStack's edge port serves all three. That URL is what `startStack({ awsEndpoint })`
 * and `npm start -- --aws-endpoint URL` take.
 *
 * Started by {@link startAwsStandInsProcess} (stand-ins-process.ts) with an IPC channel, it sends one
 * {@link StandInsReady} message once everything listens and exits when the channel closes (its parent
 * stopped it, or died), not on a Ctrl-C's SIGINT (its parent gets that too, and stops it when done). Started
 * by hand, it prints one line with the URL and exits on SIGINT/SIGTERM.
 * Everything is in memory: exiting is the whole cleanup.
 *
 * @example
 * // node infra/local/fault-proxy/stand-ins-main.ts --port 4566
 * // aws stand-ins (fauxqs + dynalite) on http://127.0.0.1:4566
 * // npm start -- --aws-endpoint http://127.0.0.1:4566
 */
import { parseArgs } from 'node:util';
import type { AwsService } from './errors.ts';
import { startFaultProxy } from './proxy.ts';
import { startAwsStandIns } from './stand-ins.ts';

/** What the process sends its parent once it serves. */
export interface StandInsReady {
  type: 'ready';
  /** The rule-less proxy: one URL for SQS, SNS and DynamoDB. */
  url: string;
  /** fauxqs and dynalite themselves, by service. */
  upstreams: Record<AwsService, string>;
}

const { values } = parseArgs({
  options: {
    region: { type: 'string', default: 'eu-west-1' },
    port: { type: 'string', default: '0' },
    host: { type: 'string', default: '127.0.0.1' },
  },
});

const aws = await startAwsStandIns({ region: values.region });
const proxy = await startFaultProxy({ upstreams: aws.upstreams, port: Number(values.port), host: values.host });
const exit = (): never => process.exit(0);
process.once('SIGTERM', exit);
if (process.send) {
  // Ctrl-C reaches the terminal's whole process group: the parent, still stopping, needs us until it is done
  process.on('SIGINT', () => {});
  // the parent's end of the channel closes when it stops us or dies (even killed): nothing outlives it
  process.once('disconnect', exit);
  const ready: StandInsReady = { type: 'ready', url: proxy.url, upstreams: aws.upstreams };
  process.send(ready);
} else {
  process.once('SIGINT', exit);
  console.log(`aws stand-ins (fauxqs + dynalite) on ${proxy.url} (fauxqs ${aws.upstreams.sqs}, dynalite ${aws.upstreams.dynamodb})`);
}
