/**
 * The house stands (docs/architecture.md): every import of the repository's TypeScript obeys
 * the layer table in test/helpers/house.ts, gslb/ has no folder cycle, the pure core reaches
 * no I/O module and reads no clock, and no production module imports test scaffolding or the
 * simulator. The second half is the checker's own mutation check: each forbidden arrow,
 * written into a copy of the real tree, is reported.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ALLOWED, houseViolations, importsOf, isTestCode, layerOf, layerTableOf } from './helpers/house.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function tree(): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (p.endsWith('.ts') && !p.endsWith('.d.ts')) files.set(relative(ROOT, p).split('\\').join('/'), readFileSync(p, 'utf8'));
    }
  };
  for (const top of ['gslb', 'collectors', 'dashboards', 'test', 'bench']) walk(join(ROOT, top));
  return files;
}

const REAL = tree();

test('the repository obeys the house rules', () => {
  assert.ok(REAL.size > 200, `read ${REAL.size} files from ${ROOT}`);
  assert.ok(REAL.has('gslb/policy/planner/plan.ts') && REAL.has('dashboards/web/src/types.ts'), 'the tree was read');
  assert.deepEqual(houseViolations(REAL), []);
});

test('every production folder of gslb/ has a row in the layer table', () => {
  const layers = new Set([...REAL.keys()].filter((p) => !isTestCode(p)).map(layerOf).filter((l) => l !== null));
  for (const l of layers) assert.ok(l in ALLOWED, `${l} has no row in ALLOWED (test/helpers/house.ts) and docs/architecture.md`);
});

test('the layer table of docs/architecture.md says what ALLOWED says, row by row', () => {
  const doc = layerTableOf(readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8'));
  assert.deepEqual(Object.keys(doc).sort(), Object.keys(ALLOWED).sort(), 'the layers of docs/architecture.md\'s table and of ALLOWED (test/helpers/house.ts)');
  for (const [layer, allowed] of Object.entries(ALLOWED)) {
    assert.deepEqual(
      [...(doc[layer] ?? [])].sort(),
      [...allowed].sort(),
      `${layer}: docs/architecture.md's "may import" cell differs from ALLOWED in test/helpers/house.ts; edit the one that is wrong (the table is not generated: its cells carry comments)`,
    );
  }
});

test('the layer table is read as ALLOWED reads: names, nothing, every layer but …, comments in parentheses', () => {
  const md = ['| layer | holds | may import |', '| --- | --- | --- |', '| `gslb/a/` | x | nothing (a leaf) |', '| `gslb/b/` | y | a (its arithmetic) |', '| `gslb/c.ts` | z | every layer but b |', '| `collectors/` | w | a and b |', ''].join('\n');
  assert.deepEqual(layerTableOf(md), { 'gslb/a': [], 'gslb/b': ['gslb/a'], 'gslb/c.ts': ['gslb/a', 'collectors'], collectors: ['gslb/a', 'gslb/b'] });
  assert.throws(() => layerTableOf(md.replace('a (its arithmetic)', 'a, zz')), /the row of gslb\/b: "zz" .* is not a layer/);
});

test('imports are read in every form, type-only ones marked', () => {
  const src = [
    "import a from './a.js';",
    "import type { B } from '../b/b.js';",
    "import { type C, type D } from './c.js';",
    "import { E, type F } from './e.js';",
    "export { G } from './g.js';",
    "export type { H } from './h.js';",
    "const m = await import('./m.js');",
    "type T = import('./t.js').T;",
    "import fs from 'node:fs';",
  ].join('\n');
  const got = importsOf('gslb/x/y.ts', src).map((i) => `${i.target ?? i.spec}${i.typeOnly ? ' (type)' : ''}`);
  assert.deepEqual(got, ['gslb/x/a.ts', 'gslb/b/b.ts (type)', 'gslb/x/c.ts (type)', 'gslb/x/e.ts', 'gslb/x/g.ts', 'gslb/x/h.ts (type)', 'gslb/x/m.ts', 'gslb/x/t.ts (type)', 'node:fs']);
});

/** The real tree with `line` added at the top of `file`. */
function mutate(file: string, line: string): Map<string, string> {
  const m = new Map(REAL);
  assert.ok(m.has(file), `${file} exists`);
  m.set(file, `${line}\n${m.get(file)!}`);
  return m;
}

const MUTATIONS: [string, string, string, RegExp][] = [
  ['state → policy', 'gslb/state/reducer.ts', "import { plan } from '../policy/planner/index.js';", /gslb\/state may not import gslb\/policy/],
  ['state → control (type only)', 'gslb/state/store.ts', "import type { StateService } from '../control/service.js';", /gslb\/state may not import gslb\/control/],
  ['state → dns', 'gslb/state/memory-store.ts', "import { Responder } from '../dns/respond.js';", /gslb\/state may not import gslb\/dns/],
  ['policy → state', 'gslb/policy/planner/view.ts', "import { reduce } from '../../state/reducer.js';", /gslb\/policy may not import gslb\/state/],
  ['policy → dns', 'gslb/policy/decide.ts', "import { Responder } from '../dns/respond.js';", /gslb\/policy may not import gslb\/dns/],
  ['policy → api', 'gslb/policy/drain.ts', "import { buildApi } from '../api/app.js';", /gslb\/policy may not import gslb\/api/],
  ['policy → control', 'gslb/policy/traffic.ts', "import type { StateService } from '../control/service.js';", /gslb\/policy may not import gslb\/control/],
  ['policy → serve', 'gslb/policy/admission.ts', "import { explain } from '../serve/explain.js';", /gslb\/policy may not import gslb\/serve/],
  ['policy → sim', 'gslb/policy/planner/plan.ts', "import { runScenario } from '../../sim/run.js';", /gslb\/policy may not import gslb\/sim/],
  ['policy → I/O', 'gslb/policy/drain.ts', "import { readFileSync } from 'node:fs';", /pure core reaches the I\/O module node:fs/],
  ['policy → I/O through geo', 'gslb/policy/rules/power.ts', "import { GeoService } from '../../geo/service.js';", /pure core reaches the I\/O module/],
  ['policy reads the clock', 'gslb/policy/rules/spill.ts', 'const started = Date.now();', /pure core reads the clock/],
  ['reducer reads the clock', 'gslb/state/reducer.ts', 'const t0 = performance.now();', /pure core reads the clock/],
  ['geo → policy', 'gslb/geo/locate.ts', "import { decide } from '../policy/decide.js';", /gslb\/geo may not import gslb\/policy/],
  ['collector → state', 'collectors/health/index.ts', "import { reduce } from '../../gslb/state/reducer.js';", /collectors may not import gslb\/state/],
  ['collector → policy', 'collectors/openadr3/parse.ts', "import { plan } from '../../gslb/policy/planner/index.js';", /collectors may not import gslb\/policy/],
  ['collector → dns', 'collectors/mqtt/budget.ts', "import { Responder } from '../../gslb/dns/respond.js';", /collectors may not import gslb\/dns/],
  ['collector → api', 'collectors/carbon/parse.ts', "import { buildApi } from '../../gslb/api/app.js';", /collectors may not import gslb\/api/],
  ['collector → control', 'collectors/prometheus/index.ts', "import { CollectorHost } from '../../gslb/control/collectors.js';", /collectors may not import gslb\/control/],
  ['dashboard → server', 'dashboards/web/src/types.ts', "import type { Plan } from '../../../gslb/model/types.js';", /dashboard imports .* HTTP API/],
  ['dashboard → package', 'dashboards/web/src/types.ts', "import pino from 'pino';", /dashboard imports the package pino/],
  ['core → sim', 'gslb/dns/respond.ts', "import { runScenario } from '../sim/run.js';", /gslb\/dns may not import gslb\/sim/],
  ['production → test scaffolding', 'gslb/control/service.ts', "import { xorshift32 } from '../../test/helpers/policy.js';", /production code imports test scaffolding/],
  ['production → testing module', 'gslb/serve/serving.ts', "import { tempConfig } from '../config/testing.js';", /production code imports test scaffolding gslb\/config\/testing.ts/],
  ['model → anything', 'gslb/model/types.ts', "import type { Plan } from '../policy/planner/index.js';", /gslb\/model may not import gslb\/policy/],
  ['model → a package', 'gslb/model/cell.ts', "import Redis from 'ioredis';", /gslb\/model is a leaf/],
  ['folder cycle', 'gslb/geo/table.ts', "import type { Config } from '../config/schema.js';", /folder cycle gslb\/config ⇄ gslb\/geo/],
];

test('mutation check: each forbidden arrow written into the real tree is reported', () => {
  for (const [what, file, line, want] of MUTATIONS) {
    const got = houseViolations(mutate(file, line));
    assert.ok(got.some((v) => want.test(v)), `${what}: ${file} + ${JSON.stringify(line)} → ${JSON.stringify(got)}`);
  }
});

test('test code may import across layers; production code may not import it', () => {
  assert.deepEqual(houseViolations(mutate('gslb/policy/planner.test.ts', "import { Responder } from '../dns/respond.js';")), []);
  assert.deepEqual(houseViolations(mutate('test/helpers/policy.ts', "import { StateService } from '../../gslb/control/service.js';")), []);
});
