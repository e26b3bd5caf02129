/**
 * What a DNS-answering process serves, and how it is built: the primary loads and checks
 * config, then hands a ServeState (plain data) to each answering process, which compiles
 * it into a Responder's ServingState. The same code runs in the primary with --workers 0.
 */
import { ConfigError, loadConfig, renderPath, type ConfigIssue, type LoadedConfig } from './config/load.js';
import { compileZones, snapshotOf, ZoneError, type CompiledZones, type ZoneSnapshot } from './dns/zone.js';
import { initialPlan, type Cell } from './policy/decide.js';
import { rankRegions } from './policy/distance.js';
import type { ServingState } from './dns/respond.js';
import type { Plan } from './types.js';

/** Sent from the primary to every answering process; JSON-serialisable. */
export interface ServeState {
  /** Config hash + plan version: what /readyz compares acknowledgements against. */
  version: string;
  snapshot: ZoneSnapshot;
  plan: Plan;
  cell: Cell;
}

/** A configuration that loaded and compiled, ready to serve. */
export interface Prepared {
  loaded: LoadedConfig;
  state: ServeState;
  zones: CompiledZones;
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
  const plan = initialPlan(loaded.hash);
  const loc = loaded.config.policy.defaultLocation;
  const cell: Cell = {
    ranking: rankRegions(loc, loaded.regions).map((r) => r.id),
    origin: `the default location (${loc.lat}, ${loc.lon}); the geo engine is not enabled`,
  };
  return { loaded, zones, state: { version: plan.version, snapshot, plan, cell } };
}

/** Builds a Responder's state from a ServeState (in a worker: compiles the zones again). */
export function servingState(s: ServeState, zones?: CompiledZones): ServingState {
  return { zones: zones ?? compileZones(s.snapshot), plan: s.plan, cell: s.cell, version: s.version };
}
