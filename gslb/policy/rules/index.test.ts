/**
 * The rules registry: the precedence table in docs/architecture.md is what precedenceTable()
 * renders from the code; every module of this folder that exports a rule is registered (one
 * file plus one line); the order is the one docs/design.md "Rule order" gives.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PLAN_PASSES, VIEW_RULES, applyViewRules, precedenceTable } from './index.js';
import type { ViewAcc, ViewRule } from './rule.js';
import { checkGenerated } from '../../../test/helpers/generated.js';

test('docs/architecture.md holds the precedence table rendered from the rules (npm run docs rewrites it)', () => {
  checkGenerated('docs/architecture.md', 'precedence', 'gslb/policy/rules/index.ts', precedenceTable());
});

test('every rule module of gslb/policy/rules/ is registered, once, under its own module name', () => {
  const dir = fileURLToPath(new URL('../../../../gslb/policy/rules/', import.meta.url));
  const declared = readdirSync(dir)
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
    .filter((f) => /export const \w+: (ViewRule|PlanPass) = /.test(readFileSync(dir + f, 'utf8')))
    .map((f) => `rules/${f}`)
    .sort();
  const registered = [...VIEW_RULES, ...PLAN_PASSES].map((r) => r.module);
  assert.equal(new Set(registered).size, registered.length, 'a module is registered twice');
  assert.deepEqual([...registered].sort(), declared);
  assert.deepEqual(
    VIEW_RULES.map((r) => r.name),
    ['operator force', 'health', 'slow start', 'operator drain / cap', 'recurring windows', 'grid obligations', 'automation limits', 'power budget', 'compute capacity'],
    "the rule order of docs/design.md: force-down > health > drain/cap > grid obligations > power > compute (recurring windows between: maintenance at drain's rank, tariff and practice lower gridPolicy's share; the automation limits after every rule that lowers it)",
  );
});

test('applyViewRules calls every rule of VIEW_RULES once, in the list\'s order', () => {
  const calls: string[] = [];
  const saved = VIEW_RULES.map((r) => r.apply);
  try {
    for (const r of VIEW_RULES) (r as { apply: ViewRule['apply'] }).apply = () => void calls.push(r.name);
    applyViewRules({} as ViewAcc);
  } finally {
    VIEW_RULES.forEach((r, i) => ((r as { apply: ViewRule['apply'] }).apply = saved[i]!));
  }
  assert.deepEqual(
    calls,
    VIEW_RULES.map((r) => r.name),
  );
});
