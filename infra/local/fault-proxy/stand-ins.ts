/**
 * fauxqs (SQS, SNS) and dynalite (DynamoDB) started on their own, for a fault proxy to stand in front of
 * (the stack starts its own only without `awsEndpoint`).
 *
 * @example
 * const aws = await startAwsStandIns({ region: 'eu-west-1' });
 * const proxy = await startFaultProxy({ upstreams: aws.upstreams });
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startFauxqs, type FauxqsServer } from 'fauxqs';
import type { AwsService } from './errors.ts';
import { listenDynalite, stopDynalite } from '../dynalite.ts';


export interface AwsStandIns {
  upstreams: Record<AwsService, string>;
  fauxqs: FauxqsServer;
  dynalite: Server;
  stop(): Promise<void>;
}

export async function startAwsStandIns(options: { region?: string } = {}): Promise<AwsStandIns> {
  const fauxqs = await startFauxqs({ port: 0, logger: false, defaultRegion: options.region ?? 'eu-west-1' });
  let dynalite: Server;
  try {
    dynalite = await listenDynalite();
  } catch (error) {
    await fauxqs.stop();
    throw error;
  }
  const sqs = `http://127.0.0.1:${fauxqs.port}`;
  return {
    upstreams: { sqs, sns: sqs, dynamodb: `http://127.0.0.1:${(dynalite.address() as AddressInfo).port}` },
    fauxqs,
    dynalite,
    async stop() {
      await stopDynalite(dynalite);
      await fauxqs.stop();
    },
  };
}
