/**
 * The reference in docs/configuration.md is what doc.ts renders from the schema, and every
 * setting of the schema has a description to render.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ConfigSchema, RegionSchema } from './schema.js';
import type { SchemaLike } from './describe.js';
import { DOC_FILE, END_MARKER, generatedPart, renderReference, settingsOf, spliceReference, START_MARKER, WRITE_COMMAND } from './doc.js';

test('docs/configuration.md holds the reference doc.ts renders from the schema', () => {
  const doc = readFileSync(DOC_FILE, 'utf8');
  const have = generatedPart(doc);
  const want = renderReference();
  if (have !== want) {
    const a = have.split('\n');
    const b = want.split('\n');
    let i = 0;
    while (i < a.length && i < b.length && a[i] === b[i]) i++;
    assert.fail(
      `${DOC_FILE}: the generated reference is out of date with gslb/config/schema.ts.\n` +
        `Run: npm run docs (or npm run build && ${WRITE_COMMAND})\n` +
        `First difference, line ${i + 1} of the generated part:\n  in the doc: ${a[i] ?? '(end)'}\n  rendered:   ${b[i] ?? '(end)'}`,
    );
  }
});

test('the reference lists every setting of gridsteer.yaml and of a region file', () => {
  const ref = renderReference();
  for (const s of [...settingsOf(ConfigSchema as SchemaLike), ...settingsOf(RegionSchema as SchemaLike)]) {
    assert.ok(ref.includes(`| \`${s.path}\` |`), `${s.path} has a row`);
  }
  for (const path of ['dns.udpPayloadMax', 'dns.tcp.maxPipelined', 'zones[].records[].data', 'names[].whenAllDown', 'endpoints[].address', 'power.importLimitW']) {
    assert.ok(ref.includes(`| \`${path}\` |`), `${path} has a row`);
  }
  assert.match(ref, /\| `dns\.udpPayloadMax` \| integer 512 to 4096 \| `1232` \| largest UDP reply in bytes/);
  assert.match(ref, /\| `zones` \| list of mappings \(≥ 1\) \| \*\*required\*\* \|/);
  assert.match(ref, /\| `workers` \| "auto" or integer 0 to 256 \| `"auto"` \|/);
  assert.match(ref, /\| `names\[\]\.whenAllDown` \| one of "nearest", "all", "empty", "servfail" \| optional \|/);
  assert.match(ref, /\| `bias` \| number -99 to 99 \| `0` \| Route 53 geoproximity bias/);
  assert.match(ref, /\| DNS name \| a DNS name: labels of letters/);
});

test('every setting has a description (the help text of the reference)', () => {
  const missing = [...settingsOf(ConfigSchema as SchemaLike), ...settingsOf(RegionSchema as SchemaLike)]
    .filter((s) => !s.schema.description)
    .map((s) => s.path);
  assert.deepEqual(missing, [], 'add a description to these settings in gslb/config/schema.ts');
});

test('spliceReference replaces only what is between the markers, and needs both', () => {
  const doc = `# Title\n\nintro\n\n${START_MARKER}\nold\n${END_MARKER}\n\nafter\n`;
  const next = spliceReference(doc, 'new\n');
  assert.equal(next, `# Title\n\nintro\n\n${START_MARKER}\nnew\n${END_MARKER}\n\nafter\n`);
  assert.equal(generatedPart(next), 'new\n');
  assert.equal(spliceReference(next, 'new\n'), next, 'idempotent');
  assert.throws(() => spliceReference('# no markers\n', 'x'), /markers .* are missing or out of order: add them, then run node dist\/gslb\/config\/doc\.js --write/);
  assert.throws(() => generatedPart(`${END_MARKER}\n${START_MARKER}\n`), /out of order/);
});

test('regions/README.md describes every key of a region file', () => {
  const readme = readFileSync(fileURLToPath(new URL('../../../regions/README.md', import.meta.url)), 'utf8');
  const leaves = settingsOf(RegionSchema as SchemaLike).filter((s) => s.schema.type !== 'object' || s.schema.patternProperties);
  const missing = leaves.filter((s) => !readme.includes(`| \`${s.path}\` |`)).map((s) => s.path);
  assert.deepEqual(missing, [], 'add a row for these keys to the table in regions/README.md');
});
