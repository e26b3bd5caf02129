/**
 * Generated tables in the docs: a table lives between `<!-- <name>:start (generated from
 * <source>; do not edit by hand) -->` and `<!-- <name>:end -->` in a Markdown file, and a test
 * compares it with what the code renders. `npm run docs` (GRIDSTEER_WRITE_DOCS=1) rewrites
 * them instead of comparing.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './paths.js';

/** How a stale generated table is brought back in line (the failing assertion says it). */
export const REGENERATE = 'run: npm run docs (it rebuilds and rewrites every generated doc)';

/**
 * Checks (or, with GRIDSTEER_WRITE_DOCS=1, rewrites) the table `name` in `doc` (a path from
 * the repository root) against `want`, the rendering of `source`.
 */
export function checkGenerated(doc: string, name: string, source: string, want: string): void {
  const path = join(repoRoot, doc);
  const text = readFileSync(path, 'utf8');
  const start = `<!-- ${name}:start (generated from ${source}; do not edit by hand) -->\n`;
  const end = `<!-- ${name}:end -->`;
  const a = text.indexOf(start);
  const b = text.indexOf(end);
  assert.ok(a >= 0 && b > a, `${doc} has the markers ${start.trim()} … ${end}`);
  if (process.env.GRIDSTEER_WRITE_DOCS === '1') writeFileSync(path, text.slice(0, a + start.length) + want + text.slice(b));
  else assert.equal(text.slice(a + start.length, b), want, `${doc}: the ${name} table differs from ${source}; ${REGENERATE}`);
}
