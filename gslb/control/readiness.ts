/**
 * /readyz: whether this node should be sent queries, as one check per part (config, DNS,
 * store, geo). Pure: it is handed each part's status and the time, and reads nothing else.
 *
 * Fail static counts as ready (issue 7: "store fresh or failing static"): a node that lost
 * the store keeps answering from its last plan, and an orchestrator must not take every node
 * out of service because Redis is down. Never having read the store is not ready.
 */
import type { GeoStatus } from '../geo/service.js';

/** One line of /readyz (the API's ReadinessCheck shape). */
export interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

export interface ReadinessInputs {
  config: { hash: string; file: string };
  /** The answering processes' check (gslb/serve/supervisor.ts DnsProcesses.check). */
  dns: Check;
  store: { ready: boolean; failingStatic: boolean; skewBad: boolean; backend: string; planRevision: number; seenRevision?: number; why: string; loss?: unknown };
  geo: { enabled: boolean; state: GeoStatus };
  /** The node is shutting down. */
  closing: boolean;
  /** ms epoch (for how long a compile has run). */
  now: number;
}

/** `, 40 %` while a compile reports how far it is. */
function progressText(p: number | null | undefined): string {
  return typeof p === 'number' ? `, ${Math.floor(p * 100)} %` : '';
}

export function readiness(r: ReadinessInputs): { ready: boolean; checks: Check[] } {
  const checks: Check[] = [{ name: 'config', ok: true, detail: `version ${r.config.hash} from ${r.config.file}` }, r.dns];
  const ss = r.store;
  checks.push({
    name: 'store',
    ok: ss.ready || (ss.failingStatic && !ss.skewBad),
    detail: `${ss.backend}, revision ${ss.planRevision}${(ss.seenRevision ?? -1) > ss.planRevision ? ` (revision ${ss.seenRevision} stored, planning)` : ''}: ${ss.why}${ss.loss ? ' (data loss held: ready, answering from the last plan; changes are stored, planned once confirmed)' : ss.failingStatic ? ' (fail static: ready, changes refused)' : ''}`,
  });
  const g = r.geo.state;
  if (!r.geo.enabled) checks.push({ name: 'geo', ok: true, detail: 'disabled (geoip.enabled: false): every client is placed at the default location' });
  else if (g.file === null) {
    checks.push({
      name: 'geo',
      ok: false,
      detail: g.error
        ? `no table: ${g.error}; answering from the default location`
        : `compiling ${g.database ?? 'the database'}${g.building ? ` for ${Math.round((r.now - g.building) / 1000)}s` : ''}${progressText(g.progress)}; answering from the default location until the first table is ready`,
    });
  } else {
    checks.push({
      name: 'geo',
      ok: true,
      detail:
        `table ${g.version} from ${g.database}` +
        (g.building ? `; compiling a new table for ${Math.round((r.now - g.building) / 1000)}s${progressText(g.progress)}, answering from this one meanwhile` : '') +
        (g.error ? `; last error: ${g.error}` : ''),
    });
  }
  return { ready: !r.closing && checks.every((c) => c.ok), checks };
}
