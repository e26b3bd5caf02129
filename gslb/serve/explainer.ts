/**
 * GET /v1/explain and `gridsteer explain` against a running node: the answer one client gets
 * now, from the zones, plan and geo table the DNS path answers from, with the client's
 * location looked up in the GeoIP database file the table in force was compiled from (read
 * on the first explain and again when the table changes, never at start). The plan in force
 * may be older than the store (a data loss held, planning failing): an override it cites that
 * the store no longer holds is said `[ended]`, as `gridsteer status` says it (`live` gives the
 * ids the store holds; when it cannot be read, a note says the ids were not checked).
 */
import type { Logger } from 'pino';
import { DatabaseLocator } from '../geo/locator.js';
import type { GeoService } from '../geo/service.js';
import type { ExplainQuery, ExplainResult } from './explain.js';
import type { ServingHolder } from './current.js';
import { explainQuery, tableOf } from './serving.js';
import { now } from '../platform/clock.js';
import { citeLive } from '../model/cited.js';

export function explainer(serving: ServingHolder, geo: GeoService, log: Logger, live?: () => Promise<ReadonlySet<string>>): (q: ExplainQuery) => Promise<ExplainResult> {
  const locator = new DatabaseLocator(() => {
    const g = geo.state;
    return serving.prepared.loaded.config.geoip.enabled && g.database !== null ? { file: g.database, version: g.version } : null;
  });
  const geoNote = (): string => {
    const g = geo.state;
    if (!serving.prepared.loaded.config.geoip.enabled) return 'geoip.enabled is false';
    if (g.file === null) return g.error ? `no table could be made: ${g.error}` : 'the first compile of the database is running';
    return g.building ? 'a new table is being compiled; this one answers meanwhile' : `database ${g.database}`;
  };
  return async (q) => {
    const p = serving.prepared;
    let lookupError: string | null = null;
    const result = await explainQuery(
      {
        zones: p.zones,
        plan: p.state.plan,
        geometry: p.geometry,
        minTtl: p.state.opts.minTtl,
        geo: tableOf(p.state.geo, serving.table),
        lookup: () =>
          locator.current().catch((e: Error) => {
            lookupError = e.message;
            log.warn({ module: 'geo', err: e.message }, 'explain: cannot read the GeoIP database for locations');
            return null;
          }),
        geoNote: geoNote(),
      },
      q,
      // The process clock the DNS path answers by (the test clock when one is set).
      now(),
    );
    if (lookupError !== null) result.notes.push(`located: the GeoIP database could not be read: ${lookupError}`);
    if (!live) return result;
    let ids: ReadonlySet<string>;
    try {
      ids = await live();
    } catch (e) {
      result.notes.push(`overrides: the store could not be read (${(e as Error).message}): the override ids cited are not checked against it`);
      return result;
    }
    return citingLive(result, ids);
  };
}

/** `r` with every override id it cites that `live` does not hold said `[ended]` (decide's reasons, the plan step's, each region's why, the notes). */
export function citingLive(r: ExplainResult, live: ReadonlySet<string>): ExplainResult {
  const cite = (x: string) => citeLive(x, live);
  return {
    ...r,
    candidates: r.candidates.map((c) => ({ ...c, why: cite(c.why) })),
    planStep: { ...r.planStep, reasons: r.planStep.reasons.map(cite) },
    reasons: r.reasons.map(cite),
    notes: r.notes.map(cite),
  };
}
