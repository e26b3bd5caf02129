// Builds dist/: the server's TypeScript (tsconfig.json), the dashboard's scripts
// (dashboards/web/tsconfig.json) and the dashboard's static files (scripts/build-dashboard.mjs).
//
//   node scripts/build.mjs          rebuild only what changed (npm ci's prepare, npm start, npm test)
//   node scripts/build.mjs --full   rebuild everything (npm run build)
//
// Incremental: `tsc -b` keeps its build info in dist/.build/ (so it goes when dist/ goes) and
// skips a project whose inputs are older than that info; a project with a missing output (a
// .js deleted by hand) is rebuilt in full, since `tsc -b` does not look for its outputs. The
// dashboard's static files are rebuilt when a sha256 over their inputs (the files beside
// dashboards/web/src, the world-atlas outline and build-dashboard.mjs itself) differs from the
// stamp left by the last build, or an output is missing.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const full = process.argv.includes('--full');
const require = createRequire(import.meta.url);
const started = performance.now();
const stamps = join(root, 'dist', '.build');

let tsc;
try {
  tsc = require.resolve('typescript/bin/tsc');
} catch {
  // `npm ci --omit=dev` runs prepare without the compiler: nothing to build with, and a
  // production install must not fail for it (the container image builds in its own stage).
  if (process.env.npm_lifecycle_event === 'prepare') {
    console.log('build: skipped (typescript is not installed: dev dependencies omitted)');
    process.exit(0);
  }
  console.error('build: typescript is not installed: run `npm ci` first');
  process.exit(1);
}

/** Every .ts (not .d.ts) under dir, recursively. */
function sources(dir, out = []) {
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (name === 'node_modules') continue;
    if (statSync(p).isDirectory()) sources(p, out);
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** The TypeScript projects: their config, build info, and each source with its expected output. */
const projects = [
  {
    config: 'tsconfig.json',
    info: join(stamps, 'main.tsbuildinfo'),
    outputs: () => ['gslb', 'collectors', 'test', 'bench'].flatMap((d) => sources(join(root, d))).map((f) => [f, join(root, 'dist', relative(root, f)).replace(/\.ts$/, '.js')]),
  },
  {
    config: 'dashboards/web/tsconfig.json',
    info: join(stamps, 'web.tsbuildinfo'),
    outputs: () => {
      const src = join(root, 'dashboards', 'web', 'src');
      return sources(src).map((f) => [f, join(root, 'dist', 'dashboards', 'web', 'js', relative(src, f)).replace(/\.ts$/, '.js')]);
    },
  },
];

const done = [];
if (!full) {
  for (const p of projects) {
    if (!existsSync(p.info)) continue;
    // A source newer than the build info is one tsc -b compiles anyway (a new file, say);
    // an older one without its output is one it would skip.
    const built = statSync(p.info).mtimeMs;
    const missing = p
      .outputs()
      .filter(([src]) => statSync(src).mtimeMs <= built)
      .map(([, js]) => js)
      .find((js) => !existsSync(js));
    if (missing !== undefined) {
      console.log(`build: ${relative(root, missing)} is missing: rebuilding ${p.config} in full`);
      rmSync(p.info);
    }
  }
}
const args = [tsc, '-b', ...(full ? ['--force'] : []), ...projects.map((p) => p.config)];
const t = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
if (t.status !== 0) process.exit(t.status ?? 1);
done.push(full ? 'typescript (full)' : 'typescript (incremental)');

// The dashboard's static files.
const web = join(root, 'dashboards', 'web');
const out = join(root, 'dist', 'dashboards', 'web');
const inputs = [
  join(root, 'scripts', 'build-dashboard.mjs'),
  require.resolve('world-atlas/land-110m.json'),
  ...readdirSync(web)
    .map((n) => join(web, n))
    .filter((p) => statSync(p).isFile() && !p.endsWith('tsconfig.json')),
].sort();
const hash = createHash('sha256');
for (const f of inputs) hash.update(`${relative(root, f)}\0`).update(readFileSync(f)).update('\0');
const digest = hash.digest('hex');
const stamp = join(stamps, 'dashboard.sha256');
// What build-dashboard.mjs writes.
const outputs = ['index.html', 'style.css', 'favicon.svg', 'land.json'].map((n) => join(out, n));
const current = !full && existsSync(stamp) && readFileSync(stamp, 'utf8') === digest && outputs.every((f) => existsSync(f));
if (!current) {
  const d = spawnSync(process.execPath, [join(root, 'scripts', 'build-dashboard.mjs')], { cwd: root, stdio: 'inherit' });
  if (d.status !== 0) process.exit(d.status ?? 1);
  mkdirSync(stamps, { recursive: true });
  writeFileSync(stamp, digest);
  done.push('dashboard');
}
console.log(`build: ${done.join(', ')} in ${((performance.now() - started) / 1000).toFixed(1)} s${current ? '; dashboard unchanged' : ''}`);
