/**
 * Installs the tools the test suite drives that npm cannot provide: Debian's kubectl
 * (`kubernetes-client`), for the kubectl compatibility test. Runs before `npm test`; a no-op when
 * kubectl is already on PATH. Needs root and Debian's package index (as on CI and developer machines).
 */
import { execFileSync, spawnSync } from 'node:child_process';

function has(command: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

if (!has('kubectl')) {
  if (process.getuid?.() !== 0 || !has('apt-get')) {
    console.error('ensure-tools: kubectl is missing and cannot be installed here (needs root and apt-get); the kubectl compatibility test will fail.');
  } else {
    console.log('ensure-tools: installing kubectl (Debian package kubernetes-client)');
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
    execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'kubernetes-client'], { stdio: 'inherit', env });
  }
}
