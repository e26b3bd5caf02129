/**
 * The repository stands on its own (docs/conventions.md "The repository stands on its own"):
 * no tracked file refers to a path outside the repository or to a document that is no file of
 * it, and every relative Markdown link, and every section reference, points at a tracked file
 * and a heading it has. The files are the ones `git ls-files` lists, read from the working
 * tree; binary ones (a NUL byte) are left out. The second half is the checker's own mutation
 * check: each bad reference, written into a copy of the real tree, is reported at its line.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './helpers/paths.js';
import { formatViolation, headingsOf, selfContainedViolations, slugOf } from './helpers/self-contained.js';

/** Every tracked path (`git ls-files`). */
const TRACKED = execFileSync('git', ['ls-files', '-z'], { cwd: repoRoot, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
  .split('\0')
  .filter((p) => p !== '');

/** Every tracked text file, path → text. */
function trackedTexts(): Map<string, string> {
  const files = new Map<string, string>();
  for (const path of TRACKED) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(join(repoRoot, path));
    } catch {
      // Deleted in the working tree but not yet from the index: nothing a clone would read.
      continue;
    }
    if (bytes.includes(0)) continue;
    files.set(path, bytes.toString('utf8'));
  }
  return files;
}

const REAL = trackedTexts();

test('no tracked file refers to anything outside the repository, and every link and section reference resolves', () => {
  assert.ok(REAL.size > 400, `read ${REAL.size} tracked files from ${repoRoot}`);
  for (const p of ['README.md', 'docs/design.md', 'docs/conventions.md', 'gslb/policy/decide.ts']) assert.ok(REAL.has(p), `${p} is tracked and was read`);
  assert.ok(!REAL.has('docs/dashboard.png'), 'binary files are left out');
  const found = selfContainedViolations(REAL, TRACKED).map(formatViolation);
  assert.deepEqual(found, [], `references a clone of the repository cannot follow:\n${found.join('\n')}`);
});

test('anchors are GitHub\'s: lower case, punctuation dropped, duplicates numbered', () => {
  assert.equal(slugOf('How to add …'), 'how-to-add-');
  assert.equal(slugOf('`GET /v1/status` — viewer'), 'get-v1status--viewer');
  assert.equal(slugOf('3. What happens when something fails'), '3-what-happens-when-something-fails');
  const h = headingsOf('# A\n\n## Same\n\n```\n## not a heading\n```\n\n## Same\n<a id="here"></a>\n');
  assert.deepEqual([...h.anchors].sort(), ['a', 'here', 'same', 'same-1']);
  assert.deepEqual([...h.texts].sort(), ['A', 'Same']);
});

/** The real tree with `line` added at the top of `file` (line 1). */
function mutate(file: string, line: string): Map<string, string> {
  const m = new Map(REAL);
  assert.ok(m.has(file), `${file} is tracked`);
  m.set(file, `${line}\n${m.get(file)!}`);
  return m;
}

// The bad names are put together here, so that this file does not hold them itself.
const SIBLING = ['..', 'shared'].join('/');
const MACHINE = `/${'work'}/main`;
const UPPER = `${'DESIGN'}.md`;
/** A section reference in plain text, split so that this file's own text holds none. */
const sectionRef = (path: string, section: string): string => `${path}${section}`;

const MUTATIONS: [string, string, string, RegExp][] = [
  ['a sibling folder in a comment', 'gslb/policy/decide.ts', `// see ${SIBLING}/notes.md`, /^gslb\/policy\/decide\.ts:1: names "\.\.\/shared", a folder beside the checkout/],
  ['an absolute path of the machine', 'README.md', `Read ${MACHINE}/docs first.`, /^README\.md:1: names "\/work\/", an absolute path of the machine/],
  ['a document that is no file of the repository', 'collectors/types.ts', `/** As ${UPPER} says. */`, /^collectors\/types\.ts:1: names DESIGN\.md, which is no file of the repository/],
  ['a Markdown link above the root', 'docs/api.md', '[the notes](../../notes/common.md)', /^docs\/api\.md:1: links to \.\.\/\.\.\/notes\/common\.md, which is outside the repository/],
  ['a Markdown link to a missing file', 'docs/design.md', 'See [the old page](old-design.md).', /^docs\/design\.md:1: links to old-design\.md, which does not exist/],
  ['a broken link from the README', 'README.md', '- [docs/nothing.md](docs/nothing.md)', /^README\.md:1: links to docs\/nothing\.md, which does not exist/],
  ['an absolute link', 'docs/operations.md', '[root](/docs/api.md)', /^docs\/operations\.md:1: links to \/docs\/api\.md, an absolute path/],
  ['a link to a missing heading', 'docs/conventions.md', '[drain](design.md#no-such-section)', /^docs\/conventions\.md:1: the link design\.md#no-such-section: docs\/design\.md has no heading with the anchor #no-such-section/],
  ['a link to a missing heading of the same page', 'docs/design.md', '[here](#nowhere)', /^docs\/design\.md:1: the link #nowhere: docs\/design\.md has no heading with the anchor #nowhere/],
  ['a reference definition to a missing file', 'docs/schedules.md', '[gone]: ./gone.md', /^docs\/schedules\.md:1: links to \.\/gone\.md, which does not exist/],
  ['a section reference in code to a missing heading', 'gslb/policy/drain.ts', `// ${sectionRef('docs/design.md', ' "The drain model, old"')}`, /^gslb\/policy\/drain\.ts:1: docs\/design\.md \(docs\/design\.md\) has no heading "The drain model, old"/],
  ['a section anchor in code to a missing heading', 'gslb/geo/scope.ts', `// ${sectionRef('docs/design.md', '#ecs-scopes')}`, /^gslb\/geo\/scope\.ts:1: docs\/design\.md \(docs\/design\.md\) has no heading with the anchor #ecs-scopes/],
];

for (const [name, file, line, want] of MUTATIONS) {
  test(`the checker reports ${name}`, () => {
    const found = selfContainedViolations(mutate(file, line), TRACKED).map(formatViolation);
    assert.equal(found.length, 1, `exactly one report for ${JSON.stringify(line)} in ${file}, got:\n${found.join('\n')}`);
    assert.match(found[0]!, want);
  });
}

test('what a clone can follow is not reported', () => {
  const fine = [
    ['docs/api.md', '[the design](design.md#choosing-a-region), [ADRs](adr/), [top](../README.md)'],
    ['gslb/policy/decide.ts', '// docs/design.md "Choosing a region", README.md, https://example.com/DOCS.md'],
    ['docs/design.md', '```\n[not a link](nowhere.md)\n```'],
    ['docs/conventions.md', 'Write `[x](nowhere.md)` for a link.'],
  ] as const;
  for (const [file, line] of fine) {
    const found = selfContainedViolations(mutate(file, line), TRACKED).map(formatViolation);
    assert.deepEqual(found, [], `${file}: ${JSON.stringify(line)}`);
  }
});
