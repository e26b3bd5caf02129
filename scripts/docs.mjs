// npm run docs: rebuilds, then rewrites every generated doc from the code it describes.
// Each generated part is listed here once (test/generated-docs.test.ts fails when a Markdown
// file holds generated markers this list does not name); the test named beside each one
// fails when the doc and the code differ, and rewrites the doc when GRIDSTEER_WRITE_DOCS=1.
// Only that test of its file runs (its name says "npm run docs rewrites it"), so a change
// that another test of the same file pins (a rule order, a list) cannot stop the rewrite.
// Usage: node scripts/docs.mjs
import { spawnSync } from 'node:child_process';

const GENERATED = [
  { doc: 'docs/configuration.md', marker: 'generated', from: 'gslb/config/schema.ts', write: ['dist/gslb/config/doc.js', '--write'] },
  { doc: 'docs/architecture.md', marker: 'precedence', from: 'gslb/policy/rules/index.ts', write: ['--test', 'dist/gslb/policy/rules/index.test.js'] },
  { doc: 'docs/api.md', marker: 'kinds', from: 'gslb/model/kinds/index.ts', write: ['--test', 'dist/gslb/model/kinds/index.test.js'] },
  { doc: 'collectors/README.md', marker: 'collectors', from: 'collectors/index.ts', write: ['--test', 'dist/collectors/index.test.js'] },
];

function run(args, env = process.env) {
  const r = spawnSync(process.execPath, args, { stdio: 'inherit', env });
  if (r.status !== 0) {
    console.error(`docs: node ${args.join(' ')} failed (exit ${r.status ?? r.signal})`);
    process.exit(1);
  }
}

/** The name every rewriting test carries (test/generated-docs.test.ts checks each listed test file has one). */
const REWRITES = 'npm run docs rewrites it';

run(['scripts/build.mjs']);
for (const g of GENERATED) {
  console.log(`docs: ${g.doc} (${g.marker}) from ${g.from}`);
  const args = g.write[0] === '--test' ? ['--test', `--test-name-pattern=${REWRITES}`, ...g.write.slice(1)] : g.write;
  run(args, { ...process.env, GRIDSTEER_WRITE_DOCS: '1' });
}
console.log('docs: every generated doc rewritten; review with git diff');
