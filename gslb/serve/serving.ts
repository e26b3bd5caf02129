/**
 * What a DNS-answering process serves, and how it is built: the primary loads and checks
 * config, then hands a ServeState (plain data) to each answering process, which compiles
 * it into a Responder's ServingState. The same code runs in the primary with --workers 0.
 */
import { ConfigError, loadConfig, renderPath, type ConfigIssue, type LoadedConfig } from '../config/load.js';
import { compileZones, snapshotOf, ZoneError, type CompiledZones, type ZoneSnapshot } from '../dns/zone.js';
import { absoluteName, nameKey } from '../dns/name.js';
import { planFromConfig } from '../policy/decide.js';
import { checkExplainInput, explain, ExplainError, type ExplainQuery, type ExplainResult } from './explain.js';
import type { LocationLookup } from '../geo/locator.js';
import { rankRegions } from '../geo/distance.js';
import type { ResponderOptions, ServingState } from '../dns/respond.js';
import { TOP_K, type FleetGeometry } from '../geo/compile.js';
import { defaultTable, GeoTable } from '../geo/table.js';
import type { Plan } from '../model/types.js';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseSecret, type CookieOptions } from '../dns/cookie.js';

/** Which geo table to answer from: a compiled table file, or none (the default location). */
export interface GeoRef {
  file: string | null;
  version: string;
  /** Top-K ranking from the default location (used while there is no table). */
  defaultRanking: string[];
}

/** Sent from the primary to every answering process; JSON-serialisable. */
export interface ServeState {
  /** Plan version + geo version: what /readyz compares acknowledgements against. */
  version: string;
  snapshot: ZoneSnapshot;
  plan: Plan;
  opts: ResponderOptions;
  geo: GeoRef;
}

/** A configuration that loaded and compiled, ready to serve. */
export interface Prepared {
  loaded: LoadedConfig;
  state: ServeState;
  zones: CompiledZones;
  /** What the geo table depends on. */
  geometry: FleetGeometry;
}

/** The version of a ServeState. */
export function stateVersion(plan: Plan, geo: GeoRef): string {
  return `${plan.version}/${geo.version}`;
}

/**
 * Loads gridsteer.yaml and the regions, compiles the zones, and derives what to serve.
 * Throws ConfigError (every issue with file, line and path) on any problem.
 */
export function prepare(configFile: string): Prepared {
  const loaded = loadConfig(configFile);
  const snapshot = snapshotOf(loaded.config, loaded.regions);
  let zones: CompiledZones;
  try {
    zones = compileZones(snapshot);
  } catch (e) {
    if (!(e instanceof ZoneError)) throw e;
    const issues: ConfigIssue[] = e.issues.map((i) => ({
      file: loaded.file,
      ...loaded.locate(loaded.file, i.path),
      path: renderPath(i.path),
      message: i.message,
    }));
    throw new ConfigError(issues);
  }
  const c = loaded.config;
  const plan = planFromConfig(loaded.hash, structuredClone(c.policy.weights) as Record<string, Record<string, number>>);
  const geometry: FleetGeometry = {
    regions: loaded.regions.map((r) => ({ id: r.id, location: { lat: r.location.lat, lon: r.location.lon }, bias: r.bias })),
    defaultLocation: { lat: c.policy.defaultLocation.lat, lon: c.policy.defaultLocation.lon },
    overrides: c.networks.map((n) => ({ cidr: n.cidr, regions: [...n.regions] })),
  };
  const geo: GeoRef = {
    file: null,
    version: 'default-location',
    defaultRanking: rankRegions(geometry.defaultLocation, geometry.regions, TOP_K).map((r) => r.id),
  };
  const edns = ednsOf(loaded);
  const opts: ResponderOptions = {
    udpPayloadMax: c.dns.udpPayloadMax,
    minTtl: c.policy.minTtl,
    queryLogSampleRate: c.log.queries.sampleRate,
    rateLimit: structuredClone(c.dns.rateLimit),
    cookies: edns.cookies,
    ...(edns.nsid !== undefined ? { nsid: edns.nsid } : {}),
    tcpIdleTimeoutMs: c.dns.tcp.idleTimeoutMs,
  };
  return { loaded, zones, geometry, state: { version: stateVersion(plan, geo), snapshot, plan, opts, geo } };
}

/** This process's random cookie secret when none is configured: made once, kept across reloads. */
let generatedSecret: string | null = null;

/**
 * The cookie secrets (read from their files now: at start and on every reload; handed to the
 * workers with the rest of the serving state, never stored) and the NSID as hex. Throws
 * ConfigError naming the setting and the file.
 */
function ednsOf(loaded: LoadedConfig): { cookies: CookieOptions; nsid?: string } {
  const c = loaded.config;
  const issues: ConfigIssue[] = [];
  const issue = (path: (string | number)[], message: string) =>
    issues.push({ file: loaded.file, ...loaded.locate(loaded.file, path), path: renderPath(path), message });
  const readSecret = (key: 'secretFile' | 'previousSecretFile'): string | undefined => {
    const rel = c.dns.cookies[key];
    if (rel === undefined) return undefined;
    const file = resolve(dirname(loaded.file), rel);
    try {
      return parseSecret(readFileSync(file, 'utf8')).toString('hex');
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      issue(['dns', 'cookies', key], err.code ? `cannot read ${file} (${err.code}): create it with 32 hex digits (openssl rand -hex 16 > ${rel}) or remove the setting` : `${file}: ${err.message}`);
      return undefined;
    }
  };
  const secret = readSecret('secretFile');
  const previous = readSecret('previousSecretFile');
  let nsid: string | undefined;
  if (c.dns.nsid !== undefined) {
    const v = c.dns.nsid;
    if (v.startsWith('hex:')) {
      if (/^([0-9a-fA-F]{2})+$/.test(v.slice(4))) nsid = v.slice(4).toLowerCase();
      else issue(['dns', 'nsid'], `"${v}": after "hex:" an even number of hex digits, e.g. hex:6e7331`);
    } else nsid = Buffer.from(v, 'utf8').toString('hex');
  }
  if (issues.length > 0) throw new ConfigError(issues);
  generatedSecret ??= randomBytes(16).toString('hex');
  return {
    cookies: { mode: c.dns.cookies.mode, secret: secret ?? generatedSecret, ...(previous !== undefined ? { previousSecret: previous } : {}) },
    ...(nsid !== undefined ? { nsid } : {}),
  };
}

let lastTable: { file: string; table: GeoTable } | null = null;

/** The table a GeoRef names: loaded from its file (memoised per file), or the default table. */
export function tableOf(g: GeoRef, loaded?: GeoTable | null): GeoTable {
  if (g.file === null) return defaultTable(g.defaultRanking, 'no geo table yet');
  if (loaded && lastTable?.file !== g.file) lastTable = { file: g.file, table: loaded };
  if (lastTable?.file !== g.file) lastTable = { file: g.file, table: GeoTable.load(g.file) };
  return lastTable.table;
}

/**
 * Builds a Responder's state from a ServeState (in a worker: compiles the zones again and
 * loads the geo table file).
 */
export function servingState(s: ServeState, zones?: CompiledZones, table?: GeoTable | null): ServingState {
  return { zones: zones ?? compileZones(s.snapshot), plan: s.plan, geo: tableOf(s.geo, table), opts: s.opts, version: s.version };
}

/** What explain reads: the same zones, plan and table the responder answers from. */
export interface ExplainContext {
  zones: CompiledZones;
  plan: Plan;
  geometry: FleetGeometry;
  /** Tmin, seconds. */
  minTtl: number;
  /** The table in force (tableOf(state.geo)): the default table before the first compile. */
  geo: GeoTable;
  /** Opens the database lookup (called only once the query is known to be valid); null = none. */
  lookup(): Promise<LocationLookup | null>;
  /** Words on the geo table in force, for the result. */
  geoNote?: string;
}

/**
 * Explains the answer `q` gets at `now` (serve/explain.ts). Rejects with ExplainError naming
 * the field when the name is not steered (the message lists the names that are), the client
 * is not an address or the subnet not a subnet — before the database is opened.
 */
export async function explainQuery(ctx: ExplainContext, q: ExplainQuery, now: number): Promise<ExplainResult> {
  let key: string;
  try {
    key = nameKey(absoluteName(q.name, ''));
  } catch (e) {
    throw new ExplainError('name', `"${q.name}" is not a domain name (${(e as Error).message})`);
  }
  const target = ctx.zones.nodes.get(key)?.steered?.target;
  if (!target) {
    const names = [...ctx.zones.gslb.values()].map((g) => g.decide.name);
    throw new ExplainError('name', `"${q.name}" is not a steered name; the steered names are: ${names.join(', ') || '(none configured)'}`);
  }
  checkExplainInput(q.client, q.subnet);
  const lookup = await ctx.lookup();
  return explain({
    client: q.client,
    subnet: q.subnet,
    name: absoluteName(q.name, ''),
    decideName: target.decide,
    qtype: q.type,
    now,
    geo: ctx.geo,
    lookup,
    plan: ctx.plan,
    fleet: ctx.geometry,
    minTtl: ctx.minTtl,
    geoNote: ctx.geoNote,
  });
}
