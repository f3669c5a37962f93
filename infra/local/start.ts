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
 *   npm start -- --aws-endpoint http://localhost:4566   # queues and tables on LocalStack, not fauxqs/dynalite
 *   npm start -- --aws-endpoint aws --region eu-west-1  # … on a real account (default credential chain)
 *   npm start -- --aws-process               # fauxqs and dynalite in a child process, not in this one
 *   npm start -- --param kubeApiQps=400 --param kubeApiBurst=600   # stage parameters, as osls --param
 *   npm start -- --no-schedules --no-storage-api --stage local --state-dir .local
 */
import { parseArgs } from 'node:util';
import { relative } from 'node:path';
import { REAL_AWS, StackStartError, startStack } from './stack/stack.ts';
import { parseParamArgs, ParamError } from './stack/params.ts';
import { LOCAL_NODE_NAME, LOCAL_STORAGE_CLASS } from './stack/local-cluster.ts';

const usage = (message: string): never => {
  console.error(`claimflow: ${message}`);
  process.exit(2);
};

let parsed;
try {
  parsed = parseArgs({
    options: {
      kubeconfig: { type: 'string' },
      stage: { type: 'string', default: 'local' },
      // default: eu-west-1; with --aws-endpoint aws, AWS_REGION / AWS_DEFAULT_REGION first
      region: { type: 'string' },
      'aws-endpoint': { type: 'string' },
      'aws-process': { type: 'boolean', default: false },
      param: { type: 'string', multiple: true, default: [] },
      'state-dir': { type: 'string', default: '.local' },
      'no-forwarder': { type: 'boolean', default: false },
      'no-schedules': { type: 'boolean', default: false },
      'no-storage-api': { type: 'boolean', default: false },
      'watch-history': { type: 'string' },
    },
  });
} catch (error) {
  usage((error as Error).message);
}
const { values } = parsed!;
let params: Record<string, string> = {};
try {
  params = parseParamArgs(values.param);
} catch (error) {
  if (!(error instanceof ParamError)) throw error;
  usage(error.message);
}
const awsEndpoint = values['aws-endpoint'];
const region =
  values.region ?? (awsEndpoint === REAL_AWS ? (process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION) : undefined) ?? 'eu-west-1';

const started = Date.now();
const stack = await startStack({
  stage: values.stage,
  region,
  ...(awsEndpoint ? { awsEndpoint } : {}),
  ...(values['aws-process'] ? { awsStandIns: 'process' as const } : {}),
  ...(Object.keys(params).length > 0 ? { params } : {}),
  stateDir: values['state-dir'],
  kubeconfig: values.kubeconfig,
  withForwarder: !values['no-forwarder'],
  forwarderLogLevel: 'INFO',
  schedules: !values['no-schedules'],
  storageNodeAnnotation: true,
  storageApi: !values['no-storage-api'],
  kubeApiOptions: values['watch-history'] ? { watchHistory: Number(values['watch-history']) } : undefined,
}).catch((error: unknown) => {
  // a StackStartError is a mistake in what was asked (an unknown --param, a bad --aws-endpoint): its message says it all
  console.error(`claimflow: the local stack did not start: ${error instanceof StackStartError ? error.message : ((error as Error).stack ?? error)}`);
  process.exit(1);
});

const rel = relative(process.cwd(), stack.kubeconfigPath);
const kubeconfig = rel && !rel.startsWith('..') ? rel : stack.kubeconfigPath;
const running = [...new Set([...Object.keys(stack.eventSources), ...(stack.scheduler ? stack.wiring.schedules.flatMap((s) => s.targets.map((t) => t.functionName)) : [])])];
console.log(
  `claimflow local stack ready in ${((Date.now() - started) / 1000).toFixed(1)}s: ` +
    `kube-api ${stack.kubeApi?.url ?? `(cluster of ${kubeconfig})`}, ` +
    (awsEndpoint === REAL_AWS ? `sqs/sns/dynamodb on AWS ${region} (default credentials), ` : `sqs/sns ${stack.sqs.endpoint}, dynamodb ${stack.dynamodb.endpoint}, `) +
    (Object.keys(params).length > 0 ? `params ${Object.entries(params).map(([k, v]) => `${k}=${v}`).join(' ')}, ` : '') +
    `API budget ${stack.env.KUBE_API_QPS ?? '?'} QPS, burst ${stack.env.KUBE_API_BURST ?? '?'}, ` +
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
    awsEndpoint === REAL_AWS
      ? `  aws sqs list-queues --region ${region} --queue-name-prefix claimflow-${values.stage}-`
      : `  AWS_ENDPOINT_URL=${stack.sqs.endpoint} AWS_REGION=${stack.env.AWS_REGION} AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local aws sqs list-queues`,
    `  npx claimflow status${values['state-dir'] === '.local' ? '' : ` --stack-file ${values['state-dir']}/stack.json`}`,
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
