/**
 * The house's rules (docs/architecture.md), as a checker over source texts: which layer may
 * import which, no folder cycles inside gslb/, no I/O or clock reads in the pure core, no
 * production module importing test scaffolding or the simulator. Pure: it is handed the
 * files (path → TypeScript source) and returns what breaks the rules, in words; test/house.test.ts
 * runs it over the repository and over hand-made cases (its own mutation check).
 *
 * Imports are read with the TypeScript compiler's parser: `import … from`, `export … from`,
 * `import x = require(…)` and dynamic `import(…)`, type-only ones included (a type import is
 * still an arrow between layers; only the I/O rule looks at runtime imports alone).
 */
import ts from 'typescript';
import { posix } from 'node:path';

/** A layer: a folder under gslb/ (or gslb/main.ts), collectors/, dashboards/. */
export type Layer = string;

/**
 * Which layers each layer may import (besides itself). Everything not listed is forbidden.
 * Read bottom-up: model and platform are leaves; policy is pure and sits on model and geo's
 * arithmetic; state sits on model alone; control and serve compose; api, main and cli wire.
 */
export const ALLOWED: Record<Layer, readonly Layer[]> = {
  'gslb/model': [],
  'gslb/platform': [],
  'gslb/geo': ['gslb/model', 'gslb/platform'],
  'gslb/policy': ['gslb/model', 'gslb/geo'],
  'gslb/state': ['gslb/model', 'gslb/platform'],
  'gslb/config': ['gslb/model', 'gslb/platform', 'gslb/geo', 'collectors'],
  'gslb/dns': ['gslb/model', 'gslb/platform', 'gslb/geo', 'gslb/policy', 'gslb/config'],
  'gslb/control': ['gslb/model', 'gslb/platform', 'gslb/config', 'gslb/geo', 'gslb/policy', 'gslb/state', 'collectors'],
  'gslb/serve': ['gslb/model', 'gslb/platform', 'gslb/config', 'gslb/geo', 'gslb/policy', 'gslb/dns'],
  'gslb/api': ['gslb/model', 'gslb/platform', 'gslb/config', 'gslb/geo', 'gslb/policy', 'gslb/state', 'gslb/control', 'gslb/serve'],
  'gslb/sim': ['gslb/model', 'gslb/platform', 'gslb/config', 'gslb/geo', 'gslb/policy', 'gslb/state'],
  'gslb/main.ts': ['gslb/model', 'gslb/platform', 'gslb/config', 'gslb/geo', 'gslb/policy', 'gslb/state', 'gslb/dns', 'gslb/control', 'gslb/serve', 'gslb/api', 'collectors'],
  'gslb/cli': ['gslb/model', 'gslb/platform', 'gslb/config', 'gslb/geo', 'gslb/policy', 'gslb/state', 'gslb/dns', 'gslb/control', 'gslb/serve', 'gslb/api', 'gslb/sim', 'gslb/main.ts'],
  // Collectors only emit facts: the shapes of facts, and leaves with no GridSteer knowledge.
  collectors: ['gslb/model', 'gslb/platform'],
  // The dashboard talks to the HTTP API only: it imports nothing of the server's.
  dashboards: [],
};

/** The pure core: no I/O modules, no clock reads (docs/design.md "The pure core": same inputs → same bytes on every node). */
export const PURE: readonly string[] = ['gslb/model/', 'gslb/policy/', 'gslb/state/reducer.ts', 'gslb/geo/distance.ts', 'gslb/geo/scope.ts'];

/** Modules that do I/O (or read the process's environment): never imported at run time by the pure core. */
export const IO_MODULES: readonly string[] = [
  'fs', 'fs/promises', 'net', 'dgram', 'http', 'https', 'http2', 'tls', 'dns', 'child_process', 'cluster', 'worker_threads', 'os', 'process', 'readline', 'inspector', 'perf_hooks', 'timers', 'timers/promises', 'v8', 'vm',
  'ioredis', 'mqtt', 'fastify', 'pino', 'prom-client', 'node-cron', 'dns2', 'mmdb-lib', '@maxmind/geoip2-node', 'undici',
];

/** Clock reads the pure core must not make (time is an argument there). */
const CLOCK_READS = /\bDate\.now\s*\(|\bnew Date\s*\(\s*\)|\bperformance\.now\s*\(|\bprocess\.hrtime\b/;

/** True for test code and test scaffolding: exempt from the layer rules, never imported by production code. */
export function isTestCode(path: string): boolean {
  return (
    path.startsWith('test/') ||
    path.startsWith('bench/') ||
    /\.test\.ts$/.test(path) ||
    /(^|\/)(testing|testing-[a-z-]+|test-[a-z-]+|[a-z-]+-fixture|[a-z-]+\.conformance)\.ts$/.test(path)
  );
}

/** The layer of a repository path, or null outside the checked tree. */
export function layerOf(path: string): Layer | null {
  if (path === 'gslb/main.ts') return 'gslb/main.ts';
  const m = /^gslb\/([^/]+)\//.exec(path);
  if (m) return `gslb/${m[1]}`;
  if (path.startsWith('collectors/')) return 'collectors';
  if (path.startsWith('dashboards/')) return 'dashboards';
  return null;
}

export interface Import {
  /** The specifier as written. */
  spec: string;
  /** Repository path of a relative import's target (`.js` read as `.ts`), else null (a package or built-in). */
  target: string | null;
  typeOnly: boolean;
  line: number;
}

const parsed = new Map<string, Import[]>();

/** Every import of one source file (parsed once per path and text). */
export function importsOf(path: string, source: string): Import[] {
  const key = `${path}\0${source}`;
  const known = parsed.get(key);
  if (known) return known;
  const sf = ts.createSourceFile(path, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const out: Import[] = [];
  const add = (spec: string, typeOnly: boolean, node: ts.Node) => {
    const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
    const target = spec.startsWith('.') ? posix.normalize(posix.join(posix.dirname(path), spec)).replace(/\.js$/, '.ts') : null;
    out.push({ spec, target, typeOnly, line });
  };
  const visit = (n: ts.Node): void => {
    if (ts.isImportDeclaration(n) && ts.isStringLiteral(n.moduleSpecifier)) {
      const c = n.importClause;
      const allTypes = c !== undefined && (c.isTypeOnly || (c.name === undefined && c.namedBindings !== undefined && ts.isNamedImports(c.namedBindings) && c.namedBindings.elements.length > 0 && c.namedBindings.elements.every((e) => e.isTypeOnly)));
      add(n.moduleSpecifier.text, allTypes, n);
    } else if (ts.isExportDeclaration(n) && n.moduleSpecifier && ts.isStringLiteral(n.moduleSpecifier)) {
      add(n.moduleSpecifier.text, n.isTypeOnly, n);
    } else if (ts.isImportEqualsDeclaration(n) && ts.isExternalModuleReference(n.moduleReference) && ts.isStringLiteral(n.moduleReference.expression)) {
      add(n.moduleReference.expression.text, n.isTypeOnly, n);
    } else if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword && n.arguments[0] && ts.isStringLiteralLike(n.arguments[0])) {
      add(n.arguments[0].text, false, n);
    } else if (ts.isImportTypeNode(n) && ts.isLiteralTypeNode(n.argument) && ts.isStringLiteral(n.argument.literal)) {
      add(n.argument.literal.text, true, n);
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  parsed.set(key, out);
  return out;
}

const builtin = (spec: string): string => spec.replace(/^node:/, '');

/** A package's name from a bare specifier (`@scope/pkg/x` → `@scope/pkg`). */
function packageOf(spec: string): string {
  const s = builtin(spec);
  const parts = s.split('/');
  return s.startsWith('@') ? parts.slice(0, 2).join('/') : IO_MODULES.includes(s) ? s : parts[0]!;
}

/** The folder-level cycles among gslb/ layers (each as `a → b → … → a`). */
function cycles(edges: Map<Layer, Set<Layer>>): string[] {
  const out: string[] = [];
  const index = new Map<Layer, number>();
  const low = new Map<Layer, number>();
  const stack: Layer[] = [];
  const on = new Set<Layer>();
  let i = 0;
  const strong = (v: Layer): void => {
    index.set(v, i);
    low.set(v, i++);
    stack.push(v);
    on.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const scc: Layer[] = [];
      let w: Layer;
      do {
        w = stack.pop()!;
        on.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1) out.push(`${scc.sort().join(' ⇄ ')}`);
    }
  };
  for (const v of [...edges.keys()].sort()) if (!index.has(v)) strong(v);
  return out;
}

/**
 * What breaks the house in `files` (repository path → source), one line each naming the
 * file, the line and the rule. Empty when the house stands.
 */
export function houseViolations(files: ReadonlyMap<string, string>): string[] {
  const out: string[] = [];
  const folderEdges = new Map<Layer, Set<Layer>>();
  const runtimeImports = new Map<string, Import[]>();
  for (const [path, source] of [...files].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
    if (!path.endsWith('.ts')) continue;
    const test = isTestCode(path);
    const from = layerOf(path);
    const imports = importsOf(path, source);
    runtimeImports.set(path, imports.filter((x) => !x.typeOnly));
    for (const imp of imports) {
      const at = `${path}:${imp.line}`;
      if (imp.target !== null) {
        // Test scaffolding and the simulator are never imported by production code.
        if (!test && isTestCode(imp.target)) out.push(`${at}: production code imports test scaffolding ${imp.target}`);
        if (test || from === null) continue;
        const to = layerOf(imp.target);
        if (to === null) {
          out.push(`${at}: ${from} imports ${imp.target}, outside the layered tree`);
          continue;
        }
        if (to === from) continue;
        if (from === 'dashboards') out.push(`${at}: the dashboard imports ${imp.target}; it may only talk to the HTTP API`);
        else if (!(ALLOWED[from] ?? []).includes(to)) out.push(`${at}: ${from} may not import ${to} (${imp.target}); allowed: ${(ALLOWED[from] ?? []).join(', ') || 'nothing'}`);
        if (from.startsWith('gslb/') && to.startsWith('gslb/')) {
          if (!folderEdges.has(from)) folderEdges.set(from, new Set());
          folderEdges.get(from)!.add(to);
        }
      } else if (!test && from === 'dashboards' && !imp.typeOnly) {
        out.push(`${at}: the dashboard imports the package ${imp.spec}; it is built without packages and talks to the HTTP API only`);
      } else if (!test && from === 'gslb/model' && !['@sinclair/typebox', 'crypto'].includes(packageOf(imp.spec))) {
        out.push(`${at}: gslb/model is a leaf: schema libraries and Node built-ins only, not ${imp.spec}`);
      }
    }
  }
  for (const c of cycles(folderEdges)) out.push(`gslb/: folder cycle ${c}`);
  // The pure core: no I/O module reachable through runtime imports, no clock reads.
  const pure = (p: string) => PURE.some((x) => (x.endsWith('/') ? p.startsWith(x) : p === x)) && !isTestCode(p);
  for (const path of [...runtimeImports.keys()].sort()) {
    if (!pure(path)) continue;
    const src = files.get(path)!;
    const clock = src.split('\n').findIndex((l) => CLOCK_READS.test(l.replace(/\/\/.*$/, '')) && !/^\s*\*/.test(l));
    if (clock >= 0) out.push(`${path}:${clock + 1}: the pure core reads the clock (pass now as an argument)`);
    const seen = new Set<string>([path]);
    const queue: { file: string; via: string[] }[] = [{ file: path, via: [path] }];
    while (queue.length > 0) {
      const { file, via } = queue.shift()!;
      for (const imp of runtimeImports.get(file) ?? []) {
        if (imp.target === null) {
          if (IO_MODULES.includes(packageOf(imp.spec))) out.push(`${path}: the pure core reaches the I/O module ${imp.spec} (${[...via, imp.spec].join(' → ')})`);
        } else if (!seen.has(imp.target)) {
          seen.add(imp.target);
          queue.push({ file: imp.target, via: [...via, imp.target] });
        }
      }
    }
  }
  return out;
}

/**
 * The layer table of docs/architecture.md ("| layer | holds | may import |") read as ALLOWED
 * reads: layer → the layers it may import. A "may import" cell is layer names without the
 * `gslb/` prefix (`model, platform`), `nothing`, or `every layer but …` (every row's layer but
 * its own and those named); words in parentheses are comments. Throws naming the row when a
 * cell names something that is not a layer of the table.
 */
export function layerTableOf(markdown: string): Record<Layer, Layer[]> {
  const lines = markdown.split('\n');
  const head = lines.findIndex((l) => /^\| layer \| holds \| may import \|$/.test(l));
  if (head < 0) throw new Error('docs/architecture.md has no "| layer | holds | may import |" table');
  const rows: Array<[Layer, string]> = [];
  for (const line of lines.slice(head + 2)) {
    if (!line.startsWith('|')) break;
    const [layer, , may] = line.split(/(?<!\\)\|/).slice(1, -1).map((c) => c.trim());
    if (layer === undefined || may === undefined) throw new Error(`docs/architecture.md, the layer table: a row without three cells: ${line}`);
    rows.push([layer.replace(/`/g, '').replace(/\/$/, ''), may]);
  }
  const layers = rows.map(([l]) => l);
  const full = (name: string): Layer => (name.startsWith('gslb/') || name === 'collectors' || name === 'dashboards' ? name : `gslb/${name}`);
  const names = (layer: Layer, list: string): Layer[] =>
    list.split(/,\s*|\s+and\s+/).map((n) => {
      const l = full(n.trim());
      if (!layers.includes(l)) throw new Error(`docs/architecture.md, the row of ${layer}: "${n.trim()}" in its "may import" cell is not a layer of the table`);
      return l;
    });
  const table: Record<Layer, Layer[]> = {};
  for (const [layer, cell] of rows) {
    const words = cell.replace(/\([^)]*\)/g, '').replace(/\s+/g, ' ').trim();
    const but = /^every layer but (.+)$/.exec(words)?.[1];
    if (words === 'nothing') table[layer] = [];
    else if (but !== undefined) {
      const except = new Set(names(layer, but));
      table[layer] = layers.filter((l) => l !== layer && !except.has(l));
    } else table[layer] = names(layer, words);
  }
  return table;
}
