/**
 * `npm run kube-api -- --port <n> [--watch-history <n>] [--service-cidr <cidr>] [--data <file>]
 * [--token-auth-file <csv>] [--authorization-mode AlwaysAllow|RBAC] [--anonymous-auth] [--write-kubeconfig <file>] [--http1]`:
 * prints `kube-api listening on http://127.0.0.1:<port>` once it accepts requests; exits 0 on SIGINT/SIGTERM.
 * Authentication is off (every request allowed) unless `--token-auth-file` or `--authorization-mode` is given;
 * `--write-kubeconfig` writes a kubeconfig for it (with the admin token when authentication is on).
 * With authentication it serves https: HTTP/2 and HTTP/1.1 by ALPN, as kube-apiserver, or HTTPS/1.1 alone
 * with `--http1`.
 */
import { parseArgs } from 'node:util';
import { startKubeApi } from './index.ts';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    host: { type: 'string', default: '127.0.0.1' },
    'watch-history': { type: 'string' },
    'service-cidr': { type: 'string' },
    data: { type: 'string' },
    'token-auth-file': { type: 'string' },
    'authorization-mode': { type: 'string' },
    'anonymous-auth': { type: 'boolean', default: false },
    'write-kubeconfig': { type: 'string' },
    http1: { type: 'boolean', default: false },
  },
  strict: true,
});

const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(`kube-api: invalid --port ${values.port}\n`);
  process.exit(2);
}
const history = values['watch-history'] !== undefined ? Number(values['watch-history']) : undefined;
if (history !== undefined && (!Number.isInteger(history) || history < 1)) {
  process.stderr.write(`kube-api: invalid --watch-history ${values['watch-history']}\n`);
  process.exit(2);
}

const mode = values['authorization-mode'];
if (mode !== undefined && mode !== 'RBAC' && mode !== 'AlwaysAllow') {
  process.stderr.write(`kube-api: invalid --authorization-mode ${mode} (RBAC or AlwaysAllow)\n`);
  process.exit(2);
}
const authOn = values['token-auth-file'] !== undefined || mode !== undefined;
if (values.http1 && !authOn) {
  process.stderr.write('kube-api: --http1 needs https, which authentication turns on (--token-auth-file or --authorization-mode); without it the emulator serves plain HTTP/1.1 already\n');
  process.exit(2);
}

const api = await startKubeApi({
  port,
  host: values.host,
  ...(history !== undefined ? { watchHistory: history } : {}),
  ...(values['service-cidr'] ? { serviceCidr: values['service-cidr'] } : {}),
  ...(values.http1 ? { http1: true } : {}),
  ...(values.data ? { dataFile: values.data } : {}),
  ...(authOn ? {
    auth: {
      ...(values['token-auth-file'] ? { tokenAuthFile: values['token-auth-file'] } : {}),
      authorizationMode: mode ?? 'RBAC',
      anonymous: values['anonymous-auth'],
    },
  } : {}),
});
if (values['write-kubeconfig']) await api.writeKubeconfig(values['write-kubeconfig']);
process.stdout.write(`kube-api listening on ${api.url}\n`);

let stopping = false;
const shutdown = (): void => {
  if (stopping) return;
  stopping = true;
  api.stop().then(() => process.exit(0), (err) => {
    process.stderr.write(`kube-api: ${(err as Error).message}\n`);
    process.exit(1);
  });
};
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
