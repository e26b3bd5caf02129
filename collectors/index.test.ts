/**
 * The registry (CONVENTIONS.md habit 1): every registered collector is a folder of its own
 * name with a README holding the Name, Signals, Config and Example sections, and a config
 * schema that refuses unknown keys.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { collectors } from './index.js';

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
