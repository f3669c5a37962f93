/**
 * Entry point of the forwarder container (`npm run forwarder`, `node lib/forwarder/main.ts`): reads the
 * configuration (see `config.ts`), starts a replica, and on SIGTERM/SIGINT stops it gracefully — the
 * watches stop, queued events are published, the lease is released — then exits.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { KubeConfig } from '@kubernetes/client-node';
import { SNSClient } from '@aws-sdk/client-sns';
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { createDocumentClient } from '../state/client.ts';
import { sdkClientConfig, withCachedHandlers, withFastConfig } from '../runtime/sdk-client.ts';
import { loadConfig } from './config.ts';
import { startForwarder } from './forwarder.ts';

const logger = new Logger({ serviceName: 'claimflow-forwarder' });

async function main(): Promise<void> {
  const config = loadConfig();
  const kubeConfig = new KubeConfig();
  if (config.kubeconfig) kubeConfig.loadFromFile(config.kubeconfig);
  else if (process.env.KUBERNETES_SERVICE_HOST) kubeConfig.loadFromCluster();
  else kubeConfig.loadFromDefault();

  const forwarder = await startForwarder({
    cluster: config.cluster,
    kubeConfig,
    sns: withFastConfig(withCachedHandlers(new SNSClient({ ...sdkClientConfig(), cacheMiddleware: true }))),
    topicArn: config.topicArn,
    doc: createDocumentClient(),
    tables: config.tables,
    kinds: config.kinds,
    serviceSelector: config.serviceSelector,
    lease: config.lease,
    httpPort: config.httpPort,
    queueCapacity: config.queueCapacity,
    watchSilenceMs: config.watchSilenceMs,
    ownWriteHoldMs: config.ownWriteHoldMs,
    bookmarkIntervalMs: config.bookmarkIntervalMs,
    publishAll: config.publishAll,
    subscriptionsRefreshMs: config.subscriptionsRefreshMs,
    logger,
    defaultMetrics: true,
    heartbeat:
      config.heartbeatIntervalMs > 0
        ? {
            intervalMs: config.heartbeatIntervalMs,
            cloudwatch: config.cloudwatchNamespace ? { client: withFastConfig(new CloudWatchClient(sdkClientConfig())), namespace: config.cloudwatchNamespace } : undefined,
          }
        : false,
  });
  logger.info('forwarder started', {
    cluster: config.cluster,
    port: forwarder.port,
    kinds: config.kinds,
    leaderElection: config.lease !== false,
    heartbeat: config.heartbeatIntervalMs > 0 ? { intervalMs: config.heartbeatIntervalMs, cloudwatchNamespace: config.cloudwatchNamespace ?? null } : false,
  });

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down', { signal });
    forwarder
      .stop()
      .then(() => process.exit(0))
      .catch((err) => {
        logger.error('shutdown failed', { error: (err as Error).message });
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err) => {
  logger.error('forwarder failed to start', { error: (err as Error).message });
  process.exit(1);
});
