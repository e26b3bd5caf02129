/**
 * The ingest campaign (issue 27): generated and mutated signals through `POST /v1/signals` at
 * a fleet of three GridSteer nodes (`gridsteer serve` processes) on one real redis-server,
 * all on loopback, while a DNS probe asks every node every 100 ms. A bench, not a test: it
 * prints a table and exits 1 when a goal is missed.
 *
 *   npm run build && node dist/bench/ingest-campaign.js [options]
 *
 *   --signals N      signals to send in all, over the three nodes (default 1000000); the run
 *                    also stops after --minutes of ingest, whichever comes first
 *   --seed S         generator seed (default 20261227)
 *   --minutes M      bound on the ingest phase (default 20)
 *   --workers N      DNS worker processes per node (default 0: answered in the primary)
 *   --keys K         keys per source (default 4): each region holds 2 × K records of each
 *                    kind (and a few more at the domains' ends); the planner's work grows with it
 *   --report FILE    also write the report as JSON
 *   --failures DIR   where the exact bodies of failing requests are written (default: a new
 *                    directory under the system's temp dir, named in the output)
 *
 * What is sent (signals are counted, not requests; a request carries 1 to 1000):
 *
 * - every kind of the registry (gslb/model/kinds/), each value generated from the kind's own
 *   TypeBox schema (its fields, ranges, lengths and literals: no second copy of a bound) with
 *   boundary values: 0, -0 (written as `-0` in the JSON text), each range's ends, the next
 *   double past them, 2^53−1, 1e308, 1e400 (JSON for Infinity), the envelope's and the
 *   values' instants at INSTANT_MIN / INSTANT_MAX, the longest validity of the kind, the
 *   longest grid event, empty and longest strings;
 * - mutations of valid signals: wrong types, strings for numbers, out of range, non-integers,
 *   unknown fields (`__proto__` and `constructor` among them), missing fields, far-future
 *   instants (9e15, 8.64e15, seconds or µs for ms), the cross-field rules of validateSignal
 *   (end before start, key ≠ id, a cap event without cap, a grid event that ended, a demand
 *   bucket off the 10 s grid, expiresAt ≤ observedAt, too long a validity, observedAt ahead),
 *   unknown regions and kinds, text that is not text (control characters, lone surrogates),
 *   a signal that is not an object; and request-level ones: an empty list, 1001 signals, a
 *   body over the 1 MiB limit, truncated JSON, a wrong content type, a wrong token;
 * - cancels (a grid.event sent before, again with `cancelled: true` and a newer observedAt)
 *   and replays (a signal acknowledged before, sent again as it was or with an older
 *   observedAt: it must come back `stale`).
 *
 * Each node has two lanes, one request in flight on each: batches (35 % all valid, answered
 * 200; 63 % valid signals with one or a few mutated ones among them, 400 and none stored; 2 %
 * request-level mutations) and single mutated signals. The store is the test helper's
 * redis-server (AOF, appendfsync always, in the system's temp dir: TMPDIR chooses the disk),
 * so every stored signal waits for an fsync; a valid batch is the slow request. The expected answer of every
 * request comes from the project's own validator (validateSignal of gslb/state/signals.ts,
 * run here on exactly the parsed body the node receives): 200 when every signal passes, else
 * 400 naming `body.signals[i].<field>` of the first that does not. Any other answer is a
 * mismatch (a goal: 0). The RNG is seeded (fuzzRng of test/helpers/dns-fuzz.ts); which
 * earlier signal a replay or cancel repeats depends on what was acknowledged by then, so the
 * bodies of failing requests are written out as they were sent.
 *
 * Goals (exit 1 when one is missed): no 5xx; no request without an HTTP answer (30 s); no
 * answer differing from the validator's verdict; no node exit; no DNS probe unanswered within
 * 1 s. Reported besides: requests by status, signals stored / stale / refused, mutations by
 * kind (and any the validator accepted), replays stored again, records quarantined
 * (`gridsteer_quarantined_records` from each node's /metrics, when the build has it), error
 * log lines, RSS of each node before and after (/proc/<pid>/status VmRSS), the duration.
 *
 * Response rate limiting is set explicitly: `dns.rateLimit.mode: off`. Every probe comes from
 * 127.0.0.1 (one client /24), and what the campaign measures is whether ingest disturbs
 * answering, not the limiter (test/dns-ratelimit tests that). Tokens come from
 * GRIDSTEER_TOKENS. Everything listens on 127.0.0.1; every loop is bounded in count and time;
 * a watchdog ends the run; the nodes and Redis are stopped at the end (also on Ctrl-C).
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createSocket, type Socket } from 'node:dgram';
import { tmpdir, cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { fuzzRng } from '../test/helpers/dns-fuzz.js';
import { parsePrometheus } from '../test/helpers/metrics.js';
import { startRedis, type RunningRedis } from '../test/helpers/redis.js';
import { spawnServer, withRateLimitMode, writeTestConfig, type RunningServer, type TestConfig } from '../test/helpers/server.js';
import { QTYPE, buildQuery } from '../test/helpers/wire.js';
import { KIND_LIST } from '../gslb/model/kinds/index.js';
import { INSTANT_MAX, INSTANT_MIN } from '../gslb/model/domains.js';
import { MAX_EVENT_MS, MAX_FUTURE_MS, MAX_VALIDITY_MS, SignalEnvelope } from '../gslb/model/signals.js';
import { SignalError, validateSignal } from '../gslb/state/signals.js';
import { BODY_LIMIT } from '../gslb/api/app.js';

const NAME = 'api.gslb.example.com';
const OPERATOR_TOKEN = 'campaign-operator-optokoptok';
const INGEST_TOKEN = 'campaign-ingest-ingtokingtok';
const TOKENS = `operator:alice:${OPERATOR_TOKEN},ingest:prober:${INGEST_TOKEN}`;
const PROBE_EVERY_MS = 100;
const PROBE_TIMEOUT_MS = 1000;
const REQUEST_TIMEOUT_MS = 30_000;
const MAX_BATCH = 1000;
/** Kept of each kind of failure (the bodies are written to --failures). */
const KEEP = 20;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ------------------------------------------------------------------ the DNS probe (a worker thread)

interface ProbeInit {
  ports: number[];
}
interface ProbeResult {
  sent: number[];
  answered: number[];
  unanswered: { node: number; at: number }[];
  rcodes: Record<string, number>;
  rttMs: number[];
}

/** Every 100 ms one A query to every node, each on its own socket; no answer within 1 s = unanswered. */
function probeWorker(init: ProbeInit): void {
  const n = init.ports.length;
  const res: ProbeResult = { sent: Array(n).fill(0), answered: Array(n).fill(0), unanswered: [], rcodes: {}, rttMs: [] };
  /** Per node: id → [wall ms, perf ms] of the send. */
  const pending = init.ports.map(() => new Map<number, [number, number]>());
  const ids = init.ports.map(() => 1);
  const socks: Socket[] = init.ports.map((_, node) => {
    const s = createSocket('udp4');
    s.on('message', (m: Buffer) => {
      if (m.length < 12) return;
      const p = pending[node]!.get(m.readUInt16BE(0));
      if (!p) return;
      pending[node]!.delete(m.readUInt16BE(0));
      res.answered[node]!++;
      res.rttMs.push(performance.now() - p[1]);
      const rcode = String(m[3]! & 0x0f);
      res.rcodes[rcode] = (res.rcodes[rcode] ?? 0) + 1;
    });
    s.on('error', () => undefined);
    return s;
  });
  const expire = (all: boolean) => {
    const now = performance.now();
    for (let node = 0; node < n; node++) {
      for (const [id, p] of pending[node]!) {
        if (!all && now - p[1] <= PROBE_TIMEOUT_MS) break; // insertion order = send order
        pending[node]!.delete(id);
        const u = { node, at: p[0] };
        res.unanswered.push(u);
        parentPort!.postMessage({ unanswered: u });
      }
    }
  };
  const timer = setInterval(() => {
    expire(false);
    for (let node = 0; node < n; node++) {
      const id = ids[node]!;
      ids[node] = (id % 65535) + 1;
      pending[node]!.set(id, [Date.now(), performance.now()]);
      res.sent[node]!++;
      socks[node]!.send(buildQuery({ id, name: NAME, qtype: QTYPE.A }), init.ports[node]!, '127.0.0.1');
    }
  }, PROBE_EVERY_MS);
  parentPort!.on('message', (m: string) => {
    if (m !== 'stop') return;
    clearInterval(timer);
    setTimeout(() => {
      expire(true);
      for (const s of socks) s.close();
      parentPort!.postMessage({ result: res });
    }, PROBE_TIMEOUT_MS + 100);
  });
  parentPort!.postMessage('started');
}

if (!isMainThread && (workerData as { probe?: ProbeInit } | null)?.probe) probeWorker((workerData as { probe: ProbeInit }).probe);

// ------------------------------------------------------------------ the generator

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Obj = { [k: string]: Json };
/** The JSON-schema keywords of a TypeBox schema this generator reads. */
interface Schema {
  type?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  anyOf?: Schema[];
  const?: unknown;
  properties?: Record<string, Schema>;
  required?: string[];
  minProperties?: number;
}

/** Sources per kind (each region holds SOURCES × --keys records of each kind, and a few more: see Gen.signal). */
const SOURCES = 2;
const KINDS = KIND_LIST.map((k) => ({ name: k.name as string, value: k.value as unknown as Schema, maxValidityMs: k.maxValidityMs }));
const ENVELOPE = SignalEnvelope as unknown as Schema;
const isInstant = (s: Schema) => s.type === 'integer' && s.minimum === INSTANT_MIN && s.maximum === INSTANT_MAX;

/** The next double above / below x (the first value past a range's end). */
function nextUp(x: number): number {
  if (Number.isNaN(x) || x === Infinity) return x;
  if (x === 0) return Number.MIN_VALUE;
  const b = new DataView(new ArrayBuffer(8));
  b.setFloat64(0, x);
  const v = b.getBigInt64(0);
  b.setBigInt64(0, x > 0 ? v + 1n : v - 1n);
  return b.getFloat64(0);
}
const nextDown = (x: number) => -nextUp(-x);

/** Text sentinels replaced in the JSON text: -0 (JSON.stringify writes 0) and numbers JSON.stringify cannot write (1e400). */
const RAW = '\u0000raw:';
const raw = (text: string) => `${RAW}${text}`;
const NEG_ZERO = raw('-0');

/** The body's JSON text, with -0 and raw numbers as written. */
export function toJson(body: unknown): string {
  const text = JSON.stringify(body, (_k, v: unknown) => (typeof v === 'number' && Object.is(v, -0) ? NEG_ZERO : v));
  return text.includes('\\u0000raw:') ? text.replace(/"\\u0000raw:([^"]*)"/g, '$1') : text;
}

export class Gen {
  readonly r: () => number;
  constructor(
    seed: number,
    readonly regions: string[],
    readonly keys = 4,
  ) {
    this.r = fuzzRng(seed);
  }
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.r() * (hi - lo + 1));
  }
  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.r() * xs.length)]!;
  }
  chance(p: number): boolean {
    return this.r() < p;
  }
  text(len: number): string {
    const alphabet = 'abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/éßøЖ日本語\t';
    let s = '';
    for (let i = 0; i < len; i++) s += alphabet[Math.floor(this.r() * alphabet.length)]!;
    return s;
  }
  /** A valid number for `s` (not an instant): often an end of its range, 0 or -0. */
  number(s: Schema): number {
    const lo = s.minimum ?? 0;
    const hi = s.maximum ?? 1e6;
    const integer = s.type === 'integer';
    const c = this.r();
    if (c < 0.12) return lo;
    if (c < 0.24) return hi;
    if (c < 0.32 && lo <= 0 && hi >= 0) return 0;
    if (c < 0.4 && lo <= 0 && hi >= 0) return -0;
    if (c < 0.45 && !integer) return nextDown(hi);
    if (c < 0.5 && !integer && lo < hi) return nextUp(lo);
    // Mostly small values, sometimes spread over the whole range.
    const span = this.chance(0.8) ? Math.min(hi - lo, 100) : hi - lo;
    const v = lo + this.r() * span;
    return integer ? Math.min(hi, Math.floor(v)) : v;
  }
  string(s: Schema): string {
    const lo = s.minLength ?? 0;
    const hi = s.maxLength ?? 64;
    const c = this.r();
    const len = c < 0.1 ? lo : c < 0.2 ? hi : this.int(Math.max(lo, 1), Math.min(hi, 24));
    return this.text(len);
  }
  /** A valid leaf value for `s` (instants are the kind's fixups' business). */
  leaf(s: Schema): Json {
    if (s.anyOf) return this.pick(s.anyOf.map((v) => v.const as Json));
    switch (s.type) {
      case 'boolean':
        return this.chance(0.5);
      case 'integer':
      case 'number':
        return this.number(s);
      case 'string':
        return this.string(s);
      default:
        return null;
    }
  }
  /** A valid value of kind `kind` at `now`. */
  value(kind: string, now: number, key: string): Obj {
    const schema = KINDS.find((k) => k.name === kind)!.value;
    const req = new Set(schema.required ?? []);
    const v: Obj = {};
    for (const [name, s] of Object.entries(schema.properties ?? {})) {
      if (isInstant(s)) continue;
      if (req.has(name) || this.chance(0.5)) v[name] = this.leaf(s);
    }
    if ((schema.minProperties ?? 0) > Object.keys(v).length) {
      const name = this.pick(Object.keys(schema.properties!));
      v[name] = this.leaf(schema.properties![name]!);
    }
    return this.fixup(kind, v, now, key);
  }
  /** The cross-field rules of validateSignal, and the instants in values. */
  private fixup(kind: string, v: Obj, now: number, key: string): Obj {
    if (kind === 'grid.event') {
      v.id = key;
      const c = this.r();
      let start: number;
      let end: number;
      if (c < 0.1) {
        // The latest end there is, and the longest event up to it.
        end = INSTANT_MAX;
        start = this.chance(0.5) ? end - MAX_EVENT_MS : end - this.int(1, 86_400_000);
      } else if (c < 0.2) {
        // The longest event, begun long ago and still running.
        start = now - 300 * 86_400_000;
        end = start + MAX_EVENT_MS;
      } else {
        start = now + this.int(-7_200_000, 2 * 86_400_000);
        end = Math.max(start + this.int(1, 86_400_000), now + 3_600_000);
      }
      v.start = start;
      v.end = end;
      if (v.type === 'cap' && v.cap === undefined) v.cap = this.number({ type: 'number', minimum: 0, maximum: 1 });
      if (v.type === 'simple' && v.level === undefined) v.level = this.int(0, 3);
      if ((v.type === 'import-capacity-limit' || v.type === 'dispatch-setpoint') && v.limitW === undefined) v.limitW = this.int(0, 5_000_000);
    } else if (kind === 'grid.alert') {
      const inst = () => (this.chance(0.2) ? this.pick([INSTANT_MIN, INSTANT_MAX]) : now + this.int(-86_400_000, 86_400_000));
      if (this.chance(0.4)) v.issued = inst();
      if (this.chance(0.5)) v.start = this.chance(0.1) ? INSTANT_MIN : now + this.int(-3_600_000, 3_600_000);
      if (this.chance(0.5)) v.end = this.chance(0.1) ? INSTANT_MAX : now + this.int(3_600_001, 86_400_000);
    } else if (kind === 'demand') {
      v.bucket = this.chance(0.1) ? this.pick([INSTANT_MIN, INSTANT_MAX]) : Math.floor((now - this.int(0, 600_000)) / 10_000) * 10_000;
    }
    return v;
  }
  /** A valid signal of a random kind (about boundaries: observedAt at INSTANT_MIN, the longest validity, …). */
  signal(now: number): Obj {
    const kind = this.pick(KINDS);
    const region = this.pick(this.regions);
    // The records' ids: per region and kind, SOURCES sources × `keys` keys, and a few at the
    // ends of the domains (the empty key, 200-character keys and sources, a 1-character source).
    const c0 = this.r();
    let source = `campaign/${kind.name}-${this.int(0, SOURCES - 1)}`;
    let key = kind.name === 'grid.event' ? `ev-${this.int(0, this.keys - 1)}` : `k${this.int(0, this.keys - 1)}`;
    if (c0 < 0.02) key = kind.name === 'grid.event' ? 'e'.repeat(200) : this.pick(['', 'k'.repeat(200)]);
    else if (c0 < 0.04) source = this.pick(['a', `campaign/${'x'.repeat(191)}`]);
    const c = this.r();
    const observedAt = c < 0.05 ? INSTANT_MIN : c < 0.1 ? now + 2000 : c < 0.15 ? now - Math.floor(kind.maxValidityMs / 2) : now - this.int(0, 5000);
    const d = this.r();
    const validity = d < 0.05 ? 1 : d < 0.1 ? kind.maxValidityMs : this.int(1, Math.min(kind.maxValidityMs, 600_000));
    return { region, kind: kind.name, source, key, observedAt, expiresAt: observedAt + validity, value: this.value(kind.name, now, key) };
  }
}

// ------------------------------------------------------------------ mutations

/** A field of a signal: the envelope's (`path` one name) or the value's (`value`, name). */
interface FieldRef {
  path: string[];
  schema: Schema;
}

function fieldsOf(sig: Obj): FieldRef[] {
  const out: FieldRef[] = [];
  for (const [name, s] of Object.entries(ENVELOPE.properties!)) if (name !== 'value') out.push({ path: [name], schema: s });
  const kind = KINDS.find((k) => k.name === sig.kind);
  const v = sig.value as Obj | undefined;
  if (kind && v && typeof v === 'object') for (const [name, s] of Object.entries(kind.value.properties ?? {})) out.push({ path: ['value', name], schema: s });
  return out;
}

function setAt(sig: Obj, path: string[], v: Json | undefined): void {
  let at = sig;
  for (const p of path.slice(0, -1)) {
    if (typeof at[p] !== 'object' || at[p] === null) at[p] = {};
    at = at[p] as Obj;
  }
  if (v === undefined) delete at[path.at(-1)!];
  else at[path.at(-1)!] = v;
}

interface Mutated {
  sig: Json;
  label: string;
  /** Refused by the API's strict body rules (text, __proto__), before validateSignal: 400 expected, field not compared. */
  apiOnly?: boolean;
}

/** One mutation of a valid signal. Labels name the mutation class (the report counts them). */
function mutate(g: Gen, valid: Obj, now: number): Mutated {
  const sig = structuredClone(valid);
  const fields = fieldsOf(sig);
  const numeric = fields.filter((f) => f.schema.type === 'number' || f.schema.type === 'integer');
  const instants = fields.filter((f) => isInstant(f.schema));
  const strings = fields.filter((f) => f.schema.type === 'string');
  const kind = KINDS.find((k) => k.name === sig.kind)!;
  const c = g.int(0, 13);
  switch (c) {
    case 0: {
      // wrong types
      const f = g.pick(fields);
      const t = f.schema.type;
      const wrong: Json[] = t === 'string' ? [5, null, [], {}, true] : t === 'boolean' ? ['true', 1, null, 0] : f.schema.anyOf ? [1, null, true, ['simple']] : [true, null, [], {}, [1]];
      setAt(sig, f.path, g.pick(wrong));
      return { sig, label: 'wrong type' };
    }
    case 1: {
      // strings for numbers
      const f = g.pick(numeric);
      const cur = (f.path.length === 1 ? sig[f.path[0]!] : (sig.value as Obj)[f.path[1]!]) ?? 1;
      setAt(sig, f.path, g.pick([String(cur), `${String(cur)} `, '0x10', '1e3', '']));
      return { sig, label: 'string for a number' };
    }
    case 2: {
      // out of range: past each end, huge, not finite, not an integer
      const f = g.pick(numeric);
      const lo = f.schema.minimum ?? 0;
      const hi = f.schema.maximum ?? 0;
      const integer = f.schema.type === 'integer';
      const choices: Json[] = [2 ** 53 - 1, 1e308, -1e308, raw('1e400'), raw('-1e400'), integer ? hi + 1 : nextUp(hi), integer ? lo - 1 : nextDown(lo), -1];
      if (integer) choices.push(lo + 0.5, hi - 0.5);
      const v = g.pick(choices);
      if (v === 2 ** 53 - 1 && hi >= v) setAt(sig, f.path, 1e308);
      else setAt(sig, f.path, v);
      return { sig, label: 'out of range' };
    }
    case 3: {
      // far-future (and other impossible) instants
      const f = g.pick(instants);
      setAt(sig, f.path, g.pick([9e15, 8.64e15, 8.64e15 + 1, 2 ** 53 - 1, INSTANT_MAX + 1, INSTANT_MAX + 10_000, INSTANT_MIN - 1, INSTANT_MIN - 10_000, Math.floor(now / 1000), now * 1000, -now]));
      return { sig, label: 'far-future or impossible instant' };
    }
    case 4: {
      // unknown fields, in the envelope or the value
      const name = g.pick(['extra', 'Up', 'value2', 'observed_at', 'constructor', '', ' kind', 'regionId']);
      if (g.chance(0.5) && typeof sig.value === 'object' && sig.value !== null) (sig.value as Obj)[name] = g.pick([1, 'x', null, true]);
      else sig[name] = g.pick([1, 'x', null, true]);
      return { sig, label: 'unknown field' };
    }
    case 5: {
      // __proto__ as a key: fastify's JSON parser refuses it (400) before any validator runs
      const text = `{"__proto__":{"polluted":true},${JSON.stringify(sig).slice(1)}`;
      return { sig: JSON.parse(text) as Json, label: 'unknown field (__proto__)', apiOnly: true };
    }
    case 6: {
      // missing fields: a required one, or every field of a value that needs one
      const v = sig.value as Obj;
      const required = [...(ENVELOPE.required ?? []).map((n) => [n]), ...(kind.value.required ?? []).map((n) => ['value', n])];
      if ((kind.value.minProperties ?? 0) > 0 && g.chance(0.4)) sig.value = {};
      else if (required.length) setAt(sig, g.pick(required), undefined);
      else for (const k of Object.keys(v)) delete v[k];
      return { sig, label: 'missing field' };
    }
    case 7: {
      // the cross-field rules
      const o = sig.observedAt as number;
      const v = sig.value as Obj;
      const rules: (() => void)[] = [
        () => (sig.expiresAt = o),
        () => (sig.expiresAt = o - 1),
        () => (sig.expiresAt = o + kind.maxValidityMs + 1),
        () => {
          sig.observedAt = now + MAX_FUTURE_MS + 60_000;
          sig.expiresAt = (sig.observedAt as number) + 1000;
        },
      ];
      if (sig.kind === 'grid.event') {
        rules.push(
          () => (v.end = v.start as number),
          () => (v.end = (v.start as number) - 1),
          () => (sig.key = `${String(sig.key)}-other`),
          () => {
            v.type = 'cap';
            delete v.cap;
          },
          () => {
            v.type = 'simple';
            delete v.level;
          },
          () => {
            v.type = g.pick(['import-capacity-limit', 'dispatch-setpoint']);
            delete v.limitW;
          },
          () => (v.end = (v.start as number) + MAX_EVENT_MS + 1),
          () => {
            // ended an hour ago: what the API refuses (refuseEnded)
            v.end = now - 3_600_000;
            v.start = (v.end as number) - 3_600_000;
          },
        );
      }
      if (sig.kind === 'grid.alert') rules.push(() => {
        v.start = now;
        v.end = now - g.int(0, 1000);
      });
      if (sig.kind === 'demand') rules.push(() => (v.bucket = (v.bucket as number) - g.pick([1, 5000, 9999])));
      g.pick(rules)();
      return { sig, label: 'cross-field rule' };
    }
    case 8: {
      // the envelope's own domain: regions, kinds, sources, keys, the value's type
      const t = g.int(0, 6);
      if (t === 0) sig.region = g.pick(['xx-nowhere', 'US-VA', '', '-us', 'us_va', 'a'.repeat(64)]);
      else if (t === 1) sig.kind = g.pick(['health.Probe', 'unknown.kind', '', 'gridEvent', 'carbon ']);
      else if (t === 2) sig.source = g.pick(['', 'has space', 'a'.repeat(201), 'src\nline', 'ümlaut']);
      else if (t === 3) sig.key = 'k'.repeat(201);
      else if (t === 4) sig.value = g.pick([null, [], 'x', 5, true]);
      else if (t === 5) sig.kind = g.pick(KINDS.filter((k) => k.name !== sig.kind)).name; // a value of another kind
      else delete sig.value;
      return { sig, label: 'envelope domain' };
    }
    case 9:
      return { sig: g.pick([null, [], 'signal', 42, true, [structuredClone(valid)]] as Json[]), label: 'not an object' };
    case 10: {
      // strings past their longest
      const f = g.pick(strings.filter((s) => s.schema.maxLength !== undefined));
      setAt(sig, f.path, 'z'.repeat(f.schema.maxLength! + 1));
      return { sig, label: 'string too long' };
    }
    case 11: {
      // text that is not text: the API's strict rules refuse it before validation
      const f = g.pick(strings);
      setAt(sig, f.path, g.pick(['a\u0001b', 'x\ud800', '\udc00y', 'bad\ufffd', '\u007f', 'nul\u0000']));
      return { sig, label: 'not text (control, lone surrogate)', apiOnly: true };
    }
    case 12: {
      // nesting: an unknown field holding an object 40 deep
      let deep: Json = 1;
      for (let i = 0; i < 40; i++) deep = { d: deep };
      (sig.value as Obj).nested = deep;
      return { sig, label: 'deep nesting', apiOnly: true };
    }
    default: {
      // -0 and non-integers where an integer instant is wanted
      const f = g.pick(instants);
      const cur = (f.path.length === 1 ? sig[f.path[0]!] : (sig.value as Obj)[f.path[1]!]) as number;
      setAt(sig, f.path, g.pick([cur + 0.5, cur - 0.001, -0]));
      return { sig, label: 'non-integer instant' };
    }
  }
}

// ------------------------------------------------------------------ batches and their expected answers

interface Planned {
  kind: 'valid' | 'poisoned' | 'single' | 'request';
  label: string;
  /** Signals it carries (what counts toward --signals). */
  count: number;
  /** Exact body bytes and headers. */
  text: string;
  contentType: string;
  token: string;
  /** The expected status, and for 400 from the validator the field it must name. */
  expect: number;
  expectField?: string;
  /** Per signal, what it was (for the report): category and, for mutations, the label. */
  what: string[];
  /** Replays in the batch (index → must come back stale). */
  replays: number[];
  /**
   * What the validator said that the generator did not mean: a signal meant valid refused
   * (the generator's bug), a mutation accepted (a gap in the validator, or a mutation that
   * changed nothing), a throw that is not a SignalError.
   */
  notes?: { meantValidRefused: string[]; mutationsAccepted: string[]; threw: string[] };
}

/**
 * What the node's validator says of the parsed body: per signal refused or not, and the first
 * refusal as the route names it. A throw that is not a SignalError is a finding of its own
 * (the node would answer 500): it is kept in `threw`.
 */
function verdict(signals: unknown[], now: number, regions: ReadonlySet<string>): { field: string | null; bad: boolean[]; threw: string[] } {
  let field: string | null = null;
  const threw: string[] = [];
  const bad = signals.map((s, i) => {
    try {
      validateSignal(s, now, regions, { refuseEnded: true });
      return false;
    } catch (e) {
      if (!(e instanceof SignalError)) {
        threw.push(`signals[${i}]: ${(e as Error).stack ?? String(e)}`);
        return true;
      }
      field ??= `body.${`signals[${i}].${e.field}`.replace(/\.\(signal\)$/, '')}`;
      return true;
    }
  });
  return { field, bad, threw };
}

/** Recently acknowledged valid signals (replays and cancels repeat them). */
class Memory {
  private readonly ring: Obj[] = [];
  private readonly events: Obj[] = [];
  add(g: Gen, s: Obj): void {
    if (this.ring.length < 2000) this.ring.push(s);
    else this.ring[g.int(0, 1999)] = s;
    if (s.kind === 'grid.event') {
      if (this.events.length < 500) this.events.push(s);
      else this.events[g.int(0, 499)] = s;
    }
  }
  /** A replay: the same signal, or the same with an older observedAt (still valid); null when none fits. */
  replay(g: Gen, now: number): Obj | null {
    for (let k = 0; k < 5 && this.ring.length; k++) {
      const s = g.pick(this.ring);
      // Only while the original is unexpired (an expired record may be collected, and a replay then stored again).
      if ((s.expiresAt as number) < now + 120_000) continue;
      if ((s.observedAt as number) > now) continue;
      const copy = structuredClone(s);
      const maxValidity = MAX_VALIDITY_MS[s.kind as keyof typeof MAX_VALIDITY_MS];
      const older = (copy.observedAt as number) - g.int(1, 60_000);
      if (g.chance(0.5) && older >= INSTANT_MIN && (copy.expiresAt as number) - older <= maxValidity) copy.observedAt = older;
      return copy;
    }
    return null;
  }
  /** A cancel of a grid event sent before: the same, cancelled, observed now. */
  cancel(now: number, g: Gen): Obj | null {
    for (let k = 0; k < 5 && this.events.length; k++) {
      const s = g.pick(this.events);
      const v = s.value as Obj;
      if ((v.end as number) < now + 600_000) continue;
      const copy = structuredClone(s);
      copy.observedAt = now;
      copy.expiresAt = now + g.int(60_000, 86_400_000);
      (copy.value as Obj).cancelled = true;
      return copy;
    }
    return null;
  }
}

/**
 * Of the batch lane's requests, the share that are all-valid batches (the rest carry
 * mutations, and 2 % are request-level mutations). Every valid signal is a Redis write
 * (fsynced) on the node that takes it and a new plan on every node; the rest stop at validation.
 */
const VALID_SHARE = 0.35;

/**
 * The next request of a lane. Each node has two lanes, one request in flight on each: `batches`
 * (all-valid batches, batches with mutations, request-level mutations) and `mutations` (one
 * mutated signal per request), so that mutations are many without waiting behind the store.
 */
function planBatch(g: Gen, mem: Memory, now: number, regions: ReadonlySet<string>, budget: number, lane: 'batches' | 'mutations'): Planned {
  const c = lane === 'mutations' ? 1 : g.r();
  // Sizes: all-valid batches mostly of tens to hundreds; batches with mutations larger (they
  // cost the node validation only, up to the first refusal).
  const size = (big: number) => Math.min(budget, g.chance(0.3 - big / 10) ? g.int(1, 20) : g.chance(1 - big) ? g.int(20, 400) : g.int(400, MAX_BATCH));
  const validOne = (): { s: Obj; what: string } => {
    const d = g.r();
    if (d < 0.05) {
      const x = mem.cancel(now, g);
      if (x) return { s: x, what: 'cancel' };
    } else if (d < 0.15) {
      const x = mem.replay(g, now);
      if (x) return { s: x, what: 'replay' };
    }
    return { s: g.signal(now), what: 'valid' };
  };
  const base = { contentType: 'application/json', token: INGEST_TOKEN, replays: [] as number[] };
  if (c < 0.02) return requestLevel(g, now, validOne, base);
  let kind: Planned['kind'];
  const items: Json[] = [];
  const what: string[] = [];
  let apiOnly = false;
  if (c < 0.02 + VALID_SHARE) {
    kind = 'valid';
    for (let i = 0, n = size(0.2); i < n; i++) {
      const v = validOne();
      items.push(v.s);
      what.push(v.what);
    }
  } else if (c < 1) {
    kind = 'poisoned';
    const n = Math.max(1, size(0.7));
    for (let i = 0; i < n; i++) {
      const v = validOne();
      items.push(v.s);
      what.push(v.what);
    }
    // The route validates up to the first refusal: half the time that is the last signal, so
    // that every other signal of the batch goes through validateSignal too.
    for (let k = 0, m = g.chance(0.8) ? 1 : g.int(2, 5); k < m; k++) {
      const at = k === 0 && g.chance(0.5) ? n - 1 : g.int(0, n - 1);
      const mu = mutate(g, g.signal(now), now);
      items[at] = mu.sig;
      what[at] = `mutation: ${mu.label}`;
      apiOnly ||= mu.apiOnly === true;
    }
  } else {
    kind = 'single';
    const mu = mutate(g, g.signal(now), now);
    items.push(mu.sig);
    what.push(`mutation: ${mu.label}`);
    apiOnly = mu.apiOnly === true;
  }
  const text = toJson({ signals: items });
  const replays = what.flatMap((w, i) => (w === 'replay' ? [i] : []));
  const label = kind === 'valid' ? 'valid batch' : kind === 'poisoned' ? 'batch with mutations' : 'single mutation';
  if (Buffer.byteLength(text) > BODY_LIMIT) return { ...base, kind, label, count: items.length, text, expect: 413, what, replays };
  if (apiOnly) return { ...base, kind, label, count: items.length, text, expect: 400, what, replays };
  const parsed = (JSON.parse(text) as { signals: unknown[] }).signals;
  const v = verdict(parsed, now, regions);
  const notes: NonNullable<Planned['notes']> = { meantValidRefused: [], mutationsAccepted: [], threw: v.threw };
  what.forEach((w, i) => {
    const mutated = w.startsWith('mutation: ');
    if (!mutated && v.bad[i]) notes.meantValidRefused.push(`${w} signals[${i}] ${JSON.stringify(verdict([parsed[i]], now, regions).field)}: ${toJson(parsed[i]).slice(0, 3000)}`);
    if (mutated && !v.bad[i]) notes.mutationsAccepted.push(`${w.slice(10)}: signals[${i}] ${toJson(parsed[i]).slice(0, 3000)}`);
  });
  const expect = v.threw.length ? 500 : v.field === null ? 200 : 400;
  return { ...base, kind, label, count: items.length, text, expect, ...(v.field !== null && !v.threw.length ? { expectField: v.field } : {}), what, replays, notes };
}

/** Request-level mutations (their signals count too). */
function requestLevel(g: Gen, now: number, validOne: () => { s: Obj; what: string }, base: Pick<Planned, 'contentType' | 'token' | 'replays'>): Planned {
  const some = (n: number) => Array.from({ length: n }, () => validOne().s);
  const t = g.int(0, 7);
  const mk = (label: string, count: number, text: string, expect: number, extra: Partial<Planned> = {}): Planned => ({ ...base, kind: 'request', label, count, text, expect, what: Array(count).fill(`request: ${label}`), ...extra });
  switch (t) {
    case 0:
      return mk('empty list', 0, '{"signals":[]}', 400);
    case 1:
      return mk(`${MAX_BATCH + 1} signals`, MAX_BATCH + 1, toJson({ signals: some(MAX_BATCH + 1) }), 400);
    case 2: {
      // over the body limit: grid alerts with their longest message
      const items = Array.from({ length: 600 }, () => ({ ...g.signal(now), kind: 'grid.alert', key: 'k0', value: { level: 1, message: 'm'.repeat(2000) } }));
      return mk('body over the limit', items.length, toJson({ signals: items }), 413);
    }
    case 3: {
      const items = some(g.int(1, 50));
      const text = toJson({ signals: items });
      return mk('truncated JSON', items.length, text.slice(0, g.int(1, text.length - 1)), 400);
    }
    case 4: {
      const items = some(g.int(1, 50));
      return mk('text/plain', items.length, toJson({ signals: items }), 415, { contentType: 'text/plain' });
    }
    case 5: {
      const items = some(g.int(1, 50));
      return mk('wrong token', items.length, toJson({ signals: items }), 401, { token: 'not-a-token-of-this-fleet' });
    }
    case 6: {
      const items = some(g.int(1, 50));
      return mk('unknown body field', items.length, toJson({ signals: items, extra: 1 }), 400);
    }
    default:
      return mk('body not an object', 0, g.pick(['[]', '"signals"', 'null', '42', '{}']), 400);
  }
}

// ------------------------------------------------------------------ the run

interface Options {
  signals: number;
  seed: number;
  minutes: number;
  workers: number;
  keys: number;
  /** V8's old-space bound for each node's processes (NODE_OPTIONS --max-old-space-size), or 0 for Node's default. */
  nodeHeapMiB: number;
  failures: string;
}

interface NodeRss {
  primaryMiB: number | null;
  workersMiB: number;
}

function rssMiB(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 102.4) / 10 : null;
  } catch {
    return null;
  }
}
function childrenOf(pid: number | undefined): number[] {
  if (pid === undefined) return [];
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}
const rssOf = (n: RunningServer): NodeRss => ({ primaryMiB: rssMiB(n.proc?.pid), workersMiB: Math.round(childrenOf(n.proc?.pid).reduce((s, c) => s + (rssMiB(c) ?? 0), 0) * 10) / 10 });

function quantile(xs: number[], q: number): number | null {
  if (xs.length === 0) return null;
  const s = Float64Array.from(xs).sort();
  return Math.round(s[Math.min(s.length - 1, Math.floor(q * s.length))]! * 100) / 100;
}

const inc = (o: Record<string, number>, k: string, by = 1) => (o[k] = (o[k] ?? 0) + by);

interface Failure {
  what: string;
  node: number;
  batch: number;
  status: number | string;
  expected: string;
  response: string;
  file: string;
}

async function run(o: Options) {
  const started = Date.now();
  const nodes: RunningServer[] = [];
  let redis: RunningRedis | undefined;
  let cfg: TestConfig | undefined;
  let probe: Worker | undefined;
  let stopping = false;
  const exits: string[] = [];
  /** Per node and lane: the last requests sent (for an unanswered probe or an exit: what the node was reading then). */
  const recent: Record<'batches' | 'mutations', { batch: number; from: number; to: number | null; text: string; label: string }[]>[] = [0, 1, 2].map(() => ({ batches: [], mutations: [] }));
  const cleanup = async () => {
    stopping = true;
    await probe?.terminate();
    await Promise.all(nodes.map((n) => n.stop()));
    await redis?.cleanup();
    cfg?.cleanup();
  };
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      void cleanup().finally(() => process.exit(130));
    });
  }
  // A watchdog over the whole run: start-up, ingest (bounded by --minutes), the report.
  const watchdog = setTimeout(() => {
    process.stderr.write('ingest-campaign: the watchdog ended the run\n');
    void cleanup().finally(() => process.exit(2));
  }, (o.minutes + 10) * 60_000);
  watchdog.unref();
  try {
    mkdirSync(o.failures, { recursive: true });
    redis = await startRedis();
    const r = redis;
    cfg = writeTestConfig((c) => {
      // Every DNS probe comes from 127.0.0.1 (one client /24): the limiter is not what this
      // measures (test/dns-ratelimit tests it), so it is off, explicitly.
      withRateLimitMode(c, 'off');
      c.state = { store: 'redis', redis: { url: r.url, prefix: `ingest${process.pid}` } };
    });
    for (let i = 0; i < 3; i++) {
      const srv = await spawnServer({ configFile: cfg.file, workers: o.workers, readyTimeoutMs: 120_000, env: { GRIDSTEER_TOKENS: TOKENS, ...(o.nodeHeapMiB ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --max-old-space-size=${o.nodeHeapMiB}`.trim() } : {}) } });
      const idx = i;
      srv.proc?.once('exit', (code, signal) => {
        if (stopping) return;
        // What the node was reading when it went: the requests in flight and just before, and its last log lines.
        const file = join(o.failures, `exit-node${idx + 1}.json`);
        const ring = recent[idx] ? [...recent[idx].batches, ...recent[idx].mutations].sort((x, y) => x.batch - y.batch) : [];
        writeFileSync(file, JSON.stringify({ node: idx + 1, code, signal, logs: srv.logs.slice(-50), requests: ring.map((b) => ({ batch: b.batch, label: b.label, sentAt: new Date(b.from).toISOString(), answeredAt: b.to === null ? null : new Date(b.to).toISOString(), body: b.text })) }, null, 1));
        exits.push(`node ${idx + 1} exited (code ${code}, signal ${signal}) at ${((Date.now() - started) / 1000).toFixed(1)} s; its last requests and log lines are in ${file}; last log lines:\n${srv.logs.slice(-10).join('\n')}`);
      });
      nodes.push(srv);
      console.log(`node ${i + 1}: dns ${srv.udp.host}:${srv.udp.port}, http ${srv.http}, pid ${srv.proc?.pid}`);
    }
    const regionsRes = await fetch(`${nodes[0]!.http}/v1/regions`, { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` }, signal: AbortSignal.timeout(10_000) });
    const regionIds = ((await regionsRes.json()) as { regions: { id: string }[] }).regions.map((x) => x.id);
    if (regionIds.length === 0) throw new Error('ingest-campaign: GET /v1/regions lists no region');
    const regions = new Set(regionIds);

    const rssBefore = nodes.map(rssOf);
    // RSS every 30 s, to tell a heap that grows to its size and stays from one that keeps growing.
    const rssTimeline: { s: number; nodes: NodeRss[] }[] = [{ s: 0, nodes: rssBefore }];
    const startupMs = Date.now() - started;
    probe = new Worker(new URL(import.meta.url), { workerData: { probe: { ports: nodes.map((n) => n.udp.port) } satisfies ProbeInit } });
    await new Promise<void>((resolve, reject) => {
      probe!.once('message', () => resolve());
      probe!.once('error', reject);
    });

    // -------- ingest: one request in flight per node; batches planned as a node is free
    const g = new Gen(o.seed, regionIds, o.keys);
    const mem = new Memory();
    const stats = {
      requests: 0,
      byStatus: {} as Record<string, number>,
      noAnswer: 0,
      signals: 0,
      byBatchKind: {} as Record<string, { requests: number; signals: number; ms: number; maxMs: number; unanswered?: number }>,
      byWhat: {} as Record<string, number>,
      stored: 0,
      stale: 0,
      otherResults: {} as Record<string, number>,
      refused: 0,
      mismatches: 0,
      replaysSent: 0,
      replaysStale: 0,
      replaysStored: 0,
      meantValidRefused: 0,
      validatorThrew: 0,
      mutationsAccepted: {} as Record<string, number>,
    };
    /** Samples of the generator's notes (Planned.notes). */
    const notes: string[] = [];
    const failures: Failure[] = [];
    const probeMisses: { node: number; at: number; batches: number[]; file: string }[] = [];
    probe.on('message', (m: { unanswered?: { node: number; at: number } }) => {
      if (!m.unanswered) return;
      const { node, at } = m.unanswered;
      const around = [...recent[node]!.batches, ...recent[node]!.mutations].filter((b) => b.from <= at + PROBE_TIMEOUT_MS && (b.to === null || b.to >= at - 2000)).sort((x, y) => x.batch - y.batch);
      if (probeMisses.length < KEEP) {
        const file = join(o.failures, `probe-miss-${probeMisses.length + 1}-node${node + 1}.json`);
        // What the node logged from 2 s before the probe to 1 s after it (plans, store errors).
        const logs = nodes[node]!.logs.filter((l) => {
          const t = Date.parse(/"time":"([^"]+)"/.exec(l)?.[1] ?? '');
          return t >= at - 2000 && t <= at + PROBE_TIMEOUT_MS;
        });
        writeFileSync(file, JSON.stringify({ node: node + 1, sentAt: new Date(at).toISOString(), logs, batches: around.map((b) => ({ batch: b.batch, label: b.label, sentAt: new Date(b.from).toISOString(), answeredAt: b.to === null ? null : new Date(b.to).toISOString(), body: b.text })) }, null, 1));
        probeMisses.push({ node: node + 1, at, batches: around.map((b) => b.batch), file });
      }
    });
    const record = (f: Omit<Failure, 'file'>, text: string) => {
      if (failures.filter((x) => x.what === f.what).length >= KEEP) return;
      const file = join(o.failures, `${f.what.replace(/\W+/g, '-')}-${f.batch}.json`);
      writeFileSync(file, text);
      failures.push({ ...f, file });
    };
    const deadline = Date.now() + o.minutes * 60_000;
    let batchNo = 0;
    let planned = 0;
    let lastLog = Date.now();
    const t0 = Date.now();
    const loop = async (i: number, lane: 'batches' | 'mutations') => {
      const node = nodes[i]!;
      while (planned < o.signals && Date.now() < deadline && exits.length === 0) {
        const now = Date.now();
        const b = planBatch(g, mem, now, regions, o.signals - planned, lane);
        const no = ++batchNo;
        planned += b.count;
        stats.requests++;
        stats.signals += b.count;
        const bk = (stats.byBatchKind[b.kind === 'request' ? `request: ${b.label}` : b.label] ??= { requests: 0, signals: 0, ms: 0, maxMs: 0 });
        bk.requests++;
        bk.signals += b.count;
        for (const w of b.what) inc(stats.byWhat, w);
        if (b.notes) {
          stats.meantValidRefused += b.notes.meantValidRefused.length;
          stats.validatorThrew += b.notes.threw.length;
          for (const m of b.notes.mutationsAccepted) inc(stats.mutationsAccepted, m.slice(0, m.indexOf(':')));
          for (const [what, xs] of [['meant valid, refused', b.notes.meantValidRefused], ['mutation accepted', b.notes.mutationsAccepted], ['validator threw', b.notes.threw]] as const) {
            for (const x of xs) if (notes.length < 3 * KEEP && notes.filter((n) => n.startsWith(what)).length < KEEP) notes.push(`${what} (batch ${no}): ${x}`);
          }
        }
        const slot = { batch: no, from: now, to: null as number | null, text: b.text, label: b.label };
        const ring = recent[i]![lane];
        ring.push(slot);
        if (ring.length > (lane === 'batches' ? 8 : 50)) ring.shift();
        let status: number;
        let body = '';
        try {
          const res = await fetch(`${node.http}/v1/signals`, {
            method: 'POST',
            headers: { authorization: `Bearer ${b.token}`, 'content-type': b.contentType },
            body: b.text,
            signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
          });
          status = res.status;
          body = await res.text();
        } catch (e) {
          slot.to = Date.now();
          stats.noAnswer++;
          bk.unanswered = (bk.unanswered ?? 0) + 1; // not in ms: the mean is over the answered ones
          record({ what: 'no answer', node: i + 1, batch: no, status: (e as Error).message, expected: String(b.expect), response: '' }, b.text);
          continue;
        }
        slot.to = Date.now();
        bk.ms += slot.to - slot.from;
        bk.maxMs = Math.max(bk.maxMs, slot.to - slot.from);
        inc(stats.byStatus, String(status));
        const expected = `${b.expect}${b.expectField ? ` naming ${b.expectField}` : ''}`;
        if (status >= 500) record({ what: '5xx', node: i + 1, batch: no, status, expected, response: body.slice(0, 2000) }, b.text);
        let field: string | undefined;
        let results: { stored: boolean; reason?: string }[] | undefined;
        try {
          const j = JSON.parse(body) as { error?: { field?: string }; results?: { stored: boolean; reason?: string }[] };
          field = j.error?.field;
          results = j.results;
        } catch {
          // not JSON: a mismatch below if a 200 was expected
        }
        const mismatch = status !== b.expect || (b.expectField !== undefined && field !== b.expectField) || (status === 200 && results?.length !== b.count);
        if (mismatch) {
          stats.mismatches++;
          record({ what: 'mismatch', node: i + 1, batch: no, status, expected, response: body.slice(0, 2000) }, b.text);
        }
        if (status === 200 && results) {
          const parsed = (JSON.parse(b.text) as { signals: Obj[] }).signals;
          results.forEach((x, k) => {
            if (x.stored) stats.stored++;
            else if (x.reason === 'stale') stats.stale++;
            else inc(stats.otherResults, x.reason ?? '(none)');
            if (b.what[k] === 'valid' || b.what[k] === 'cancel') mem.add(g, parsed[k]!);
          });
          for (const k of b.replays) {
            stats.replaysSent++;
            if (results[k]?.stored) stats.replaysStored++;
            else stats.replaysStale++;
          }
        } else stats.refused += b.count;
        if (Date.now() - lastLog > 30_000) {
          lastLog = Date.now();
          const s = (Date.now() - t0) / 1000;
          const now = nodes.map(rssOf);
          rssTimeline.push({ s: Math.round(s), nodes: now });
          const mib = now.map((x) => `${x.primaryMiB ?? '–'}${x.workersMiB ? `+${x.workersMiB}` : ''}`).join(' ');
          console.log(`${s.toFixed(0)} s: ${stats.signals} signals in ${stats.requests} requests (${Math.round(stats.signals / s)}/s), ${JSON.stringify(stats.byStatus)}, mismatches ${stats.mismatches}, probes missed ${probeMisses.length}, RSS MiB ${mib}`);
        }
      }
    };
    await Promise.all(nodes.flatMap((_, i) => [loop(i, 'batches'), loop(i, 'mutations')]));
    const ingestMs = Date.now() - t0;
    const stoppedBy = stats.signals >= o.signals ? 'signals' : exits.length ? 'a node exit' : 'time';
    // A second of quiet for the last plans, then the probe's tally.
    await sleep(2000);
    probe.postMessage('stop');
    const probeResult = await new Promise<ProbeResult>((resolve) => {
      const on = (m: { result?: ProbeResult }) => {
        if (m.result) {
          probe!.off('message', on);
          resolve(m.result);
        }
      };
      probe!.on('message', on);
    });
    const rssAfter = nodes.map(rssOf);

    // -------- what the nodes say: quarantined records, error log lines
    const quarantined: (number | null)[] = [];
    for (const n of nodes) {
      try {
        const text = await (await fetch(`${n.http}/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
        const declared = /^# (?:HELP|TYPE) gridsteer_quarantined_records\b/m.test(text);
        const samples = parsePrometheus(text).filter((s) => s.name === 'gridsteer_quarantined_records');
        quarantined.push(declared || samples.length ? samples.reduce((a, s) => a + s.value, 0) : null);
      } catch {
        quarantined.push(null);
      }
    }
    const errorLines = nodes.flatMap((n, i) =>
      n.logs
        .filter((l) => {
          try {
            return ((JSON.parse(l) as { level?: number }).level ?? 0) >= 50;
          } catch {
            return false;
          }
        })
        .map((l) => `node ${i + 1}: ${l.slice(0, 400)}`),
    );
    return {
      command: `node dist/bench/ingest-campaign.js ${process.argv.slice(2).join(' ')}`.trim(),
      options: o,
      machine: { cpus: cpus().length, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version },
      startupMs,
      ingestMs,
      totalMs: Date.now() - started,
      /** CPU this process used (generating, validating, sending), s. */
      benchCpuS: Math.round((process.cpuUsage().user + process.cpuUsage().system) / 1e5) / 10,
      stoppedBy,
      stats,
      probe: {
        sent: probeResult.sent.reduce((a, b) => a + b, 0),
        sentByNode: probeResult.sent,
        unanswered: probeResult.unanswered.length,
        unansweredByNode: [0, 1, 2].map((i) => probeResult.unanswered.filter((u) => u.node === i).length),
        rcodes: probeResult.rcodes,
        p50Ms: quantile(probeResult.rttMs, 0.5),
        p99Ms: quantile(probeResult.rttMs, 0.99),
        maxMs: probeResult.rttMs.length ? Math.round(probeResult.rttMs.reduce((m, x) => Math.max(m, x), 0) * 100) / 100 : null,
        misses: probeMisses,
      },
      exits,
      quarantined,
      rssBefore,
      rssAfter,
      rssTimeline,
      nodeHeapMiB: o.nodeHeapMiB,
      errorLines: errorLines.length,
      errorSamples: errorLines.slice(0, 10),
      failures,
      notes,
    };
  } finally {
    clearTimeout(watchdog);
    await cleanup();
  }
}

type Report = Awaited<ReturnType<typeof run>>;

function table(r: Report): { text: string; missed: string[] } {
  const s = r.stats;
  const fivexx = Object.entries(s.byStatus).filter(([k]) => Number(k) >= 500).reduce((a, [, v]) => a + v, 0);
  const missed: string[] = [];
  const goal = (ok: boolean, what: string) => {
    if (!ok) missed.push(what);
    return ok ? 'met' : '**MISSED**';
  };
  const fmt = (x: number) => x.toLocaleString('en-US');
  const rss = (b: NodeRss[], a: NodeRss[]) => b.map((x, i) => `node ${i + 1} ${x.primaryMiB ?? '–'} → ${a[i]!.primaryMiB ?? '–'}${x.workersMiB || a[i]!.workersMiB ? ` (+ workers ${x.workersMiB} → ${a[i]!.workersMiB})` : ''}`).join('; ');
  const q = r.quarantined.every((x) => x === null) ? 'n/a (metric not in this build)' : r.quarantined.map((x, i) => `node ${i + 1} ${x ?? 'n/a'}`).join(', ');
  const mutations = Object.entries(s.byWhat)
    .filter(([k]) => k.startsWith('mutation: '))
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k.slice(10)} ${fmt(v)}`)
    .join(', ');
  const rows: [string, string, string][] = [
    ['signals sent', `${fmt(s.signals)} in ${fmt(s.requests)} requests over 3 nodes (asked for ${fmt(r.options.signals)}; stopped by ${r.stoppedBy})`, ''],
    ['by batch', Object.entries(s.byBatchKind).map(([k, v]) => `${k}: ${fmt(v.signals)} signals / ${fmt(v.requests)} requests (mean ${Math.round(v.ms / Math.max(1, v.requests - (v.unanswered ?? 0)))} ms, max ${fmt(v.maxMs)} ms${v.unanswered ? `, of the ${fmt(v.requests - v.unanswered)} answered; ${fmt(v.unanswered)} without an answer` : ''})`).join('; '), ''],
    ['by signal (in every batch, refused ones too)', ['valid', 'cancel', 'replay'].map((k) => `${k} ${fmt(s.byWhat[k] ?? 0)}`).join(', ') + `, mutated ${fmt(Object.entries(s.byWhat).filter(([k]) => k.startsWith('mutation: ')).reduce((a, [, v]) => a + v, 0))}, in request-level mutations ${fmt(Object.entries(s.byWhat).filter(([k]) => k.startsWith('request: ')).reduce((a, [, v]) => a + v, 0))}`, ''],
    ['mutations', mutations, ''],
    ['requests by HTTP status', Object.entries(s.byStatus).sort().map(([k, v]) => `${k}: ${fmt(v)}`).join(', '), ''],
    ['**5xx answers**', String(fivexx), `0: ${goal(fivexx === 0, '5xx')}`],
    ['**requests without an HTTP answer** (30 s)', String(s.noAnswer), `0: ${goal(s.noAnswer === 0, 'requests without an answer')}`],
    ['**answers differing from validateSignal\'s verdict**', String(s.mismatches), `0: ${goal(s.mismatches === 0, 'verdict mismatches')}`],
    ['**node exits**', String(r.exits.length), `0: ${goal(r.exits.length === 0, 'node exits')}`],
    ['**DNS probes sent / unanswered in 1 s**', `${fmt(r.probe.sent)} / ${r.probe.unanswered} (by node: ${r.probe.unansweredByNode.join(', ')})`, `0: ${goal(r.probe.unanswered === 0, 'unanswered probes')}`],
    ['probe latency', `p50 ${r.probe.p50Ms} ms, p99 ${r.probe.p99Ms} ms, max ${r.probe.maxMs} ms; rcodes ${JSON.stringify(r.probe.rcodes)}`, ''],
    ['signals stored / stale / refused', `${fmt(s.stored)} / ${fmt(s.stale)} / ${fmt(s.refused)}${Object.keys(s.otherResults).length ? `; other results ${JSON.stringify(s.otherResults)}` : ''}`, ''],
    ['mutations the validator accepted', Object.keys(s.mutationsAccepted).length ? Object.entries(s.mutationsAccepted).map(([k, v]) => `${k} ${fmt(v)}`).join(', ') : '0', ''],
    ['signals meant valid that the validator refused (the generator\'s own check)', String(s.meantValidRefused), ''],
    ['validateSignal throws other than SignalError', String(s.validatorThrew), ''],
    ['replays sent / stale / stored again', `${fmt(s.replaysSent)} / ${fmt(s.replaysStale)} / ${fmt(s.replaysStored)}`, ''],
    ['records quarantined', q, ''],
    ['error log lines (level ≥ 50)', String(r.errorLines), ''],
    ['RSS before → after (MiB)', rss(r.rssBefore, r.rssAfter), ''],
    ['duration', `ingest ${(r.ingestMs / 1000).toFixed(1)} s (${fmt(Math.round(s.signals / (r.ingestMs / 1000)))} signals/s), start-up ${(r.startupMs / 1000).toFixed(1)} s, total ${(r.totalMs / 1000).toFixed(1)} s; the campaign's own CPU ${r.benchCpuS} s`, ''],
  ];
  const lines = ['| what | result | goal |', '|---|---|---|', ...rows.map((x) => `| ${x.join(' | ')} |`)];
  // The first few of each; every one is in the JSON report and in --failures.
  const shown = (what: string) => r.failures.filter((f) => f.what === what).slice(0, 5);
  for (const f of [...shown('5xx'), ...shown('no answer'), ...shown('mismatch')]) lines.push('', `${f.what}: node ${f.node}, batch ${f.batch}: got ${f.status}, expected ${f.expected}; body in ${f.file}; answer ${f.response.slice(0, 500)}`);
  if (r.probe.misses.length > 5) lines.push('', `unanswered probes: the first 5 of ${r.probe.unanswered} (${r.probe.misses.length} written to --failures):`);
  for (const m of r.probe.misses.slice(0, 5)) lines.push('', `unanswered probe: node ${m.node} at ${new Date(m.at).toISOString()}; ${m.batches.length} requests on that node from 2 s before to 1 s after (batches ${m.batches.slice(0, 5).join(', ')}${m.batches.length > 5 ? ', …' : ''}; their bodies and the node's log then in ${m.file})`);
  for (const e of r.exits) lines.push('', e);
  for (const n of r.notes) lines.push('', n.slice(0, 1500));
  for (const e of r.errorSamples) lines.push('', `error line: ${e}`);
  return { text: lines.join('\n'), missed };
}

const isMain = isMainThread && process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1];
if (isMain) {
  const { values: a } = parseArgs({
    options: {
      signals: { type: 'string', default: '1000000' },
      seed: { type: 'string', default: '20261227' },
      minutes: { type: 'string', default: '20' },
      workers: { type: 'string', default: '0' },
      keys: { type: 'string', default: '4' },
      'node-heap-mib': { type: 'string', default: '0' },
      report: { type: 'string' },
      failures: { type: 'string' },
    },
    strict: true,
  });
  const num = (name: string, v: string, min: number, max: number) => {
    const x = Number(v);
    if (!Number.isInteger(x) || x < min || x > max) throw new Error(`--${name} ${v}: an integer from ${min} to ${max}`);
    return x;
  };
  const o: Options = {
    signals: num('signals', a.signals, 1, 100_000_000),
    seed: num('seed', a.seed, 0, 0xffffffff),
    minutes: num('minutes', a.minutes, 1, 600),
    workers: num('workers', a.workers, 0, 16),
    keys: num('keys', a.keys, 1, 1000),
    nodeHeapMiB: num('node-heap-mib', a['node-heap-mib'], 0, 65536),
    failures: a.failures ?? mkdtempSync(join(tmpdir(), 'gridsteer-ingest-campaign-')),
  };
  const report = await run(o);
  const { text, missed } = table(report);
  console.log(`\n${text}\n`);
  console.log(`failing inputs (if any) are in ${o.failures}`);
  if (a.report) writeFileSync(a.report, `${JSON.stringify(report, null, 2)}\n`);
  if (missed.length) console.log(`goals missed: ${missed.join(', ')}`);
  process.exitCode = missed.length ? 1 : 0;
}
