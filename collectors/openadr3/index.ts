/**
 * openadr3 — a VEN (virtual end node) of OpenADR 3.0.1 and 3.1: polls a VTN's /programs and
 * /events with an OAuth2 client-credentials token and emits one `grid.event` fact per event
 * interval (current or future) and recognised payload, for every configured region the event
 * is for (by program name and targets). SIMPLE → `simple` with its level; IMPORT_CAPACITY_LIMIT
 * and DISPATCH_SETPOINT → `import-capacity-limit` / `dispatch-setpoint` with `limitW` (units
 * from the payloadDescriptors: W, KW, MW, GW); ALERT_GRID_EMERGENCY → `grid-emergency`. Facts
 * only: what an event means for traffic is gridPolicy's.
 *
 * A poller: it runs on one node at a time, under the store's lease (start is called on the
 * leader). Optionally it listens for subscription notifications; a notification only makes it
 * poll now.
 *
 * Contract:
 * - Every `pollMs` (first poll at once; a notification brings the next one forward, at most one
 *   every 250 ms) one poll: GET /programs and GET /events (the targets query parameters of
 *   the configured version; skip/limit paging), bounded: `timeoutMs` per request, 4 MiB per
 *   answer, `maxEvents` events, `maxIntervalsPerEvent` intervals per event. Polls never overlap.
 * - A fact is emitted when it is new or its value (or the event's modification time) changed,
 *   with observedAt = now and expiresAt = max(interval end, now + 3 × pollMs).
 * - After a complete poll, a fact emitted earlier that the VTN no longer gives (event gone,
 *   interval removed, no longer targeted at the region) and whose interval has not ended is
 *   emitted once more with `cancelled: true`. Not after a poll that hit a bound (truncated),
 *   and not for an event that was listed but could not be (fully) read.
 * - A failed poll (token endpoint down or refusing, 401 after one fresh token, other statuses,
 *   garbage or truncated JSON, wrong shapes, too large) emits nothing; the earlier facts stay
 *   until their own expiry. Logged once per change of state (ok → failing: warn; failing → ok:
 *   info), counted in the instance's counters (`openadr3Counters`).
 * - Nothing throws out of a timer or handler; stop() clears the timer, aborts the requests in
 *   flight, waits for the poll in progress and closes the listener. Nothing is emitted after stop.
 */
import { DurationSetting } from '../../gslb/model/domains.js';
import { Type, type Static } from '@sinclair/typebox';
import type { Collector, CollectorContext, Signal } from '../types.js';
import { MAX_EVENT_MS } from '../../gslb/model/signals.js';
import type { KindValue } from '../../gslb/model/kinds/index.js';
import { OPENADR3_ERRORS, Openadr3Error, TokenSource, VtnClient, openadr3Counters, openadr3Totals, type Openadr3Stats } from './client.js';
import { eventQueries, matchesRegion, readEvent, readProgramNames, type ProgramInfo } from './parse.js';
import { startWebhook, type Webhook } from './webhook.js';
import { ReceiverTlsSchema } from '../kit/server.js';
import { countersFor } from '../kit/counters.js';

type GridEvent = KindValue<'grid.event'>;

export { openadr3Counters, openadr3Totals, OPENADR3_ERRORS, Openadr3Error };

const strict = { additionalProperties: false } as const;
const UrlString = (description: string) => Type.String({ pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[^@/\\s]+(/\\S*)?$', maxLength: 2048, description });
const Name = (description: string) => Type.String({ minLength: 1, maxLength: 128, description });

export const Openadr3TargetSchema = Type.Object(
  {
    type: Name('the target type, e.g. RESOURCE_NAME, GROUP, VEN_NAME, POWER_SERVICE_LOCATION'),
    values: Type.Array(Name('a value'), { minItems: 1, maxItems: 1000, description: 'the values of that type that mean this region' }),
  },
  { ...strict, description: 'an OpenADR 3.0.1 target (a valuesMap)' },
);

export const Openadr3RegionSchema = Type.Object(
  {
    region: Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,62}$', description: 'the region the matching events are about (a regions/<id>.yaml)' }),
    venName: Type.Optional(Name('this region\'s VEN name at the VTN: matches 3.0.1 VEN_NAME targets and 3.1 string targets')),
    targets: Type.Optional(
      Type.Union([Type.Array(Openadr3TargetSchema, { minItems: 1, maxItems: 100 }), Type.Array(Name('a 3.1 target'), { minItems: 1, maxItems: 1000 })], {
        description: 'the targets that mean this region: 3.0.1 valuesMaps [{type, values}] or 3.1 strings; an event is for the region when one of its targets shares a value (and, both typed, the type)',
      }),
    ),
    programs: Type.Optional(Type.Array(Name('a programName'), { minItems: 1, maxItems: 100, description: 'only events of these programs (by programName); default: every program' })),
  },
  { ...strict, description: 'which VTN events are about one region' },
);

export const Openadr3ConfigSchema = Type.Object(
  {
    vtn: Type.Object(
      {
        url: UrlString('the VTN base URL (the definitions\' server URL, e.g. https://vtn.example.com/openadr3/3.0.1); /programs and /events are below it'),
        tokenUrl: Type.Optional(UrlString('the OAuth2 token endpoint; default: what GET <url>/auth/server names (3.1), else <url>/auth/token')),
        clientId: Type.String({ minLength: 1, maxLength: 4096, description: 'OAuth2 client id' }),
        clientSecret: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: 'OAuth2 client secret (prefer clientSecretFile)' })),
        clientSecretFile: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: 'a file holding the client secret (read at each token request, trimmed)' })),
        scope: Type.Optional(Type.String({ maxLength: 4096, description: 'OAuth2 scope to ask for, e.g. read_all (3.0.1) or read_targets (3.1)' })),
        clientAuth: Type.Union([Type.Literal('body'), Type.Literal('basic')], {
          default: 'body',
          description: 'how the token request carries the credentials: body (client_id/client_secret form fields, as the OpenADR definitions show) or basic (HTTP Basic, RFC 6749 §2.3.1)',
        }),
        version: Type.Union([Type.Literal('3.0.1'), Type.Literal('3.1')], {
          default: '3.0.1',
          description: 'how to spell target filters in GET /events (3.0.1 targetType/targetValues, 3.1 targets); answers and notifications are read in either spelling',
        }),
        filterQueries: Type.Boolean({ default: true, description: 'ask the VTN for the regions\' targets only (false: fetch every event and match here)' }),
      },
      { ...strict, description: 'the VTN and this VEN\'s credentials' },
    ),
    pollMs: DurationSetting('time between polls, ms', 30000, 1000),
    timeoutMs: Type.Integer({ minimum: 100, maximum: 60000, default: 10000, description: 'time one request may take (connect, headers and body), ms' }),
    maxEvents: Type.Integer({ minimum: 1, maximum: 10000, default: 1000, description: 'most events read per poll (over all pages and queries)' }),
    maxIntervalsPerEvent: Type.Integer({ minimum: 1, maximum: 10000, default: 500, description: 'most intervals read per event' }),
    openEndedMs: DurationSetting('an open-ended interval (P9999Y, PT0S or no duration) is given this length, extended in such steps while the VTN lists it', 86400000, 60000, MAX_EVENT_MS),
    unitsWhenMissing: Type.Optional(
      Type.Union([Type.Literal('W'), Type.Literal('KW'), Type.Literal('MW')], { description: 'units of an IMPORT_CAPACITY_LIMIT or DISPATCH_SETPOINT whose event and program give none; default: such payloads are refused' }),
    ),
    regions: Type.Array(Openadr3RegionSchema, { minItems: 1, maxItems: 64, description: 'which events are about which region' }),
    webhook: Type.Optional(
      Type.Object(
        {
          listen: Type.String({ pattern: '^(\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9.-]+):[0-9]{1,5}$', description: 'host:port for the notification listener (on the leader), e.g. 0.0.0.0:8443' }),
          path: Type.String({ pattern: '^/[A-Za-z0-9._~/-]*$', maxLength: 200, default: '/openadr3/callback', description: 'the callback path of the subscription\'s callbackUrl' }),
          bearerToken: Type.String({ minLength: 8, maxLength: 4096, description: 'the subscription\'s bearerToken: notifications must carry it as Authorization: Bearer' }),
          tls: Type.Optional(ReceiverTlsSchema),
        },
        { ...strict, description: 'optional: listen for subscription notifications; each makes the poller poll now' },
      ),
    ),
  },
  { ...strict, description: 'an OpenADR 3 VEN: VTN events → grid.event facts' },
);

export type Openadr3Config = Static<typeof Openadr3ConfigSchema>;
/** The brief's name for the config type. */
export type OpenAdr3Config = Openadr3Config;

/** Most programs read per poll. */
const MAX_PROGRAMS = 1000;
/** Most facts (region × interval × payload) taken from one poll; past it the poll counts as truncated. */
export const MAX_FACTS = 10_000;
/** Least time between polls brought forward by notifications, ms. */
export const MIN_NOTIFY_GAP_MS = 250;

/** `openadr3/<host[:port]>` of the VTN URL, within the signal source pattern (IPv6 brackets dropped). */
export function sourceOf(url: string): string {
  const host = new URL(url).host.replace(/[^A-Za-z0-9._:@-]/g, '');
  return `openadr3/${host}`.slice(0, 200);
}

/** A fact emitted and not yet ended or cancelled. */
interface Live {
  region: string;
  eventId: string;
  value: GridEvent;
  /** The value and the event's modification stamp: a change re-emits. */
  sig: string;
}

/**
 * One VEN's polling state: what it emitted (to tell changes and cancellations), when it first
 * saw events, which problems it has logged. `pollOnce` is one complete poll; the collector's
 * timer calls it, tests may too. Never throws.
 */
export class Openadr3Poller {
  readonly source: string;
  private readonly client: VtnClient;
  private readonly queries: string[];
  private live = new Map<string, Live>();
  private firstSeen = new Map<string, number>();
  private logged = new Set<string>();
  /** 'init' before the first poll, 'ok', or the failing error code. */
  private state = 'init';
  private truncatedLogged = '';
  private stopped = false;
  /** This instance's counters (from ctx.counters: the host exports them); shared with its token source and webhook. */
  readonly stats: Openadr3Stats;

  constructor(private readonly ctx: CollectorContext<Openadr3Config>) {
    this.stats = countersFor(ctx, openadr3Counters);
    const cfg = ctx.config;
    const base = cfg.vtn.url.replace(/\/+$/, '');
    this.source = sourceOf(base);
    const tokens = new TokenSource(
      {
        base,
        tokenUrl: cfg.vtn.tokenUrl,
        clientId: cfg.vtn.clientId,
        clientSecret: cfg.vtn.clientSecret,
        clientSecretFile: cfg.vtn.clientSecretFile,
        scope: cfg.vtn.scope,
        clientAuth: cfg.vtn.clientAuth ?? 'body',
        timeoutMs: cfg.timeoutMs,
      },
      () => ctx.now(),
      this.stats,
    );
    this.client = new VtnClient(base, tokens, cfg.timeoutMs);
    this.queries = eventQueries(cfg.regions, cfg.vtn.version ?? '3.0.1', cfg.vtn.filterQueries ?? true);
  }

  /** No more emits from this poller (a poll in flight finishes silently). */
  stop(): void {
    this.stopped = true;
  }

  /** One poll: fetch, map, emit changes and cancellations. Resolves true when the poll succeeded. */
  async pollOnce(signal: AbortSignal): Promise<boolean> {
    const cfg = this.ctx.config;
    this.stats.polls++;
    const names = new Map<string, ProgramInfo>();
    const events: Record<string, unknown>[] = [];
    let truncated = false;
    try {
      const progs = await this.client.getAll('/programs', '', MAX_PROGRAMS, signal);
      readProgramNames(progs.items, names);
      truncated = progs.truncated;
      const ids = new Set<string>();
      for (const q of this.queries) {
        const r = await this.client.getAll('/events', q, cfg.maxEvents, signal);
        truncated ||= r.truncated;
        for (const it of r.items) {
          const id = typeof it.id === 'string' ? it.id : null;
          if (id !== null && ids.has(id)) continue;
          if (events.length >= cfg.maxEvents) {
            truncated = true;
            break;
          }
          if (id !== null) ids.add(id);
          events.push(it);
        }
      }
    } catch (e) {
      if (signal.aborted || this.stopped) return false;
      this.failed(e);
      return false;
    }
    if (signal.aborted || this.stopped) return false;
    this.succeeded(names.size, events.length);
    this.ingest(names, events, truncated);
    return true;
  }

  /**
   * Maps one poll's programs and events to facts and emits the changes and cancellations (the
   * second half of pollOnce; tests call it with payloads of their own). `truncated`: the poll
   * hit a bound, so nothing missing counts as cancelled. Never throws: an event that cannot be
   * read is counted (`badEvents`) and logged with what is wrong, by field.
   */
  ingest(names: ReadonlyMap<string, ProgramInfo>, events: readonly Record<string, unknown>[], truncated: boolean): void {
    const cfg = this.ctx.config;
    const now = this.ctx.now();

    const produced = new Map<string, Live>();
    const incomplete = new Set<string>();
    const problemsNow = new Set<string>();
    const firstSeen = new Map<string, number>();
    let tooMany = `more than maxEvents (${cfg.maxEvents}) events or ${MAX_PROGRAMS} programs`;
    for (const raw of events) {
      if (produced.size >= MAX_FACTS) {
        truncated = true;
        tooMany = `more than ${MAX_FACTS} facts`;
        break;
      }
      this.stats.events++;
      const id = typeof raw.id === 'string' ? raw.id : undefined;
      let first: number | undefined;
      if (id !== undefined) {
        first = this.firstSeen.get(id) ?? now;
        firstSeen.set(id, first);
      }
      const program = typeof raw.programID === 'string' ? names.get(raw.programID) : undefined;
      let r: ReturnType<typeof readEvent>;
      try {
        r = readEvent(raw, program, {
          now,
          maxIntervals: cfg.maxIntervalsPerEvent,
          openEndedMs: cfg.openEndedMs,
          ...(cfg.unitsWhenMissing ? { unitsWhenMissing: cfg.unitsWhenMissing } : {}),
          ...(first !== undefined ? { firstSeen: first } : {}),
        });
      } catch (e) {
        // Defensive: readEvent is written not to throw on any JSON value.
        r = { ...(id !== undefined ? { id } : {}), error: `event ${id ?? '(no id)'} could not be read: ${(e as Error).message}` };
      }
      if ('error' in r) {
        this.stats.badEvents++;
        if (r.id !== undefined) incomplete.add(r.id);
        this.problem(r.error, problemsNow);
        continue;
      }
      if (r.incomplete) {
        this.stats.badEvents++;
        incomplete.add(r.id);
      }
      for (const p of r.problems) this.problem(p, problemsNow);
      for (const region of cfg.regions) {
        if (!matchesRegion(region, program?.name, r.targets)) continue;
        for (const f of r.facts) {
          if (produced.size >= MAX_FACTS) {
            truncated = true;
            tooMany = `more than ${MAX_FACTS} facts`;
            break;
          }
          produced.set(`${region.region}\u0000${f.id}`, { region: region.region, eventId: r.id, value: f, sig: `${JSON.stringify(f)}|${r.version}` });
        }
      }
    }
    this.firstSeen = firstSeen;
    this.logged = problemsNow;

    for (const [k, f] of produced) {
      const prev = this.live.get(k);
      if (prev && prev.sig === f.sig) continue;
      this.emit(f.region, f.value, now);
      this.live.set(k, f);
    }
    if (truncated) {
      this.stats.truncatedPolls++;
      if (this.truncatedLogged !== tooMany) {
        this.truncatedLogged = tooMany;
        this.ctx.log.warn({ maxEvents: cfg.maxEvents }, `collectors/openadr3: the VTN gives ${tooMany}; the rest is not read and no cancellations are inferred while this lasts`);
      }
    } else if (this.truncatedLogged !== '') {
      this.truncatedLogged = '';
      this.ctx.log.info('collectors/openadr3: the VTN\'s events fit the bounds again');
    }
    for (const [k, prev] of this.live) {
      if (produced.has(k)) continue;
      if (prev.value.end <= now) {
        this.live.delete(k);
        continue;
      }
      if (truncated || incomplete.has(prev.eventId)) continue;
      this.live.delete(k);
      this.emit(prev.region, { ...prev.value, cancelled: true }, now);
    }
  }

  private emit(region: string, value: GridEvent, now: number): void {
    if (this.stopped || this.ctx.signal.aborted) return;
    const s: Signal<GridEvent> = {
      region,
      kind: 'grid.event',
      source: this.source,
      key: value.id,
      observedAt: now,
      expiresAt: Math.max(value.end, now + 3 * this.ctx.config.pollMs),
      value,
    };
    this.stats.signals++;
    if (value.cancelled) this.stats.cancelled++;
    this.ctx.emit(s);
  }

  private problem(msg: string, now: Set<string>): void {
    if (now.size >= 10_000) return;
    now.add(msg);
    if (!this.logged.has(msg)) this.ctx.log.warn(`collectors/openadr3: ${msg}`);
  }

  private failed(e: unknown): void {
    this.stats.pollFailures++;
    const code = e instanceof Openadr3Error ? e.code : 'OADR3_ERR_INTERNAL';
    if (this.state === code) return;
    this.state = code;
    const msg = e instanceof Openadr3Error ? e.message : `collectors/openadr3: poll failed: ${(e as Error)?.message ?? String(e)}`;
    this.ctx.log.warn({ code, url: this.ctx.config.vtn.url }, `${msg}; nothing is emitted until a poll succeeds (earlier facts stay until their expiry)`);
  }

  private succeeded(programs: number, events: number): void {
    if (this.state === 'ok') return;
    const was = this.state;
    this.state = 'ok';
    this.ctx.log.info(
      { url: this.ctx.config.vtn.url, programs, events },
      was === 'init' ? `collectors/openadr3: polling ${this.ctx.config.vtn.url} (${programs} programs, ${events} events)` : `collectors/openadr3: the VTN answers again (${programs} programs, ${events} events)`,
    );
  }
}

export const openadr3: Collector<OpenAdr3Config> = {
  counters: openadr3Counters,
  errors: [Openadr3Error],
  name: 'openadr3',
  configSchema: Openadr3ConfigSchema,
  mode: 'poller',
  sources: 'openadr3/',
  /** What it emits, for the collector table of collectors/README.md. */
  summary: '`grid.event` from an OpenADR 3.0.1 / 3.1 VTN (SIMPLE levels, capacity limits, dispatch setpoints, grid emergencies), with a webhook for notifications',
  async start(ctx: CollectorContext<OpenAdr3Config>) {
    const cfg = ctx.config;
    if (cfg.vtn.clientSecret === undefined && cfg.vtn.clientSecretFile === undefined) {
      throw new Openadr3Error('OADR3_ERR_CONFIG', 'vtn: set clientSecret or clientSecretFile');
    }
    const known = new Set(ctx.fleet().map((r) => r.id));
    const unknown = cfg.regions.map((r) => r.region).filter((r) => !known.has(r));
    if (unknown.length > 0) ctx.log.warn({ regions: unknown }, `collectors/openadr3: regions ${unknown.join(', ')} are not in the fleet; their facts will be refused`);

    const poller = new Openadr3Poller(ctx);
    const abort = new AbortController();
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    let running: Promise<void> | null = null;
    let again = false;
    let lastStart = -Infinity;

    const schedule = (delay: number) => {
      if (stopped) return;
      clearTimeout(timer);
      timer = setTimeout(tick, Math.max(0, delay));
    };
    const tick = () => {
      if (stopped) return;
      if (running) {
        again = true;
        return;
      }
      lastStart = performance.now();
      running = poller
        .pollOnce(abort.signal)
        .then(
          () => undefined,
          (e: unknown) => ctx.log.error({ err: (e as Error)?.message }, 'collectors/openadr3: poll failed unexpectedly'),
        )
        .finally(() => {
          running = null;
          if (again) {
            again = false;
            schedule(MIN_NOTIFY_GAP_MS - (performance.now() - lastStart));
          } else schedule(cfg.pollMs);
        });
    };
    const pollSoon = () => {
      if (stopped) return;
      if (running) again = true;
      else schedule(MIN_NOTIFY_GAP_MS - (performance.now() - lastStart));
    };

    let webhook: Webhook | null = null;
    if (cfg.webhook) {
      try {
        webhook = await startWebhook({ listen: cfg.webhook.listen, path: cfg.webhook.path ?? '/openadr3/callback', bearerToken: cfg.webhook.bearerToken, tls: cfg.webhook.tls }, ctx.log, pollSoon, poller.stats);
        ctx.log.info({ address: webhook.address, port: webhook.port, path: cfg.webhook.path }, `collectors/openadr3: webhook listening on ${webhook.address}:${webhook.port}${cfg.webhook.path}`);
      } catch (e) {
        ctx.log.error({ err: (e as Error).message }, `${(e as Error).message}; polling only`);
      }
    }

    // One stop for both callers (the ctx abort and the host), so each waits for the same end.
    let stopping: Promise<void> | null = null;
    const stop = (): Promise<void> =>
      (stopping ??= (async () => {
        stopped = true;
        poller.stop();
        clearTimeout(timer);
        abort.abort();
        await running;
        await webhook?.close();
      })());
    ctx.signal.addEventListener('abort', () => void stop(), { once: true });
    tick();
    return stop;
  },
};
