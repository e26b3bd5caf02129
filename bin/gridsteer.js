#!/usr/bin/env node
// The `gridsteer` command: runs the compiled CLI in dist/ (npm ci builds it, as does
// `npm run build`). Without a build it says what to run, in one line, rather than failing
// with a module-not-found stack trace.
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const cli = new URL('../dist/gslb/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(cli))) {
  const root = dirname(dirname(fileURLToPath(import.meta.url)));
  process.stderr.write(`gridsteer: not built (no dist/gslb/cli/main.js): run \`npm run build\` in ${root}\n`);
  process.exit(1);
}
await import(cli.href);
