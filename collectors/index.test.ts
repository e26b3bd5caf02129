/**
 * The registry (docs/conventions.md "One folder per extension"): every registered collector is a folder of its own
 * name with a README holding the Name, Signals, Config and Example sections, and a config
 * schema that refuses unknown keys; and its README's Errors section lists exactly the codes of
 * its error tables (collectors/kit/errors.ts); the table of collectors in collectors/README.md is
 * what collectorTable() renders from the registry.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { collectorTable, collectors } from './index.js';
import { checkGenerated } from '../test/helpers/generated.js';
import { CODE_PATTERN, codesOf } from './kit/errors.js';

// dist/collectors → the source folder two levels up.
const src = fileURLToPath(new URL('../../collectors/', import.meta.url));

test('every registered collector has its folder, README sections and a strict config schema', () => {
  assert.ok(collectors.length > 0);
  const names = new Set<string>();
  for (const c of collectors) {
    assert.ok(!names.has(c.name), `${c.name} registered twice`);
    names.add(c.name);
    assert.match(c.name, /^[a-z0-9][a-z0-9-]*$/);
    const readme = join(src, c.name, 'README.md');
    assert.ok(existsSync(readme), `${readme} exists`);
    const text = readFileSync(readme, 'utf8');
    for (const section of ['Name', 'Signals', 'Config', 'Example']) assert.match(text, new RegExp(`^## ${section}$`, 'm'), `${c.name}/README.md has a "## ${section}" section`);
    assert.equal((c.configSchema as { additionalProperties?: unknown }).additionalProperties, false, `${c.name}: unknown config keys are errors`);
    assert.ok(c.mode === 'poller' || c.mode === 'receiver');
  }
});

test('every collector folder is registered', () => {
  // kit/ is the collectors' toolkit (client, receiver server, errors, counters), not a collector.
  const folders = readdirSync(src).filter((f) => f !== 'kit' && statSync(join(src, f)).isDirectory());
  for (const f of folders) assert.ok(collectors.some((c) => c.name === f), `collectors/${f} is not in collectors/index.ts`);
});

/** The text of a README's `## <name>` section (up to the next `## `), or null. */
function section(text: string, name: string): string | null {
  const m = new RegExp(`^## ${name}$`, 'm').exec(text);
  if (!m) return null;
  const rest = text.slice(m.index + m[0].length);
  const end = /^## /m.exec(rest);
  return end ? rest.slice(0, end.index) : rest;
}

test('every error code a collector defines is in its README\'s Errors section, and no other', () => {
  for (const c of collectors) {
    const codes = Object.keys(codesOf(c.errors ?? []));
    const text = readFileSync(join(src, c.name, 'README.md'), 'utf8');
    const errors = section(text, 'Errors');
    if (codes.length === 0) {
      assert.equal(errors, null, `${c.name}/README.md has an Errors section but ${c.name} declares no error table (Collector.errors)`);
      continue;
    }
    assert.ok(errors !== null, `${c.name}/README.md has a "## Errors" section`);
    for (const code of codes) assert.match(code, CODE_PATTERN);
    // Codes listed as table rows: | `CODE` | meaning | what to do |
    const listed = [...errors.matchAll(/^\| `([A-Z0-9_]+)` \|/gm)].map((m) => m[1]!);
    for (const code of codes) assert.ok(listed.includes(code), `${c.name}/README.md Errors lists ${code}`);
    for (const code of listed) assert.ok(codes.includes(code), `${c.name}/README.md Errors lists ${code}, which ${c.name} does not define`);
    assert.equal(new Set(listed).size, listed.length, `${c.name}/README.md Errors lists a code twice`);
  }
});

test('collectors/README.md holds the collector table rendered from the registry (npm run docs rewrites it)', () => {
  for (const c of collectors) assert.ok(c.summary.trim().length > 0, `${c.name}: Collector.summary says what it emits`);
  checkGenerated('collectors/README.md', 'collectors', 'collectors/index.ts', collectorTable());
});
