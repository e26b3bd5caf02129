/**
 * Configuration reload (SIGHUP, POST /v1/config/reload): re-reads the files and swaps the
 * result in, keeping the geo table and the plan in force until the geo service and the
 * planner have caught up. Synchronous from start to swap, so two reloads can never
 * interleave; async only to fit the API. Throws ConfigError, keeping the old configuration.
 * Settings read only at start (dns.listen, http.tls, state.store/redis, collectors) are
 * warned about, not applied.
 */
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { type GeoService, geoSettings } from '../geo/service.js';
import type { Plan } from '../model/types.js';
import type { ServingHolder } from './current.js';
import { prepare, stateVersion, type Prepared } from './serving.js';

export interface ReloadOptions {
  configFile: string;
  /** `--dns-listen` given on the command line (it wins over dns.listen). */
  dnsListen?: string[];
  /** The configuration the process started with (what start-only settings are compared with). */
  first: Config;
  serving: ServingHolder;
  geo: GeoService;
  /** The planner's plan, once it has planned (null before). */
  plan(): Plan | null;
  /** Hands a changed configuration to the planner (its hash and regions); `previous` is the one it replaces. */
  reconfigure(next: Prepared, previous: Prepared): void;
  log: Logger;
}

export function reloader(o: ReloadOptions): () => Promise<{ version: string; changed: boolean }> {
  const cfg = o.first;
  const log = o.log;
  return async () => {
    let next = prepare(o.configFile);
    const current = o.serving.prepared;
    // Keep answering from the table in force; the geo service swaps in a new one if the
    // geometry or the database setting changed.
    const g = current.state.geo;
    // The plan in force stays until the planner has planned with the new configuration.
    const plan = o.plan() ?? next.state.plan;
    next = { ...next, state: { ...next.state, geo: g, plan, version: stateVersion(plan, g) } };
    const changed = next.state.version !== current.state.version || next.loaded.hash !== current.loaded.hash;
    const listenNow = (o.dnsListen ?? next.loaded.config.dns.listen).join(',');
    if (!o.dnsListen && listenNow !== cfg.dns.listen.join(',')) log.warn('config: dns.listen changed; restart to listen on the new addresses');
    if (JSON.stringify(next.loaded.config.http.tls) !== JSON.stringify(cfg.http.tls)) log.warn('config: http.tls changed; restart to use the new TLS settings');
    if (changed) {
      o.serving.setConfig(next);
      log.info({ version: next.state.version }, 'config reloaded');
      if (next.loaded.config.state.store !== cfg.state.store || JSON.stringify(next.loaded.config.state.redis) !== JSON.stringify(cfg.state.redis)) {
        log.warn({ module: 'state' }, 'config: state.store or state.redis changed; restart to use the new store');
      }
      o.reconfigure(next, current);
      if (JSON.stringify(next.loaded.config.collectors) !== JSON.stringify(cfg.collectors)) {
        log.warn({ module: 'collectors' }, 'config: collectors changed; restart to run the new collector settings');
      }
    }
    void o.geo.setGeometry(next.geometry, geoSettings(next.loaded.config.geoip, next.loaded.file));
    return { version: next.loaded.hash, changed };
  };
}
