/**
 * `npm run docs` regenerates every generated doc: each pair of generated markers in a tracked
 * Markdown file (`<!-- <name>:start … -->`) is listed in scripts/docs.mjs with its file, the
 * package's `docs` script runs it, and the README and docs/architecture.md say so.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './helpers/paths.js';

const read = (p: string) => readFileSync(join(repoRoot, p), 'utf8');

/** Every `<!-- <name>:start` marker of the tracked Markdown files, as `file <name>`. */
function markers(): string[] {
  const md = execFileSync('git', ['ls-files', '-z', '*.md'], { cwd: repoRoot, encoding: 'utf8' }).split('\0').filter((p) => p !== '');
  const out: string[] = [];
  for (const p of md) {
    let text: string;
    try {
      text = read(p);
    } catch {
      continue; // deleted in the working tree, not yet from the index
    }
    for (const m of text.matchAll(/^<!-- ([a-z-]+):start\b/gm)) out.push(`${p} ${m[1]}`);
  }
  return out.sort();
}

test('scripts/docs.mjs lists every generated part of the docs, and npm run docs runs it', () => {
  const script = read('scripts/docs.mjs');
  const listed = [...script.matchAll(/\{ doc: '([^']+)', marker: '([^']+)'/g)].map((m) => `${m[1]} ${m[2]}`).sort();
  assert.ok(listed.length >= 4, 'scripts/docs.mjs lists its generated parts as { doc: …, marker: … }');
  assert.deepEqual(listed, markers(), 'the generated markers of the tracked Markdown files and the list in scripts/docs.mjs (add the new part there, with the command that writes it)');
  const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
  assert.equal(pkg.scripts['docs'], 'node scripts/docs.mjs');
});

test('every test scripts/docs.mjs runs to rewrite a doc has a test named "(npm run docs rewrites it)", the only one it runs', () => {
  const script = read('scripts/docs.mjs');
  const files = [...script.matchAll(/write: \['--test', 'dist\/([^']+)\.test\.js'\]/g)].map((m) => `${m[1]}.test.ts`);
  assert.ok(files.length >= 3, `scripts/docs.mjs runs tests to rewrite docs: ${files.join(', ')}`);
  assert.match(script, /--test-name-pattern=\$\{REWRITES\}/);
  for (const f of files) assert.match(read(f), /test\(['"`].*\(npm run docs rewrites it\)['"`]/, `${f} has a test named "… (npm run docs rewrites it)": npm run docs runs only that one`);
});

test('the README and docs/architecture.md say that npm run docs regenerates the generated docs', () => {
  for (const p of ['README.md', 'docs/architecture.md']) assert.match(read(p), /`npm run docs`/, `${p} names npm run docs`);
});
