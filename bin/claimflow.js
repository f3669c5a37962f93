#!/usr/bin/env node
// `npx claimflow …` — the operator CLI. The logic lives in lib/ops/ (TypeScript, run by Node 24 directly).
import process from 'node:process';

const [major] = process.versions.node.split('.').map(Number);
if (major < 24) {
  process.stderr.write(`claimflow needs Node 24 (this is ${process.version}); \`npm ci\` installs it — run through npx or npm exec\n`);
  process.exit(2);
}
const { main } = await import('../lib/ops/cli.ts');
process.exitCode = await main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env });
