/**
 * The kinds' registry: the kind table in docs/api.md (`POST /v1/signals`) is what kindTable()
 * renders from the kind files, one row per registered kind, in the registry's order.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KIND_LIST, kindTable } from './index.js';
import { checkGenerated } from '../../../test/helpers/generated.js';
import { SignalError, validateSignal } from '../../state/signals.js';
import { reduce } from '../../state/reducer.js';

test('docs/api.md holds the kind table rendered from the kinds\' registry (npm run docs rewrites it)', () => {
  checkGenerated('docs/api.md', 'kinds', 'gslb/model/kinds/index.ts', kindTable());
});

test('the kind table has one row per registered kind, each with its value shape and notes', () => {
  const rows = kindTable().split('\n').filter((l) => l.startsWith('| `'));
  assert.deepEqual(rows.map((r) => /^\| `([^`]+)`/.exec(r)?.[1]), KIND_LIST.map((k) => k.name));
  for (const k of KIND_LIST) assert.ok(k.doc.value.length > 0 && k.doc.notes.length > 0, `${k.name}: doc.value and doc.notes are filled in`);
});

test("every kind's own examples: the valid ones pass validation and fold; each invalid one is refused naming its field", () => {
  const NOW = 1_893_452_400_000; // an hour before the examples' instants (2030-01-01)
  const regions = new Set(['aa']);
  const envelope = (kind: string, value: unknown) => {
    const id = (value as { id?: unknown } | null)?.id;
    return { region: 'aa', kind, source: 'test/examples', key: typeof id === 'string' ? id : 'k1', observedAt: NOW, expiresAt: NOW + 60_000, value };
  };
  for (const k of KIND_LIST) {
    assert.ok(k.examples.valid.length > 0 && k.examples.invalid.length > 0, `${k.name}: give at least one valid and one invalid example`);
    for (const v of k.examples.valid) {
      const s = validateSignal(envelope(k.name, structuredClone(v)), NOW, regions);
      assert.ok(reduce(undefined, s), `${k.name}: ${JSON.stringify(v)} folds`);
    }
    for (const bad of k.examples.invalid) {
      assert.throws(
        () => validateSignal(envelope(k.name, structuredClone(bad.value)), NOW, regions),
        (e: unknown) => e instanceof SignalError && e.field === bad.field,
        `${k.name}: ${JSON.stringify(bad.value)} is refused naming ${bad.field}`,
      );
    }
  }
});
