/**
 * The simulator's report: the targets checked against a run, and the Markdown summary.
 * Pure (no I/O, no clock): the same SimReport gives the same text.
 *
 * Metric definitions (docs/simulation.md repeats them):
 * - Counts are of sessions that arrived in the measured window, split into TTL-honouring
 *   traffic (the client and its resolver honour TTLs) and the rest (TTL-ignoring clients,
 *   clamping resolvers).
 * - sent to the event region: sessions with at least one attempt (a new connection or a new
 *   stream on a pooled one) sent to the event's region while the event was in force (T ≤ t < E).
 * - cut: sessions active on a region when it lost power (at T of a power-off event), whenever
 *   they began.
 * - failed: every attempt refused (the retries used up); started over capacity: started on a
 *   region whose load was already at or above its capacity; unplaced demand = both.
 * - added distance: km from the client's metro to the region that served the session, minus
 *   km to its nearest region, over sessions of the event regions' own clients started from
 *   the announcement (or T) to 15 minutes after E; mean and 95th percentile (1 km bins).
 * - peak utilisation: the highest load ÷ capacity of each region in the window (capacity as
 *   it was at that instant), and the time spent over capacity (sampled every second).
 */
import { formatDuration } from './scenario.js';
import { POLICY_TITLES, type PolicyName } from './policies.js';
import type { ByClass, EventRt, PolicyResult } from './engine.js';
import type { SimReport } from './run.js';

export interface Target {
  what: string;
  status: 'met' | 'not met' | 'n/a';
  detail: string;
}

/** Total capacity of the fleet (concurrent sessions) with every event's effect in force at once. */
export function capacityDuringEvents(rep: Pick<SimReport, 'world' | 'events'>): number {
  const cap = Array.from(rep.world.capacity);
  for (const e of rep.events) cap[e.region] = e.kind === 'power-off' ? 0 : cap[e.region]! * (1 - e.share);
  return cap.reduce((s, x) => s + x, 0);
}

const sum = (x: ByClass) => x[0] + x[1];
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const pct = (x: number, digits = 0) => `${(x * 100).toFixed(digits)} %`;

/**
 * The issue's targets for GridSteer, checked against the run:
 * 1. for each power-off event, no TTL-honouring session sent to its region while it is in
 *    force (n/a for throttles: the region still serves);
 * 2. at least 90 % fewer cut sessions than reactive failover (all traffic; n/a when reactive
 *    cut none);
 * 3. no region over capacity when the fleet has room (n/a when the fleet's capacity with
 *    every event in force is below the expected demand).
 */
export function evaluateTargets(rep: Pick<SimReport, 'world' | 'events' | 'results'>): Target[] {
  const gs = rep.results.find((r) => r.policy === 'gridsteer');
  const re = rep.results.find((r) => r.policy === 'reactive');
  const out: Target[] = [];
  const ids = rep.world.regions.map((r) => r.id);
  if (!gs) return [{ what: 'GridSteer targets', status: 'n/a', detail: 'GridSteer was not run' }];
  for (const e of rep.events) {
    const what = `TTL-honouring sessions sent to ${ids[e.region]} while ${e.id} is in force: 0`;
    if (e.kind !== 'power-off') {
      out.push({ what, status: 'n/a', detail: `a throttle leaves ${ids[e.region]} serving (at ${pct(1 - e.share)} of its capacity): new sessions there are expected; ${fmt(gs.startedOnEventRegion[e.idx]![0])} TTL-honouring sessions started there` });
      continue;
    }
    const n = gs.sentToEventRegion[e.idx]![0];
    out.push({ what, status: n === 0 ? 'met' : 'not met', detail: `${fmt(n)} (the rest of the traffic: ${fmt(gs.sentToEventRegion[e.idx]![1])})` });
  }
  const cutWhat = 'cut sessions at least 90 % fewer than reactive failover (all traffic)';
  if (!re) out.push({ what: cutWhat, status: 'n/a', detail: 'reactive failover was not run' });
  else if (sum(re.cut) === 0) out.push({ what: cutWhat, status: 'n/a', detail: `reactive failover cut no session (GridSteer cut ${fmt(sum(gs.cut))})` });
  else {
    const fewer = 1 - sum(gs.cut) / sum(re.cut);
    out.push({ what: cutWhat, status: fewer >= 0.9 ? 'met' : 'not met', detail: `GridSteer ${fmt(sum(gs.cut))}, reactive ${fmt(sum(re.cut))}: ${pct(fewer, 1)} fewer` });
  }
  const capWhat = 'no region over capacity when the fleet has room';
  const room = capacityDuringEvents(rep);
  const need = rep.world.expectedConcurrent;
  if (room < need) out.push({ what: capWhat, status: 'n/a', detail: `the fleet has no room: ${fmt(room)} concurrent sessions of capacity with the events in force, ${fmt(need)} expected` });
  else {
    const over = gs.peakUtil.map((u, r) => ({ u, r })).filter((x) => x.u > 1);
    out.push({
      what: capWhat,
      status: over.length === 0 ? 'met' : 'not met',
      detail:
        (over.length === 0 ? `highest peak ${pct(Math.max(...gs.peakUtil))}` : `over: ${over.map((x) => `${ids[x.r]} ${pct(x.u)} (${formatDuration(gs.overCapacityMs[x.r]!)} over)`).join(', ')}`) +
        `; the fleet has ${fmt(room)} concurrent sessions of capacity with the events in force for ${fmt(need)} expected`,
    });
  }
  return out;
}

const utc = (t: number) => new Date(t).toISOString().slice(11, 16);
const rel = (t: number, T: number) => {
  const d = t - T;
  return d === 0 ? 'T' : `T ${d < 0 ? '−' : '+'} ${formatDuration(Math.abs(d))}`;
};

function eventRow(rep: SimReport, e: EventRt): string {
  const sc = rep.scenario.events[e.idx]!;
  const told = sc.facts.length === 0 ? 'nothing: its own scrapes and probes only' : sc.facts.map((f) => `${f.kind} ${String(f.value.type ?? '')}${f.value.level !== undefined ? ` level ${String(f.value.level)}` : ''} from ${f.source}`).join('; ');
  const effect = e.kind === 'power-off' ? 'no power: stops serving' : `throttle: ${pct(e.share)} of GPUs lost`;
  const announced = sc.noticeMs > 0 ? `${rel(e.announce, e.T)} (${utc(e.announce)})` : 'at T (no notice)';
  return `| ${e.id} | ${rep.world.regions[e.region]!.id} | ${effect} | ${announced} | ${utc(e.T)} | ${utc(e.E)} | ${told} |`;
}

/** The Markdown report. `command` is the command line that made it; `chart` the SVG's file name (relative), if any. */
export function renderMarkdown(rep: SimReport, o: { command?: string; chart?: string } = {}): string {
  const sc = rep.scenario;
  const w = rep.world;
  const R = w.regions.length;
  const L: string[] = [];
  const results = rep.results;
  const cols = results.map((r) => POLICY_TITLES[r.policy]);
  const header = (first: string) => [`| ${first} | ${cols.join(' | ')} |`, `| --- | ${cols.map(() => '---:').join(' | ')} |`];
  L.push(`# ${sc.title}`, '');
  if (sc.description) L.push(sc.description, '');
  const windowH = (rep.timeline.windowEnd - rep.timeline.windowStart) / 3_600_000;
  L.push(
    `Scenario \`${sc.name}\`, seed ${rep.seed}, scale ${rep.scale}: ${fmt(sc.world.sessionsPerHour * rep.scale)} sessions per hour, ${formatDuration(rep.timeline.windowEnd - rep.timeline.windowStart)} measured (${utc(rep.timeline.windowStart)}–${utc(rep.timeline.windowEnd)} UTC on ${new Date(rep.timeline.windowStart).toISOString().slice(0, 10)}) after ${formatDuration(sc.world.warmupMs)} of warm-up.` +
      (windowH * 3_600_000 < sc.hoursMs ? ` Shortened from ${formatDuration(sc.hoursMs)} with --hours: facts announced before the window are known from its start.` : ''),
  );
  if (o.command) L.push('', `Made with \`${o.command}\`.`);
  L.push('', '## Events', '', '| event | region | effect | announced | T (UTC) | E (UTC) | GridSteer is told |', '| --- | --- | --- | --- | --- | --- | --- |');
  for (const e of rep.events) L.push(eventRow(rep, e));

  L.push('', '## The world', '');
  L.push(
    `${fmt(w.subnetMetro.length)} client /24s in ${w.metros.length} metros, ${w.clientsPerSubnet} clients each; ${pct(sc.world.clampingResolvers)} of resolvers clamp TTLs up to ${sc.world.clampTtlS} s, ${pct(sc.world.ttlIgnoringClients)} of clients ignore TTLs: ${pct(w.honouringShare, 1)} of demand is TTL-honouring. Mean session ${(w.meanLengthMs / 1000).toFixed(1)} s, so ${fmt(w.expectedConcurrent)} concurrent sessions are expected; the fleet's capacity is ${sc.world.fleetHeadroom} × that, shared by capacity units. Regions from \`${sc.regionsFrom}\`.`,
    '',
    '| region | capacity units | capacity (concurrent sessions) | own clients (expected concurrent) | utilisation by own clients |',
    '| --- | ---: | ---: | ---: | ---: |',
  );
  for (let r = 0; r < R; r++) {
    L.push(`| ${w.regions[r]!.id} | ${w.regions[r]!.capacityUnits} | ${fmt(w.capacity[r]!)} | ${fmt(w.expectedHomeConcurrent[r]!)} | ${pct(w.expectedHomeConcurrent[r]! / w.capacity[r]!)} |`);
  }

  const classTable = (cls: 0 | 1, title: string) => {
    L.push('', `### ${title}`, '', ...header('sessions'));
    const row = (name: string, f: (x: PolicyResult) => string) => L.push(`| ${name} | ${results.map(f).join(' | ')} |`);
    row('arrived', (x) => fmt(x.arrivals[cls]));
    for (const e of rep.events) {
      const id = w.regions[e.region]!.id;
      row(`sent to ${id} while ${e.id} is in force`, (x) => fmt(x.sentToEventRegion[e.idx]![cls]));
      if (e.kind !== 'power-off') row(`… started there (it still serves)`, (x) => fmt(x.startedOnEventRegion[e.idx]![cls]));
    }
    row('cut (active on a region when it lost power)', (x) => fmt(x.cut[cls]));
    row('failed (every attempt refused)', (x) => fmt(x.failed[cls]));
    row('started on a region at or over capacity', (x) => fmt(x.startedOverCapacity[cls]));
    row('**unplaced demand** (failed + started over capacity)', (x) => fmt(x.failed[cls] + x.startedOverCapacity[cls]));
    row('attempts refused', (x) => fmt(x.refusedAttempts[cls]));
    row(`added distance of the event regions' clients, mean / p95 (km)`, (x) => `${fmt(x.addedKm.mean[cls])} / ${fmt(x.addedKm.p95[cls])}`);
  };
  L.push('', '## Results');
  classTable(0, 'TTL-honouring traffic');
  classTable(1, 'The rest (TTL-ignoring clients, clamping resolvers)');
  L.push('', '### Whole fleet', '', ...header(''));
  L.push(`| DNS answers computed (resolver cache misses) | ${results.map((x) => fmt(x.dnsQueries)).join(' | ')} |`);
  L.push(`| GOAWAYs sent by gateways (drain hook) | ${results.map((x) => (x.policy === 'gridsteer' ? fmt(x.goaways) : '–')).join(' | ')} |`);
  L.push(`| plans made | ${results.map((x) => (x.policy === 'gridsteer' ? fmt(x.plans) : '–')).join(' | ')} |`);

  L.push('', '### Peak load ÷ capacity per region (time over capacity)', '', ...header('region'));
  for (let r = 0; r < R; r++) {
    const cell = (x: PolicyResult) => {
      const u = x.peakUtil[r]!;
      const s = pct(u);
      return u > 1 ? `**${s}** (${formatDuration(x.overCapacityMs[r]!)})` : s;
    };
    L.push(`| ${w.regions[r]!.id} | ${results.map(cell).join(' | ')} |`);
  }

  L.push('', '## Targets (GridSteer)', '');
  for (const t of evaluateTargets(rep)) L.push(`- **${t.status}**: ${t.what} — ${t.detail}`);
  if (o.chart) {
    L.push('', '## Traffic share per region', '', `![Share of sessions started per region, per minute, one panel per policy](${o.chart})`, '');
    L.push('Each panel stacks, per minute, the share of sessions that started on each region; grey is sessions that failed (every attempt refused). The dashed line is the load on the event region as a share of its normal capacity. Framed in red: the event (T to E); dotted red: the announcement.');
  }
  L.push('');
  return L.join('\n');
}

/** One line per policy for a terminal: the headline figures. */
export function summaryLines(rep: SimReport): string[] {
  return rep.results.map((x) => {
    const sent = rep.events.map((e) => `${fmt(x.sentToEventRegion[e.idx]![0])}/${fmt(x.sentToEventRegion[e.idx]![1])}`).join(',');
    return `${POLICY_TITLES[x.policy as PolicyName].padEnd(17)} sent-to-event-region ${sent}  cut ${fmt(x.cut[0])}/${fmt(x.cut[1])}  failed ${fmt(x.failed[0])}/${fmt(x.failed[1])}  over-capacity starts ${fmt(x.startedOverCapacity[0])}/${fmt(x.startedOverCapacity[1])}  peak ${pct(Math.max(...x.peakUtil))}  (TTL-honouring/rest)`;
  });
}
