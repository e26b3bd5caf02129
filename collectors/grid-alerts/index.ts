/**
 * grid-alerts — polls grid operators' public condition feeds (ERCOT, CAISO, PJM, AESO; one
 * adapter each, see adapters.ts) and emits, per feed and configured region, one `grid.alert`
 * fact: the alert level 0–3 and type the operator has declared for its zone. A poller: it
 * runs on one node at a time, under the store's lease.
 *
 * Contract:
 * - Every `pollMs` (first round at once) each feed is fetched with GET (a CAISO feed's
 *   `noticesUrl` too), at most `timeoutMs` (capped at `pollMs`) for connect, headers and body
 *   together and at most 4 MiB of body; a round still running when the next is due makes that
 *   next round skipped, never doubled.
 * - On success: for each of the feed's regions that the fleet knows, one signal
 *   `{kind: 'grid.alert', source: 'grid-alerts/<iso>', key: <zone>, observedAt: now,
 *   expiresAt: now + 3 × pollMs, value}`, zone being ERCOT, CAISO, PJM or AESO.
 * - On failure (refused, timed out, HTTP status not 2xx, body too large, a shape the adapter
 *   does not expect, a stale AESO history) nothing is emitted for the feed: its last facts
 *   expire on their own. Failures are logged once per change of state (ok → failing, or a
 *   different failure code: warn; failing → ok: info) and counted in the instance's counters (`gridAlertsCounters`).
 * - Facts only: what the operator said, normalised. What a level means for traffic is
 *   gridPolicy's (by default `policy.grid.trust` gives `grid-alerts` cap trust only).
 * - Nothing throws out of the timer; stop() clears it, aborts requests in flight and resolves
 *   once the round in progress has ended. No fact is emitted after stop().
 */
import { DurationSetting } from '../../gslb/model/domains.js';
import { Type, type Static } from '@sinclair/typebox';
import { boundedRequest, FetchError, showUrl } from '../kit/http.js';
import { countersFor, defineCounters } from '../kit/counters.js';
import type { Collector, CollectorContext } from '../types.js';
import { FeedError, readFeed, ZONES, type FeedErrorCode, type Iso, type Reading } from './adapters.js';

export { FEED_ERROR_CODES, FeedError, readAeso, readCaiso, readErcot, readFeed, readPjm, ZONES } from './adapters.js';

const strict = { additionalProperties: false } as const;
const REGION = '^[a-z0-9][a-z0-9-]{0,62}$';
const Url = (description: string) => Type.String({ pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[^@/]+(/|$)', maxLength: 2048, description });

export const GridAlertsFeedSchema = Type.Object(
  {
    iso: Type.Union([Type.Literal('ercot'), Type.Literal('caiso'), Type.Literal('pjm'), Type.Literal('aeso')], {
      description: 'which adapter reads the feed: ercot, caiso, pjm or aeso (the zone of its facts: ERCOT, CAISO, PJM, AESO)',
    }),
    url: Url(
      'the feed, http: or https: without user:password@ — ercot: the grid conditions dashboard JSON (daily-prc.json); caiso: the outlook stats JSON (stats.txt) or a notices list; pjm: emergency procedures postings JSON; aeso: the grid alert RSS feed',
    ),
    noticesUrl: Type.Optional(Url('caiso only: an EEA / Flex Alert notices list (JSON or RSS) read together with url into one fact')),
    areas: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
        minItems: 1,
        maxItems: 100,
        description: 'pjm only: count only postings for these PJM regions (e.g. PJM-RTO, Mid-Atlantic, Dominion; case-insensitive); postings that name no region always count. Default: every posting',
      }),
    ),
    regions: Type.Array(Type.String({ pattern: REGION }), {
      minItems: 1,
      maxItems: 1000,
      uniqueItems: true,
      description: 'the regions (regions/<id>.yaml) in this ISO zone: each gets the zone\'s fact',
    }),
  },
  { ...strict, description: 'one ISO feed and the regions in its zone' },
);

export const GridAlertsConfigSchema = Type.Object(
  {
    pollMs: DurationSetting('time between polls, ms (keep public ISO sites at one poll a minute or slower); facts expire after 3 × pollMs', 60000, 100),
    timeoutMs: Type.Integer({ minimum: 100, maximum: 120000, default: 10000, description: 'time one fetch may take (connect, headers and body), ms; at most pollMs is used' }),
    alertMaxAgeMs: Type.Integer({
      minimum: 60000,
      default: 172800000,
      description: 'aeso: an alert with no later "ended" item is not trusted beyond this age (ms, default 48 h): the feed counts as failing, no fact is emitted',
    }),
    feeds: Type.Array(GridAlertsFeedSchema, { minItems: 1, maxItems: 100, description: 'the feeds to poll, one adapter each' }),
  },
  { ...strict, description: 'grid operators\' alert feeds (ERCOT, CAISO, PJM, AESO); emits grid.alert' },
);

export type GridAlertsConfig = Static<typeof GridAlertsConfigSchema>;
export type GridAlertsFeed = Static<typeof GridAlertsFeedSchema>;

/** Most body bytes read from one URL. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;
/** Feeds fetched at once. */
const CONCURRENCY = 4;
const ACCEPT = 'application/json, application/rss+xml;q=0.9, application/xml;q=0.9, text/plain;q=0.8, */*;q=0.1';
/** Distinct ignored notice labels remembered (each logged once). */
const IGNORED_MEMORY = 200;

/**
 * Counters of one running instance (monotonic, never reset):
 * feed polls attempted, failed polls (all codes, and per code), signals emitted, notices
 * skipped as of kinds not mapped, and signals not emitted because the fleet has no such region.
 * A poll cut short by stop() counts in none of them.
 */
export const gridAlertsCounters = defineCounters({
  polls: 0,
  failures: 0,
  failuresByCode: { GRID_ALERTS_ERR_FETCH: 0, GRID_ALERTS_ERR_TOO_LARGE: 0, GRID_ALERTS_ERR_PARSE: 0, GRID_ALERTS_ERR_SHAPE: 0, GRID_ALERTS_ERR_STALE: 0 } as Record<FeedErrorCode, number>,
  signals: 0,
  ignoredNotices: 0,
  unknownRegions: 0,
});
/** Sums over every instance in this process (collectors/kit/counters.ts): tests and diagnostics only. */
export const gridAlertsTotals = gridAlertsCounters.total;

/**
 * GETs `url` and returns its body as UTF-8 text. Throws FeedError GRID_ALERTS_ERR_FETCH
 * (refused, timeout, status not 2xx after redirects, cut short, stopped) or
 * GRID_ALERTS_ERR_TOO_LARGE (more than `maxBytes`, declared or read).
 */
export async function fetchText(url: string, timeoutMs: number, maxBytes: number, stop: AbortSignal): Promise<string> {
  const shown = showUrl(url);
  let res: { status: number; text: string };
  try {
    res = await boundedRequest({ url, headers: { accept: ACCEPT, 'user-agent': 'gridsteer-grid-alerts' }, timeoutMs, maxBytes, stop, redirect: 'follow' });
  } catch (e) {
    const code = e instanceof FetchError && e.kind === 'too-large' ? 'GRID_ALERTS_ERR_TOO_LARGE' : 'GRID_ALERTS_ERR_FETCH';
    throw new FeedError(code, `${shown}: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (res.status < 200 || res.status >= 300) throw new FeedError('GRID_ALERTS_ERR_FETCH', `${shown}: HTTP ${res.status}`);
  return res.text;
}

/**
 * The checks the schema cannot state: `noticesUrl` belongs to caiso feeds, `areas` to pjm
 * feeds, and no region gets facts from two feeds of one ISO (they would overwrite each other:
 * same source and key). Returns the problems, each naming its path.
 */
export function configProblems(cfg: GridAlertsConfig): string[] {
  const out: string[] = [];
  const seen = new Map<string, number>();
  cfg.feeds.forEach((f, i) => {
    if (f.noticesUrl !== undefined && f.iso !== 'caiso') out.push(`feeds[${i}].noticesUrl: only a caiso feed reads a notices list; remove it`);
    if (f.areas !== undefined && f.iso !== 'pjm') out.push(`feeds[${i}].areas: only a pjm feed filters postings by region; remove it`);
    for (const r of f.regions) {
      const k = `${f.iso} ${r}`;
      const j = seen.get(k);
      if (j !== undefined) out.push(`feeds[${i}].regions: ${r} already gets ${f.iso} facts from feeds[${j}]; a region takes one feed per ISO`);
      else seen.set(k, i);
    }
  });
  return out;
}

/** One configured feed and what this run remembers of it. */
interface FeedRun {
  feed: GridAlertsFeed;
  index: number;
  shown: string;
  source: string;
  zone: string;
  /** The failure code since the last change of state; null = ok (the first failure is logged). */
  failing: FeedErrorCode | null;
  /** "type level" of the last fact, to log changes once; null before the first. */
  last: string | null;
}

export const gridAlerts: Collector<GridAlertsConfig> = {
  counters: gridAlertsCounters,
  errors: [FeedError],
  name: 'grid-alerts',
  configSchema: GridAlertsConfigSchema,
  mode: 'poller',
  sources: 'grid-alerts/',
  /** What it emits, for the collector table of collectors/README.md. */
  summary: '`grid.alert` from ERCOT, CAISO, PJM and AESO condition feeds (unofficial: trusted to cap only by default)',
  async start(ctx: CollectorContext<GridAlertsConfig>) {
    const cfg = ctx.config;
    const stats = countersFor(ctx, gridAlertsCounters);
    const problems = configProblems(cfg);
    if (problems.length > 0) throw new Error(`collectors/grid-alerts: the config is refused: ${problems.join('; ')}`);
    const timeoutMs = Math.min(cfg.timeoutMs, cfg.pollMs);
    const runs: FeedRun[] = cfg.feeds.map((feed, index) => ({
      feed,
      index,
      shown: showUrl(feed.url),
      source: `grid-alerts/${feed.iso}`,
      zone: ZONES[feed.iso as Iso].zone,
      failing: null,
      last: null,
    }));
    const stopAc = new AbortController();
    const onCtxAbort = () => stopAc.abort();
    if (ctx.signal.aborted) stopAc.abort();
    else ctx.signal.addEventListener('abort', onCtxAbort, { once: true });
    const unknownWarned = new Set<string>();
    const ignoredSeen = new Set<string>();

    const fail = (run: FeedRun, e: unknown) => {
      const code: FeedErrorCode = e instanceof FeedError ? e.code : 'GRID_ALERTS_ERR_PARSE';
      const msg = e instanceof FeedError ? e.message : `collectors/grid-alerts: ${run.feed.iso} ${run.shown}: ${(e as Error)?.message ?? String(e)}`;
      stats.failures++;
      stats.failuresByCode[code]++;
      if (run.failing !== code) {
        ctx.log.warn({ feed: run.index, iso: run.feed.iso, url: run.shown, code, err: msg }, `${msg} [${code}]; no ${run.zone} facts from feeds[${run.index}] until it recovers`);
        run.failing = code;
      }
    };

    const succeed = (run: FeedRun, reading: Reading, now: number) => {
      if (run.failing !== null) {
        ctx.log.info({ feed: run.index, iso: run.feed.iso, url: run.shown }, `collectors/grid-alerts: ${run.feed.iso} ${run.shown} reads again`);
        run.failing = null;
      }
      const v = reading.value;
      const summary = `${v.type} level ${v.level}`;
      if (run.last !== summary) {
        ctx.log.info(
          { feed: run.index, zone: run.zone, type: v.type, level: v.level, start: v.start, end: v.end },
          `collectors/grid-alerts: ${run.zone} says ${summary}${run.last !== null ? ` (was ${run.last})` : ''}${v.message ? `: ${v.message.slice(0, 200)}` : ''}`,
        );
        run.last = summary;
      }
      stats.ignoredNotices += reading.ignored.length;
      for (const label of reading.ignored) {
        const k = `${run.feed.iso} ${label}`;
        if (ignoredSeen.has(k) || ignoredSeen.size >= IGNORED_MEMORY) continue;
        ignoredSeen.add(k);
        ctx.log.info({ feed: run.index, iso: run.feed.iso, notice: label }, `collectors/grid-alerts: ${run.zone} notices of kind "${label}" are not mapped to an alert level; skipped`);
      }
      const fleet = new Set(ctx.fleet().map((r) => r.id));
      for (const region of run.feed.regions) {
        if (!fleet.has(region)) {
          stats.unknownRegions++;
          const k = `${run.index} ${region}`;
          if (!unknownWarned.has(k)) {
            unknownWarned.add(k);
            ctx.log.warn({ feed: run.index, region }, `collectors/grid-alerts: feeds[${run.index}].regions names ${region}, which is not a region of the fleet; no facts for it`);
          }
          continue;
        }
        if (stopAc.signal.aborted) return;
        ctx.emit({ region, kind: 'grid.alert', source: run.source, key: run.zone, observedAt: now, expiresAt: now + 3 * cfg.pollMs, value: { ...v } }); // never throws (CollectorContext)
        stats.signals++;
      }
    };

    const poll = async (run: FeedRun) => {
      if (stopAc.signal.aborted) return;
      let body: string;
      let notices: string | undefined;
      try {
        [body, notices] = await Promise.all([
          fetchText(run.feed.url, timeoutMs, MAX_BODY_BYTES, stopAc.signal),
          run.feed.noticesUrl !== undefined ? fetchText(run.feed.noticesUrl, timeoutMs, MAX_BODY_BYTES, stopAc.signal) : Promise.resolve(undefined),
        ]);
      } catch (e) {
        if (stopAc.signal.aborted) return;
        stats.polls++;
        fail(run, e);
        return;
      }
      if (stopAc.signal.aborted) return;
      stats.polls++;
      const now = ctx.now();
      let reading: Reading;
      try {
        reading = readFeed(run.feed.iso as Iso, body, notices, { now, alertMaxAgeMs: cfg.alertMaxAgeMs, ...(run.feed.areas ? { areas: run.feed.areas } : {}) });
      } catch (e) {
        fail(run, e);
        return;
      }
      succeed(run, reading, now);
    };

    let current: Promise<void> | null = null;
    const round = () => {
      if (current || stopAc.signal.aborted) return;
      current = (async () => {
        try {
          let next = 0;
          const worker = async () => {
            while (next < runs.length && !stopAc.signal.aborted) {
              const run = runs[next++]!;
              await poll(run).catch((e: unknown) => ctx.log.warn({ err: (e as Error)?.message }, 'collectors/grid-alerts: a poll failed unexpectedly'));
            }
          };
          await Promise.all(Array.from({ length: Math.min(CONCURRENCY, runs.length) }, worker));
        } finally {
          current = null;
        }
      })();
    };
    round();
    const timer = setInterval(round, cfg.pollMs);
    return async () => {
      clearInterval(timer);
      stopAc.abort();
      ctx.signal.removeEventListener('abort', onCtxAbort);
      await current;
    };
  },
};
