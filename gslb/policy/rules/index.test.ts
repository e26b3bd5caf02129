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
});

/** The rules docs/design.md "Rule order" names, in its order (its numbered list: `1. **operator force**: …`). */
function designOrder(): string[] {
  const md = readFileSync(fileURLToPath(new URL('../../../../docs/design.md', import.meta.url)), 'utf8');
  const at = md.indexOf('\n## Rule order\n');
  assert.ok(at >= 0, 'docs/design.md has its "Rule order" section');
  const section = md.slice(at + 1, md.indexOf('\n## ', at + 1) === -1 ? undefined : md.indexOf('\n## ', at + 1));
  return [...section.matchAll(/^\d+\. \*\*([^*]+)\*\*/gm)].map((m) => m[1]!);
}

test('VIEW_RULES keeps the order of docs/design.md "Rule order" (the rules it names, in its order; a rule it does not name may sit anywhere)', () => {
  const design = designOrder();
  assert.ok(design.length >= 5, `docs/design.md "Rule order" lists the rules: ${design.join(', ')}`);
  const names = VIEW_RULES.map((r) => r.name);
  for (const n of design) assert.ok(names.includes(n), `docs/design.md "Rule order" names "${n}", which is no rule of VIEW_RULES (names: ${names.join(', ')})`);
  assert.deepEqual(
    names.filter((n) => design.includes(n)),
    design,
    'the rules docs/design.md "Rule order" names run in its order: force-down > health > drain/cap > grid obligations > power > compute',
  );
  // The automation limits apply the freeze and the safety floor to gridPolicy's share: after every rule that lowers it.
  const at = (n: string) => names.indexOf(n);
  assert.ok(at('automation limits') > at('grid obligations') && at('automation limits') > at('recurring windows'), 'the automation limits run after every rule that lowers gridPolicy\'s share');
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
