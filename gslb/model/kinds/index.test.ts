/**
 * The kinds' registry: the kind table in docs/api.md (`POST /v1/signals`) is what kindTable()
 * renders from the kind files, one row per registered kind, in the registry's order.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KIND_LIST, kindTable } from './index.js';
import { checkGenerated } from '../../../test/helpers/generated.js';

test('docs/api.md holds the kind table rendered from the kinds\' registry (npm run docs rewrites it)', () => {
  checkGenerated('docs/api.md', 'kinds', 'gslb/model/kinds/index.ts', kindTable());
});

test('the kind table has one row per registered kind, each with its value shape and notes', () => {
  const rows = kindTable().split('\n').filter((l) => l.startsWith('| `'));
  assert.deepEqual(rows.map((r) => /^\| `([^`]+)`/.exec(r)?.[1]), KIND_LIST.map((k) => k.name));
  for (const k of KIND_LIST) assert.ok(k.doc.value.length > 0 && k.doc.notes.length > 0, `${k.name}: doc.value and doc.notes are filled in`);
});
