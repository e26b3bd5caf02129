/**
 * The planner's rules, in the one order that is written down (docs/design.md "Rule order":
 * operator force-down > health down > operator drain or cap > grid obligations > power
 * budget > compute capacity > carbon, a tie-break only). The view (planner/view.ts) runs
 * VIEW_RULES in this order for one region at one instant (applyViewRules); caps combine by minimum, so the
 * order decides which reasons come first and what a rule may read of the rules before it.
 * PLAN_PASSES run once per plan over every region's schedule. Adding a rule: one module in
 * this folder plus one line here (docs/architecture.md walks through one); the precedence
 * table in docs/architecture.md is rendered from these lists and checked by a test.
 */
import { computeRule } from './compute.js';
import { forceRule } from './force.js';
import { gridRule } from './grid.js';
import { healthRule } from './health.js';
import { operatorRule } from './operator.js';
import { powerRule } from './power.js';
import type { PlanPass, ViewAcc, ViewRule } from './rule.js';
import { lossPass } from './loss.js';
import { safetyPass } from './safety.js';
import { slowStartRule } from './slow-start.js';
import { spillPass } from './spill.js';
import { carbonPass } from './carbon.js';
import { windowsRule } from './windows.js';
import { practicePass } from './practice.js';
import { limitsRule } from './limits.js';
import { routedKinds } from './records.js';
import { mdCell } from '../../model/markdown.js';

export const VIEW_RULES: readonly ViewRule[] = [
  forceRule,
  healthRule,
  slowStartRule,
  operatorRule,
  windowsRule,
  gridRule,
  limitsRule,
  powerRule,
  computeRule,
];


/**
 * Runs VIEW_RULES on one view, in their order. Not a loop over the list: a loop's one call
 * site sees seven functions and V8 does not inline it (measured: a cold plan of 1,000
 * regions ~19 % slower, docs/performance.md). The function is made once from the list with
 * one call site per rule (`r0.apply(a); r1.apply(a); …`), so the order stays declared in one
 * place and each call stays monomorphic. It runs no input: its text is built from indexes.
 */
export const applyViewRules: (a: ViewAcc) => void = new Function(
  ...VIEW_RULES.map((_, i) => `r${i}`),
  `return function applyViewRules(a) {\n${VIEW_RULES.map((_, i) => `  r${i}.apply(a);`).join('\n')}\n};`,
)(...VIEW_RULES) as (a: ViewAcc) => void;

export const PLAN_PASSES: readonly PlanPass[] = [
  lossPass,
  practicePass,
  safetyPass,
  spillPass,
  carbonPass,
];

/** The kinds records.ts routes to a region's records: every kind a view rule, a plan pass or a derivation declares. */
export const ROUTED_KINDS = routedKinds([...VIEW_RULES, ...PLAN_PASSES]);

/** The precedence table as docs/architecture.md holds it (Markdown, between its markers). */
export function precedenceTable(): string {
  const cell = mdCell;
  const rows = [
    '| # | rule | module (gslb/policy/) | reads | can change at | sets |',
    '|---:|---|---|---|---|---|',
    ...VIEW_RULES.map((r, i) => `| ${i + 1} | ${cell(r.name)} | \`${r.module}\` | ${cell(r.reads)} | ${cell(r.changesAt)} | ${cell(r.sets)} |`),
    '',
    'Then, once per plan, over every region\'s schedule:',
    '',
    '| pass | module (gslb/policy/) | reads | can change at | sets |',
    '|---|---|---|---|---|',
    ...PLAN_PASSES.map((r) => `| ${cell(r.name)} | \`${r.module}\` | ${cell(r.reads)} | ${cell(r.changesAt)} | ${cell(r.sets)} |`),
  ];
  return `${rows.join('\n')}\n`;
}
