// Runs every compiled test file (dist/**/*.test.js) with node's test runner.
// Unit tests sit beside the code they test; integration suites live in test/.
// Usage: node scripts/run-tests.mjs [substring-filter ...]
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

function walk(dir, out) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}

const filters = process.argv.slice(2);
const files = walk('dist', []).sort().filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)));
if (files.length === 0) {
  console.error('run-tests: no test files matched under dist/ (run npm run build first)');
  process.exit(1);
}
const r = spawnSync(process.execPath, ['--enable-source-maps', '--test', '--test-concurrency=2', ...files], { stdio: 'inherit' });
process.exit(r.status ?? 1);
