/**
 * mqtt — behind-the-meter site telemetry over MQTT (Sparkplug B edge nodes and devices, and
 * plain JSON topics) → one `power.budget` fact per site: grid import limit, on-site
 * generation, storage energy and discharge power, site draw. A poller: one long-lived broker
 * subscription, run on one node at a time under the store's lease.
 *
 * Contract:
 * - start() connects in the background and resolves at once; mqtt.js reconnects every
 *   `broker.reconnectMs` (also after a refused CONNECT: a bad password is retried and logged
 *   once). Every (re)connection subscribes again (clean session, QoS 1).
 * - A message that sets a mapped value emits the site's power.budget when the budget
 *   changed, or when the last one was emitted expireMs / 4 ago or more (a renewal). observedAt
 *   is the payload's timestamp when sane (≤ now + 5 s and > now − expireMs), else now, and never
 *   earlier than the site's previous observedAt; expiresAt = observedAt + expireMs.
 * - Sparkplug: aliases and datatypes are learned from NBIRTH/DBIRTH; NDATA/DDATA before a
 *   BIRTH, and aliases no BIRTH declared, are ignored and counted. NDEATH (whose bdSeq matches
 *   the NBIRTH's) and DDEATH make the sites' facts unknown: nothing more is emitted for them
 *   until the next BIRTH, and their last power.budget expires on its own. With `sparkplugHold`
 *   (default) a born site's budget is renewed every expireMs / 4 while the broker connection
 *   is up: report by exception does not resend unchanged values, and NDEATH (the edge node's
 *   MQTT will) says when they stop being true. A DEATH whose payload cannot be read is still
 *   a death; a BIRTH that cannot be read ends the entity's session.
 * - A retained message is used only when its own timestamp is sane (else its age is unknown).
 * - A refused message (too large, malformed protobuf, not a JSON object, a mapped value that
 *   is not a number ≥ 0) emits nothing for the sites it concerns; it is counted in
 *   the instance's counters (`mqttCounters`) and logged once per change of a site's state (ok → failing: warn, with the
 *   error code; failing → ok: info). Broker loss and return are logged once per change; while
 *   the broker is gone nothing is emitted (the facts expire), and after it returns a site emits
 *   again on its next message (Sparkplug edge nodes send a new BIRTH after reconnecting).
 * - Nothing throws out of mqtt.js callbacks or timers; stop() (or ctx.signal) ends the
 *   connection at once; nothing is emitted afterwards. It never publishes (no rebirth
 *   requests): read-only credentials suffice.
 */
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { Type, type Static } from '@sinclair/typebox';
import mqtt, { type IClientOptions, type IPublishPacket, type MqttClient } from 'mqtt';
import type { KindValue } from '../../gslb/model/kinds/index.js';
import { MAX_WATTS } from '../../gslb/model/domains.js';
import type { Collector, CollectorContext, Signal } from '../types.js';
import {
  applyUpdate,
  budgetOf,
  FIELDS,
  MAX_PAYLOAD_BYTES,
  observedAtOf,
  parseJsonObject,
  readJson,
  ReadingError,
  scaled,
  type Clock,
  type Field,
  type Update,
  type Values,
} from './budget.js';
import { decodePayload, metricNumber, SparkplugDecodeError, type SparkplugMetric } from './sparkplug.js';
import { defineErrors } from '../kit/errors.js';
import { countersFor, defineCounters } from '../kit/counters.js';

type PowerBudget = KindValue<'power.budget'>;

const strict = { additionalProperties: false } as const;

/** A Sparkplug group, edge node or device id: no MQTT separators or wildcards. */
const SpId = (description: string) => Type.String({ minLength: 1, maxLength: 100, pattern: '^[^/+#\\u0000]+$', description });
const MetricRef = (description: string) => Type.Optional(Type.String({ minLength: 1, maxLength: 256, description }));
const Scale = (f: string) => Type.Optional(Type.Number({ description: `multiplies ${f} as received (e.g. 1000 for kW → W)` }));

export const MqttSiteSchema = Type.Object(
  {
    region: Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,62}$', description: 'the region this site powers (a regions/<id>.yaml)' }),
    sparkplug: Type.Optional(
      Type.Object(
        {
          group: SpId('the Sparkplug group id'),
          edge: SpId('the edge node id'),
          device: Type.Optional(SpId('the device id (default: the edge node\'s own metrics, NBIRTH/NDATA)')),
        },
        { ...strict, description: 'read spBv1.0/{group}/NBIRTH|NDATA|NDEATH/{edge} and, with device, DBIRTH|DDATA|DDEATH/{edge}/{device}' },
      ),
    ),
    topic: Type.Optional(
      Type.String({ minLength: 1, maxLength: 190, pattern: '^[^+#$\\u0000][^+#\\u0000]*$', description: 'a plain topic (no wildcards) whose payloads are JSON objects holding the mapped fields' }),
    ),
    timestampField: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'plain topics: the JSON field holding the message time, ms epoch or ISO 8601 (default: timestamp)' })),
    metrics: Type.Object(
      {
        importLimitW: MetricRef('the grid import limit'),
        generationW: MetricRef('on-site generation now'),
        storageWh: MetricRef('energy left in storage (SunSpec 713 WHAvail)'),
        storageMaxW: MetricRef('the storage\'s maximum discharge power'),
        socPercent: MetricRef('storage state of charge 0–100 % (SunSpec 713 SoC); needs storageCapacityWh'),
        drawW: MetricRef('the site\'s draw now'),
      },
      { ...strict, minProperties: 1, description: 'per power.budget field, the Sparkplug metric name or JSON field (or dotted path) holding it' },
    ),
    scale: Type.Optional(
      Type.Object(
        {
          importLimitW: Scale('importLimitW'),
          generationW: Scale('generationW'),
          storageWh: Scale('storageWh'),
          storageMaxW: Scale('storageMaxW'),
          socPercent: Scale('socPercent'),
          drawW: Scale('drawW'),
        },
        { ...strict, description: 'per field, a factor applied to the received number (default 1; a negative factor flips a sign convention)' },
      ),
    ),
    storageCapacityWh: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: MAX_WATTS, description: 'with metrics.socPercent: storageWh = socPercent / 100 × this' })),
  },
  { ...strict, description: 'one site: where its telemetry is published and which fields it maps' },
);

export const MqttConfigSchema = Type.Object(
  {
    broker: Type.Object(
      {
        url: Type.String({ pattern: '^[Mm][Qq][Tt][Tt][Ss]?://[^@/?#\\s]+/?$', maxLength: 300, description: 'mqtt://host:port or mqtts://host:port, without user:password@' }),
        username: Type.Optional(Type.String({ maxLength: 1024, description: 'MQTT user name' })),
        password: Type.Optional(Type.String({ maxLength: 4096, description: 'MQTT password' })),
        clientId: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'MQTT client id (default: gs-<node>-<random>, ≤ 23 characters)' })),
        caFile: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: 'mqtts: a PEM file of the CA(s) to trust instead of the system\'s' })),
        protocolVersion: Type.Union([Type.Literal(4), Type.Literal(5)], {
          default: 5,
          description: '4 = MQTT 3.1.1, 5 = MQTT 5 (then the broker is asked not to send packets above 4 MiB)',
        }),
        keepaliveS: Type.Integer({ minimum: 1, maximum: 3600, default: 30, description: 'MQTT keepalive, s' }),
        reconnectMs: Type.Integer({ minimum: 100, maximum: 600000, default: 5000, description: 'time between reconnection attempts, ms' }),
        connectTimeoutMs: Type.Integer({ minimum: 100, maximum: 120000, default: 10000, description: 'time a connection attempt may take, ms' }),
      },
      { ...strict, description: 'the MQTT broker' },
    ),
    sites: Type.Array(MqttSiteSchema, { minItems: 1, maxItems: 1000, description: 'the sites to follow' }),
    expireMs: Type.Integer({ minimum: 1000, maximum: 86_400_000, default: 60000, description: 'a power.budget expires this long after its observation, ms' }),
    sparkplugHold: Type.Boolean({
      default: true,
      description: 'Sparkplug sites: renew the last budget every expireMs / 4 while the broker connection is up and no DEATH came since the BIRTH (report by exception)',
    }),
  },
  { ...strict, description: 'site telemetry over MQTT (Sparkplug B or JSON); emits power.budget' },
);

export type MqttConfig = Static<typeof MqttConfigSchema>;
export type MqttSite = Static<typeof MqttSiteSchema>;

/**
 * Counters of one running instance (monotonic, never reset). `rejected` counts refused
 * (message, site) pairs; `malformed` and `oversize` count messages.
 */
export const mqttCounters = defineCounters({
  messages: 0,
  signals: 0,
  renewals: 0,
  unchanged: 0,
  malformed: 0,
  oversize: 0,
  rejected: 0,
  beforeBirth: 0,
  unknownAlias: 0,
  historical: 0,
  deaths: 0,
  staleDeaths: 0,
  retainedSkipped: 0,
  brokerLosses: 0,
});
/** Sums over every instance in this process (collectors/kit/counters.ts): tests and diagnostics only. */
export const mqttTotals = mqttCounters.total;

/** One configured site, resolved, and what this run remembers of it. */
interface SiteRun {
  index: number;
  site: MqttSite;
  /** For logs: `sites[2] us-va (grid/site-a/meter-1)`. */
  label: string;
  source: string;
  key: string;
  /** Source name (metric or JSON path) → the fields it feeds. */
  byName: Map<string, Field[]>;
  values: Values;
  /** The last budget emitted (JSON for comparison), when (ctx.now), and its observedAt. */
  last: { value: PowerBudget; json: string; at: number } | null;
  lastObservedAt: number;
  /** The error code it fails with (null: ok); changes are logged. */
  failing: string | null;
  clock: Clock;
  /** Sparkplug: born and heard from since this collector's last (re)connection. */
  live: boolean;
}

/** A Sparkplug edge node or device this run follows. */
interface Entity {
  /** `group/edge` or `group/edge/device`. */
  id: string;
  born: boolean;
  /** Alias → metric name and datatype, for the names the sites map. */
  aliases: Map<number, { name: string; datatype: number | undefined }>;
  /** Every alias the last BIRTH declared (to tell unmapped from unknown). */
  declared: Set<number>;
  /** Datatype per mapped name, from the last BIRTH. */
  datatypes: Map<string, number>;
  /** The names the sites map. */
  wanted: Set<string>;
  sites: SiteRun[];
  /** NBIRTH's bdSeq (nodes). */
  bdSeq?: number;
  /** Logged since the last BIRTH: data before a BIRTH, unknown alias. */
  noted: Set<string>;
}

interface Node extends Entity {
  devices: Map<string, Entity>;
}

/** `mqtt/<name>` within the signal source pattern. */
function sourceOf(name: string): string {
  return `mqtt/${name.replace(/[^A-Za-z0-9._:/@-]/g, '_')}`;
}

function entity(id: string): Entity {
  return { id, born: false, aliases: new Map(), declared: new Set(), datatypes: new Map(), wanted: new Set(), sites: [], noted: new Set() };
}

/** Error code and reason (without the module prefix) of a refused message. */
/** The mqtt collector's own code, besides READ_ERRORS (budget.ts) and PB_ERRORS (sparkplug.ts). */
export const MQTT_ERRORS = {
  MQTT_ERR_INTERNAL: 'a message was refused for a reason none of the other codes names (a bug: please report it with the log line)',
} as const;
/** Only for the registry's table of codes: the collector never throws it. */
export const MqttError = defineErrors('collectors/mqtt', MQTT_ERRORS, { name: 'MqttError' });

function refusal(e: unknown): { code: string; reason: string } {
  const strip = (m: string) => m.replace(/^collectors\/mqtt: /, '');
  if (e instanceof SparkplugDecodeError || e instanceof ReadingError) return { code: e.code, reason: strip(e.message) };
  return { code: 'MQTT_ERR_INTERNAL', reason: strip((e as Error)?.message ?? String(e)) };
}

/**
 * The subscription, routing and per-site state of one run. start() builds one; tests may
 * drive `handle` directly.
 */
export class MqttRun {
  private readonly cfg: MqttConfig;
  private readonly sites: SiteRun[] = [];
  private readonly nodes = new Map<string, Node>();
  private readonly topics = new Map<string, SiteRun[]>();
  private readonly filters = new Set<string>();
  private readonly refreshMs: number;
  private readonly url: URL;
  private readonly ca: Buffer | null = null;
  private client: MqttClient | null = null;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  /** Broker state for logs: never connected yet, up, or down after a failure or loss. */
  private broker: 'init' | 'up' | 'down' = 'init';
  private downSince = 0;
  /** Why the last connection attempt failed or the connection ended (mqtt.js 'error'). */
  private lastError: string | null = null;
  private refusedFilters = new Set<string>();
  /** This instance's counters (from ctx.counters: the host exports them). */
  readonly stats: ReturnType<typeof mqttCounters.create>;

  /** Throws `collectors/mqtt: …` when the config cannot be run as given. */
  constructor(private readonly ctx: CollectorContext<MqttConfig>) {
    this.stats = countersFor(ctx, mqttCounters);
    const cfg = (this.cfg = ctx.config);
    this.refreshMs = Math.max(250, Math.floor(cfg.expireMs / 4));
    try {
      this.url = new URL(cfg.broker.url);
    } catch {
      throw new Error(`collectors/mqtt: broker.url: ${JSON.stringify(cfg.broker.url)} is not a URL`);
    }
    if (this.url.protocol !== 'mqtt:' && this.url.protocol !== 'mqtts:') throw new Error(`collectors/mqtt: broker.url: only mqtt: and mqtts: are supported; got ${this.url.protocol}`);
    if (this.url.username || this.url.password) throw new Error('collectors/mqtt: broker.url: remove user:password@ from the URL; use broker.username and broker.password');
    if (cfg.broker.caFile !== undefined) {
      try {
        this.ca = readFileSync(cfg.broker.caFile);
      } catch (e) {
        throw new Error(`collectors/mqtt: broker.caFile: cannot read ${cfg.broker.caFile}: ${(e as Error).message}`);
      }
    }
    const seen = new Map<string, number>();
    cfg.sites.forEach((site, i) => {
      const at = `collectors/mqtt: sites[${i}]`;
      if ((site.sparkplug === undefined) === (site.topic === undefined)) throw new Error(`${at}: give either sparkplug or topic (exactly one)`);
      if (site.topic?.startsWith('spBv1.0/')) throw new Error(`${at}.topic: spBv1.0/… topics are Sparkplug B; use sparkplug: {group, edge, device}`);
      if (site.timestampField !== undefined && site.topic === undefined) throw new Error(`${at}.timestampField: only plain topics have one (Sparkplug payloads carry their timestamp)`);
      const m = site.metrics;
      if (m.socPercent !== undefined && m.storageWh !== undefined) throw new Error(`${at}.metrics: map storageWh or socPercent, not both`);
      if (m.socPercent !== undefined && site.storageCapacityWh === undefined) throw new Error(`${at}: metrics.socPercent needs storageCapacityWh (storageWh = socPercent / 100 × storageCapacityWh)`);
      if (m.socPercent === undefined && site.storageCapacityWh !== undefined) throw new Error(`${at}.storageCapacityWh: only used with metrics.socPercent; map it or remove this`);
      for (const [f, s] of Object.entries(site.scale ?? {})) {
        if (s === undefined) continue;
        if (m[f as Field] === undefined) throw new Error(`${at}.scale.${f}: ${f} is not mapped in metrics`);
        if (s === 0 || !Number.isFinite(s)) throw new Error(`${at}.scale.${f}: must be a finite number other than 0; got ${s}`);
      }
      const byName = new Map<string, Field[]>();
      for (const f of FIELDS) {
        const name = m[f];
        if (name !== undefined) byName.set(name, [...(byName.get(name) ?? []), f]);
      }
      const sp = site.sparkplug;
      const source = sourceOf(sp ? sp.group : site.topic!);
      const key = sp ? (sp.device !== undefined ? `${sp.edge}/${sp.device}` : sp.edge) : site.topic!;
      if (source.length > 200) throw new Error(`${at}: the ${sp ? 'group id' : 'topic'} is too long for a signal source (200 characters)`);
      if (key.length > 200) throw new Error(`${at}: edge/device is too long for a signal key (200 characters)`);
      const id = `${site.region}\u0000${source}\u0000${key}`;
      const dup = seen.get(id);
      if (dup !== undefined) throw new Error(`${at}: sites[${dup}] already emits the facts of region ${site.region}, source ${source} and key ${key}`);
      seen.set(id, i);
      const where = sp ? `${sp.group}/${key}` : `topic ${site.topic}`;
      const run: SiteRun = {
        index: i,
        site,
        label: `sites[${i}] ${site.region} (${where})`,
        source,
        key,
        byName,
        values: {},
        last: null,
        lastObservedAt: 0,
        failing: null,
        clock: 'ok',
        live: false,
      };
      this.sites.push(run);
      if (sp) {
        const nk = `${sp.group}/${sp.edge}`;
        let node = this.nodes.get(nk);
        if (!node) {
          node = { ...entity(nk), devices: new Map() };
          this.nodes.set(nk, node);
        }
        this.filters.add(`spBv1.0/${sp.group}/+/${sp.edge}`);
        let target: Entity = node;
        if (sp.device !== undefined) {
          let dev = node.devices.get(sp.device);
          if (!dev) {
            dev = entity(`${nk}/${sp.device}`);
            node.devices.set(sp.device, dev);
          }
          this.filters.add(`spBv1.0/${sp.group}/+/${sp.edge}/${sp.device}`);
          target = dev;
        }
        target.sites.push(run);
        for (const name of byName.keys()) target.wanted.add(name);
      } else {
        this.topics.set(site.topic!, [...(this.topics.get(site.topic!) ?? []), run]);
        this.filters.add(site.topic!);
      }
    });
  }

  /** The topic filters subscribed on every connection. */
  subscriptions(): string[] {
    return [...this.filters];
  }

  /** Connects (in the background) and starts the renewal timer. */
  start(): void {
    const b = this.cfg.broker;
    const opts: IClientOptions = {
      protocolVersion: b.protocolVersion,
      clientId: b.clientId ?? `gs-${this.ctx.node.replace(/[^A-Za-z0-9_-]/g, '').slice(0, 12)}-${randomBytes(3).toString('hex')}`,
      clean: true,
      keepalive: b.keepaliveS,
      reconnectPeriod: b.reconnectMs,
      connectTimeout: b.connectTimeoutMs,
      reconnectOnConnackError: true,
      resubscribe: false,
      queueQoSZero: false,
    };
    if (b.username !== undefined) opts.username = b.username;
    if (b.password !== undefined) opts.password = b.password;
    if (b.protocolVersion === 5) opts.properties = { maximumPacketSize: MAX_PAYLOAD_BYTES + 70 * 1024 };
    if (this.ca) opts.ca = this.ca;
    const client = mqtt.connect(this.url.href.replace(/\/$/, ''), opts);
    this.client = client;
    client.on('connect', () => this.guard('connect', () => this.onConnect()));
    client.on('close', () => this.guard('close', () => this.onClose()));
    client.on('error', (e: Error) =>
      this.guard('error', () => {
        this.lastError = e.message;
        if (this.broker !== 'up') this.noteDown();
      }),
    );
    client.on('message', (topic: string, payload: Buffer, packet: IPublishPacket) => this.guard('message', () => this.handle(topic, payload, packet.retain === true)));
    if (this.cfg.sparkplugHold && this.nodes.size > 0) this.timer = setInterval(() => this.guard('renew', () => this.renew()), Math.max(100, Math.floor(this.refreshMs / 2)));
  }

  /** Ends the connection at once; nothing is emitted afterwards. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    const c = this.client;
    if (!c) return;
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, 2000);
      c.end(true, {}, () => {
        clearTimeout(t);
        resolve();
      });
    });
    c.removeAllListeners();
    c.on('error', () => undefined);
  }

  private guard(what: string, fn: () => void): void {
    if (this.stopped) return;
    try {
      fn();
    } catch (e) {
      this.ctx.log.error({ err: (e as Error)?.message, what }, `collectors/mqtt: internal error in ${what}`);
    }
  }

  private onConnect(): void {
    const was = this.broker;
    this.broker = 'up';
    this.lastError = null;
    if (was === 'init') this.ctx.log.info({ broker: this.url.host }, `collectors/mqtt: connected to ${this.url.host}`);
    else this.ctx.log.info({ broker: this.url.host, downMs: this.ctx.now() - this.downSince }, `collectors/mqtt: connected to ${this.url.host} again; facts resume with the next message of each site`);
    const c = this.client!;
    c.subscribe(this.subscriptions(), { qos: 1 }, (err, granted) =>
      this.guard('subscribe', () => {
        if (err) {
          this.ctx.log.warn({ err: err.message }, `collectors/mqtt: subscribing failed: ${err.message}`);
          return;
        }
        this.ctx.log.debug({ filters: (granted ?? []).map((g) => g.topic) }, `collectors/mqtt: subscribed to ${granted?.length ?? 0} topic filters`);
        for (const g of granted ?? []) {
          if (g.qos === 128 || (g.qos as number) > 2) {
            if (!this.refusedFilters.has(g.topic)) this.ctx.log.warn({ filter: g.topic }, `collectors/mqtt: the broker refused the subscription to ${g.topic} (not authorised?); no facts from it`);
            this.refusedFilters.add(g.topic);
          } else if (this.refusedFilters.delete(g.topic)) {
            this.ctx.log.info({ filter: g.topic }, `collectors/mqtt: subscribed to ${g.topic}`);
          }
        }
      }),
    );
  }

  private onClose(): void {
    if (this.broker === 'up') {
      this.broker = 'down';
      this.downSince = this.ctx.now();
      this.stats.brokerLosses++;
      // What happened meanwhile is unknown: emit again only after a fresh message.
      for (const s of this.sites) {
        s.live = false;
        s.last = null;
      }
      const why = this.lastError ?? 'the connection closed';
      this.ctx.log.warn({ broker: this.url.host, reason: why }, `collectors/mqtt: lost the broker ${this.url.host} (${why}); no facts until it is back, the last ones expire`);
      this.lastError = null;
      return;
    }
    this.noteDown();
  }

  /** Not connected (yet, or again): the first failure is logged, the others (retries) only at debug. */
  private noteDown(): void {
    const why = this.lastError ?? 'the connection closed';
    if (this.broker !== 'init') {
      this.ctx.log.debug({ broker: this.url.host, reason: why }, 'collectors/mqtt: still cannot connect');
      return;
    }
    this.broker = 'down';
    this.downSince = this.ctx.now();
    this.ctx.log.warn({ broker: this.url.host, reason: why }, `collectors/mqtt: cannot connect to ${this.url.host} (${why}); retrying every ${this.cfg.broker.reconnectMs} ms`);
  }

  /** Handles one received message (never throws). `retained`: delivered from the broker's store at subscription. */
  handle(topic: string, payload: Uint8Array, retained = false): void {
    if (this.stopped) return;
    this.stats.messages++;
    try {
      if (topic.startsWith('spBv1.0/')) this.sparkplug(topic, payload, retained);
      else this.json(topic, payload, retained);
    } catch (e) {
      this.ctx.log.error({ topic, err: (e as Error)?.message }, 'collectors/mqtt: internal error while handling a message');
    }
  }

  /**
   * Counts a refused message for each site; a site going from ok to failing is logged (warn,
   * with the code), further failures only at debug until a good message.
   */
  private refuse(sites: readonly SiteRun[], e: unknown, topic: string, context = ''): void {
    const { code, reason } = refusal(e);
    for (const s of sites) {
      this.stats.rejected++;
      const fields = { site: s.index, region: s.site.region, topic, code, reason: context + reason };
      if (s.failing !== null) {
        s.failing = code;
        this.ctx.log.debug(fields, `collectors/mqtt: ${s.label}: refused again [${code}]`);
        continue;
      }
      s.failing = code;
      this.ctx.log.warn(fields, `collectors/mqtt: ${s.label}: a message was refused: ${context}${reason} [${code}]; no facts from it until a good one`);
    }
  }

  private sparkplug(topic: string, payload: Uint8Array, retained: boolean): void {
    const parts = topic.split('/');
    if (parts.length !== 4 && parts.length !== 5) return;
    const [, group, type, edge, device] = parts as [string, string, string, string, string | undefined];
    const node = this.nodes.get(`${group}/${edge}`);
    if (!node) return;
    const isDevice = parts.length === 5;
    if (isDevice !== (type[0] === 'D')) return;
    const ent: Entity | undefined = isDevice ? node.devices.get(device!) : node;
    if (!ent) return;
    const kind = type.slice(1);
    if (kind !== 'BIRTH' && kind !== 'DATA' && kind !== 'DEATH') return; // NCMD, DCMD: not ours to read
    const affected = isDevice ? ent.sites : [...node.sites, ...[...node.devices.values()].flatMap((d) => d.sites)];
    if (payload.length > MAX_PAYLOAD_BYTES) {
      this.stats.oversize++;
      if (kind === 'BIRTH') this.unborn(ent, isDevice ? null : node);
      this.refuse(affected, new ReadingError('MQTT_ERR_TOO_LARGE', `the payload is ${payload.length} bytes, more than ${MAX_PAYLOAD_BYTES}`), topic, `${type} of ${ent.id}: `);
      return;
    }
    let p;
    try {
      p = decodePayload(payload, { maxBytes: MAX_PAYLOAD_BYTES });
    } catch (e) {
      this.stats.malformed++;
      if (kind === 'DEATH') {
        // The topic says enough: the entity is gone (only an NDEATH's bdSeq check is lost).
        this.ctx.log.debug({ topic, err: (e as Error).message }, `collectors/mqtt: ${type} of ${ent.id} has an unreadable payload; taken as a death`);
        this.death(ent, isDevice ? null : node, type, []);
        return;
      }
      // A BIRTH we cannot read starts a session whose aliases we do not know.
      if (kind === 'BIRTH') this.unborn(ent, isDevice ? null : node);
      this.refuse(kind === 'DATA' ? ent.sites : affected, e, topic, `${type} of ${ent.id}: `);
      return;
    }
    if (kind === 'DEATH') {
      this.death(ent, isDevice ? null : node, type, p.metrics);
      return;
    }
    if (kind === 'BIRTH') {
      if (!isDevice) this.unborn(node, node); // a new node session: its devices must be born again
      this.birth(ent, p.metrics);
    } else if (!ent.born) {
      this.stats.beforeBirth++;
      if (!ent.noted.has('unborn')) {
        ent.noted.add('unborn');
        this.ctx.log.info({ entity: ent.id }, `collectors/mqtt: ${type} of ${ent.id} before its ${type[0]}BIRTH; ignored until the BIRTH (it declares the aliases)`);
      }
      return;
    }
    this.apply(ent, type, p.metrics, p.timestamp, retained, topic);
  }

  /** Forgets an entity's session (and, for a node, its devices'). */
  private unborn(ent: Entity, node: Node | null): void {
    const ents = node ? [node, ...node.devices.values()] : [ent];
    for (const e of ents) {
      e.born = false;
      e.aliases.clear();
      e.declared.clear();
      e.datatypes.clear();
      e.noted.clear();
      for (const s of e.sites) {
        s.values = {};
        s.live = false;
        s.last = null;
      }
    }
  }

  private birth(ent: Entity, metrics: readonly SparkplugMetric[]): void {
    this.unborn(ent, null);
    ent.born = true;
    delete ent.bdSeq;
    for (const m of metrics) {
      if (m.name === undefined) continue;
      if (m.name === 'bdSeq') {
        const n = metricNumber(m.value, m.datatype);
        if (n !== null) ent.bdSeq = n;
      }
      if (!ent.wanted.has(m.name)) {
        if (m.alias !== undefined) ent.declared.add(m.alias);
        continue;
      }
      if (m.alias !== undefined) {
        ent.declared.add(m.alias);
        ent.aliases.set(m.alias, { name: m.name, datatype: m.datatype });
      }
      if (m.datatype !== undefined) ent.datatypes.set(m.name, m.datatype);
    }
  }

  private death(ent: Entity, node: Node | null, type: string, metrics: readonly SparkplugMetric[]): void {
    if (node) {
      const bd = metrics.find((m) => m.name === 'bdSeq');
      const n = bd ? metricNumber(bd.value, bd.datatype) : null;
      if (n !== null && node.bdSeq !== undefined && n !== node.bdSeq) {
        this.stats.staleDeaths++;
        this.ctx.log.info({ entity: node.id, bdSeq: n, current: node.bdSeq }, `collectors/mqtt: NDEATH of ${node.id} with bdSeq ${n} belongs to an earlier session (now ${node.bdSeq}); ignored`);
        return;
      }
    }
    const ents = node ? [node, ...node.devices.values()] : [ent];
    const wasBorn = ents.some((e) => e.born);
    this.stats.deaths++;
    const expiring = ents.flatMap((e) => e.sites).filter((s) => s.last !== null);
    this.unborn(ent, node);
    if (!wasBorn) return;
    const regions = [...new Set(ents.flatMap((e) => e.sites.map((s) => s.site.region)))];
    this.ctx.log.warn(
      { entity: ent.id, regions, expiresAt: expiring.map((s) => s.lastObservedAt + this.cfg.expireMs) },
      `collectors/mqtt: ${type} of ${ent.id}: its facts about ${regions.join(', ')} are no longer known; nothing more until its next BIRTH, the last ones expire on their own`,
    );
  }

  /** Reads a BIRTH's or DATA's metrics for the sites of `ent`, then emits what changed. */
  private apply(ent: Entity, type: string, metrics: readonly SparkplugMetric[], timestamp: number | undefined, retained: boolean, topic: string): void {
    const updates = new Map<SiteRun, Update>();
    const failed = new Map<SiteRun, unknown>();
    for (const s of ent.sites) updates.set(s, {});
    for (const m of metrics) {
      let name = m.name;
      let datatype = m.datatype;
      if (name === undefined) {
        if (m.alias === undefined) continue;
        const a = ent.aliases.get(m.alias);
        if (!a) {
          if (!ent.declared.has(m.alias)) {
            this.stats.unknownAlias++;
            if (!ent.noted.has('alias')) {
              ent.noted.add('alias');
              this.ctx.log.warn({ entity: ent.id, alias: m.alias }, `collectors/mqtt: ${type} of ${ent.id} uses alias ${m.alias}, which its BIRTH did not declare; ignored (the edge node must publish a new BIRTH)`);
            }
          }
          continue;
        }
        name = a.name;
        datatype ??= a.datatype;
      }
      if (!ent.wanted.has(name)) continue;
      datatype ??= ent.datatypes.get(name);
      if (m.isHistorical) {
        this.stats.historical++;
        continue;
      }
      for (const s of ent.sites) {
        const fields = s.byName.get(name);
        if (!fields || failed.has(s)) continue;
        const u = updates.get(s)!;
        try {
          if (m.isNull) {
            for (const f of fields) u[f] = null;
            continue;
          }
          const n = metricNumber(m.value, datatype);
          if (n === null) {
            const got = m.value ? (m.value.type === 'other' ? `a field ${m.value.field} value` : `${m.value.type} ${String(m.value.value)}`.slice(0, 60)) : 'no value';
            throw new ReadingError('MQTT_ERR_VALUE', `metric "${name}" must hold a finite number; got ${got}`);
          }
          for (const f of fields) u[f] = scaled(f, n, s.site.scale?.[f], `metric "${name}"`);
        } catch (e) {
          failed.set(s, e);
        }
      }
    }
    for (const [s, e] of failed) this.refuse([s], e, topic, `${type} of ${ent.id}: `);
    for (const [s, u] of updates) {
      if (failed.has(s)) continue;
      s.live = true;
      this.update(s, u, timestamp, retained);
    }
  }

  private json(topic: string, payload: Uint8Array, retained: boolean): void {
    const sites = this.topics.get(topic);
    if (!sites) return;
    let obj: Record<string, unknown>;
    try {
      obj = parseJsonObject(payload);
    } catch (e) {
      if (e instanceof ReadingError && e.code === 'MQTT_ERR_TOO_LARGE') this.stats.oversize++;
      else this.stats.malformed++;
      this.refuse(sites, e, topic);
      return;
    }
    for (const s of sites) {
      let r;
      try {
        r = readJson(obj, s.site.metrics, s.site.scale, s.site.timestampField ?? 'timestamp');
      } catch (e) {
        this.refuse([s], e, topic);
        continue;
      }
      this.update(s, r.update, r.timestamp, retained);
    }
  }

  /**
   * Applies a good message's update to a site and emits its budget when it changed or a
   * renewal is due (a BIRTH has reset the site's values before).
   */
  private update(s: SiteRun, u: Update, timestamp: number | undefined, retained: boolean): void {
    if (s.failing !== null) {
      this.ctx.log.info({ site: s.index, region: s.site.region, was: s.failing }, `collectors/mqtt: ${s.label} reads again`);
      s.failing = null;
    }
    const now = this.ctx.now();
    const { observedAt, clock } = observedAtOf(timestamp, now, this.cfg.expireMs);
    if (retained && clock !== 'ok') {
      // A retained message without a recent timestamp may be any age: not a current fact.
      this.stats.retainedSkipped++;
      return;
    }
    if (clock !== s.clock && clock !== 'none') {
      if (clock === 'ok') this.ctx.log.info({ site: s.index }, `collectors/mqtt: ${s.label}: the source's timestamps are sane again`);
      else {
        this.ctx.log.warn(
          { site: s.index, timestamp, now },
          `collectors/mqtt: ${s.label}: the message timestamp ${timestamp} is ${clock === 'future' ? 'more than 5 s ahead of' : `${this.cfg.expireMs} ms or more older than`} now (${now}); using the receive time (check the source's clock)`,
        );
      }
    }
    if (clock !== 'none') s.clock = clock;
    if (Object.keys(u).length === 0) return; // nothing mapped in this message
    applyUpdate(s.values, u);
    const value = budgetOf(s.values, s.site.storageCapacityWh);
    if (!value) return;
    const json = JSON.stringify(value);
    if (s.last && s.last.json === json && now - s.last.at < this.refreshMs) {
      this.stats.unchanged++;
      return;
    }
    this.emit(s, value, json, Math.max(observedAt, s.lastObservedAt), now);
  }

  /** Sparkplug hold: renews the budgets of born sites heard from since the last connection. */
  private renew(): void {
    if (this.broker !== 'up') return;
    const now = this.ctx.now();
    for (const node of this.nodes.values()) {
      for (const e of [node, ...node.devices.values()]) {
        if (!e.born) continue;
        for (const s of e.sites) {
          if (!s.live || !s.last || s.failing !== null || now - s.last.at < this.refreshMs) continue;
          this.stats.renewals++;
          this.emit(s, s.last.value, s.last.json, Math.max(now, s.lastObservedAt), now);
        }
      }
    }
  }

  private emit(s: SiteRun, value: PowerBudget, json: string, observedAt: number, now: number): void {
    if (this.stopped) return;
    s.last = { value, json, at: now };
    s.lastObservedAt = observedAt;
    const signal: Signal<PowerBudget> = {
      region: s.site.region,
      kind: 'power.budget',
      source: s.source,
      key: s.key,
      observedAt,
      expiresAt: observedAt + this.cfg.expireMs,
      value: { ...value },
    };
    this.stats.signals++;
    this.ctx.emit(signal); // never throws (CollectorContext)
  }
}

export const mqttCollector: Collector<MqttConfig> = {
  counters: mqttCounters,
  errors: [ReadingError, SparkplugDecodeError, MqttError],
  name: 'mqtt',
  configSchema: MqttConfigSchema,
  mode: 'poller',
  sources: 'mqtt/',
  /** What it emits, for the collector table of collectors/README.md. */
  summary: '`power.budget` from behind-the-meter site telemetry over MQTT: Sparkplug B (protobuf, aliases from BIRTH, DEATH → stale) and plain JSON topics',
  async start(ctx) {
    const run = new MqttRun(ctx);
    const stop = async () => {
      ctx.signal.removeEventListener('abort', onAbort);
      await run.stop();
    };
    const onAbort = () => void stop();
    if (ctx.signal.aborted) return stop;
    run.start();
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    return stop;
  },
};
