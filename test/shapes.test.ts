/**
 * The dashboard's mirror types (dashboards/web/src/types.ts: the browser build imports
 * nothing of the server's) agree with the server's declarations: every field the dashboard
 * reads exists in the shape the server declares (gslb/model for Plan, RegionStep, Override;
 * the fleet routes, operator and explain types for the rest) with a compatible type. Checked
 * with the TypeScript compiler over a small program, so a change on either side that breaks
 * the other fails here; the second test is the check's own mutation check.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import ts from 'typescript';
import { readFileSync } from 'node:fs';
import { REGION_STATE_TABLE } from '../gslb/model/region-state.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Server shape → dashboard shape: each line compiles only if the first is assignable to the second. */
const CHECKS = `
import type * as Model from './gslb/model/types.js';
import type * as FleetT from './gslb/control/fleet.js';
import type * as Op from './gslb/control/operator.js';
import type * as Ex from './gslb/serve/explain.js';
import type { FleetRoutesOptions } from './gslb/api/routes/fleet.js';
import type * as Dash from './dashboards/web/src/types.js';
import type * as RS from './gslb/model/region-state.js';
type Assignable<From, To> = From extends To ? true : false;
const ok = <T extends true>(): T => true as T;
export const checks = [
  ok<Assignable<Model.Plan, Dash.Plan>>(),
  ok<Assignable<Model.RegionStep, Dash.PlanStep>>(),
  ok<Assignable<Model.Override, Dash.Override>>(),
  ok<Assignable<FleetT.SignalView, Dash.SignalView>>(),
  ok<Assignable<FleetT.RegionView, Dash.RegionView>>(),
  ok<Assignable<FleetT.GridEventView, Dash.GridEventView>>(),
  ok<Assignable<Awaited<ReturnType<FleetRoutesOptions['fleet']>>, Dash.Fleet>>(),
  ok<Assignable<Op.FleetStatus, Dash.Status>>(),
  ok<Assignable<Op.Preview, Dash.Preview>>(),
  ok<Assignable<Ex.ExplainResult, Dash.Explain>>(),
  ok<Assignable<RS.RegionState, Dash.RegionView['state']>>(),
  ok<Assignable<Dash.RegionView['state'], RS.RegionState>>(),
];
`;

/** Type errors of CHECKS (+ `extra`), compiled against the real sources. */
function diagnostics(extra = ''): string[] {
  const file = join(ROOT, '__shapes_check__.ts');
  const options: ts.CompilerOptions = { strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, types: ['node'], skipLibCheck: true, noUncheckedIndexedAccess: true };
  const host = ts.createCompilerHost(options);
  const read = host.readFile.bind(host);
  host.readFile = (f) => (f === file ? CHECKS + extra : read(f));
  const exists = host.fileExists.bind(host);
  host.fileExists = (f) => f === file || exists(f);
  const getSource = host.getSourceFile.bind(host);
  host.getSourceFile = (f, lang, onError, create) => (f === file ? ts.createSourceFile(f, CHECKS + extra, lang) : getSource(f, lang, onError, create));
  const program = ts.createProgram([file], options, host);
  return ts
    .getPreEmitDiagnostics(program)
    .filter((d) => d.file?.fileName === file)
    .map((d) => `line ${d.file!.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}: ${(CHECKS + extra).split('\n')[d.file!.getLineAndCharacterOfPosition(d.start ?? 0).line]!.trim()}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`);
}

test("the dashboard's types are satisfied by the server's declared shapes", () => {
  assert.deepEqual(diagnostics(), []);
});

test('mutation check: a dashboard field the server does not declare is reported', () => {
  const bad = `
interface DashPlanWithMore { version: string; regions: Record<string, unknown[]>; rollout: number }
export const bad = ok<Assignable<Model.Plan, DashPlanWithMore>>();
interface DashStepWrong { at: string }
export const bad2 = ok<Assignable<Model.RegionStep, DashStepWrong>>();
`;
  const d = diagnostics(bad);
  assert.equal(d.length, 2, d.join('\n'));
});

test("the dashboard's state legend is the table of gslb/model/region-state.ts, word and meaning", () => {
  const html = readFileSync(join(ROOT, 'dashboards', 'web', 'index.html'), 'utf8');
  const legend = /<p class="legend" id="state-legend">(.*?)<\/p>/s.exec(html);
  assert.ok(legend, 'index.html has the state legend');
  const chips = [...legend[1]!.matchAll(/<span class="chip chip-([a-z]+)" title="([^"]*)">([^<]*)<\/span>/g)].map((m) => ({ cls: m[1], meaning: m[2], word: m[3] }));
  assert.deepEqual(
    chips,
    REGION_STATE_TABLE.map((s) => ({ cls: s.state, meaning: s.meaning, word: s.state })),
  );
  const css = readFileSync(join(ROOT, 'dashboards', 'web', 'style.css'), 'utf8');
  for (const s of REGION_STATE_TABLE) {
    assert.match(css, new RegExp(`\\.chip-${s.state} \\{`), `style.css colours the chip of ${s.state}`);
    assert.match(css, new RegExp(`\\.region-${s.state} \\.dot \\{`), `style.css colours the map dot of ${s.state}`);
  }
});
