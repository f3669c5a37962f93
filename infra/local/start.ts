/**
 * `npm start`: the whole of claimflow on this machine (DESIGN §7) — the Kubernetes API emulator, fauxqs,
 * dynalite and the embedded storage control plane; the topic, queues, subscriptions and tables of
 * serverless.yml; the forwarder; and every function run as Lambda runs it (SQS event source mappings
 * and schedules). On the emulator the cluster starts with the Node `local-node` (a storage node of the
 * control plane too) and the default StorageClass `local` (provisioner `claimflow.io/local`, served by
 * the provisioner function with the `local` backend), so a claim without a class gets a fresh volume.
 * Writes `.local/kubeconfig` and `.local/stack.json`, prints one ready line, and stops cleanly on Ctrl-C.
 *
 *   npm start                                # everything local
 *   npm start -- --kubeconfig ~/.kube/config # forwarder and functions against a real cluster
 *   npm start -- --no-schedules --no-storage-api --stage local --state-dir .local
 */
import { parseArgs } from 'node:util';
import { relative } from 'node:path';
import { startStack } from './stack/stack.ts';
import { LOCAL_NODE_NAME, LOCAL_STORAGE_CLASS } from './stack/local-cluster.ts';

const { values } = parseArgs({
  options: {
    kubeconfig: { type: 'string' },
    stage: { type: 'string', default: 'local' },
    region: { type: 'string', default: 'eu-west-1' },
    'state-dir': { type: 'string', default: '.local' },
    'no-forwarder': { type: 'boolean', default: false },
    'no-schedules': { type: 'boolean', default: false },
    'no-storage-api': { type: 'boolean', default: false },
    'watch-history': { type: 'string' },
  },
});

const started = Date.now();
const stack = await startStack({
  stage: values.stage,
  region: values.region,
  stateDir: values['state-dir'],
  kubeconfig: values.kubeconfig,
  withForwarder: !values['no-forwarder'],
  forwarderLogLevel: 'INFO',
  schedules: !values['no-schedules'],
  storageNodeAnnotation: true,
  storageApi: !values['no-storage-api'],
  kubeApiOptions: values['watch-history'] ? { watchHistory: Number(values['watch-history']) } : undefined,
}).catch((error: unknown) => {
  console.error(`claimflow: the local stack did not start: ${(error as Error).stack ?? error}`);
  process.exit(1);
});

const rel = relative(process.cwd(), stack.kubeconfigPath);
const kubeconfig = rel && !rel.startsWith('..') ? rel : stack.kubeconfigPath;
const running = [...new Set([...Object.keys(stack.eventSources), ...(stack.scheduler ? stack.wiring.schedules.flatMap((s) => s.targets.map((t) => t.functionName)) : [])])];
console.log(
  `claimflow local stack ready in ${((Date.now() - started) / 1000).toFixed(1)}s: ` +
    `kube-api ${stack.kubeApi?.url ?? `(cluster of ${kubeconfig})`}, sqs/sns ${stack.sqs.endpoint}, dynamodb ${stack.dynamodb.endpoint}, ` +
    `storage-api ${stack.storageApi?.url ?? '(none)'}` +
    (stack.kubeApi && stack.storageApi ? ` (Node ${LOCAL_NODE_NAME}, default StorageClass ${LOCAL_STORAGE_CLASS})` : '') +
    `; functions: ${running.join(', ') || '(none yet)'}; ` +
    `forwarder: ${stack.forwarder ? 'on' : 'off'} — state in ${values['state-dir']}/stack.json`,
);
console.log(
  [
    'Try next:',
    `  KUBECONFIG=${kubeconfig} kubectl get pvc,pv -A -w`,
    `  KUBECONFIG=${kubeconfig} kubectl apply -f <claim.yaml>`,
    ...(stack.identities?.forwarder
      ? [`  KUBECONFIG=${relative(process.cwd(), stack.identities.forwarder.kubeconfigPath)} kubectl auth can-i --list   # as the forwarder (RBAC is on)`]
      : []),
    `  AWS_ENDPOINT_URL=${stack.sqs.endpoint} AWS_REGION=${stack.env.AWS_REGION} AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local aws sqs list-queues`,
    '  Ctrl-C to stop.',
  ].join('\n'),
);

let stopping = false;
const shutdown = (signal: string): void => {
  if (stopping) {
    console.error(`claimflow: ${signal} again, exiting now`);
    process.exit(130);
  }
  stopping = true;
  console.log(`claimflow: ${signal}, stopping…`);
  stack.stop().then(
    () => {
      console.log('claimflow: stopped');
      process.exit(0);
    },
    (error: unknown) => {
      console.error(`claimflow: stop failed: ${(error as Error).message}`);
      process.exit(1);
    },
  );
};
process.on('SIGINT', () => shutdown('SIGINT'));
process.on('SIGTERM', () => shutdown('SIGTERM'));
