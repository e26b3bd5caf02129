/**
 * What the API needs from the rest of the process (gslb/main.ts wires it): the one contract
 * between the HTTP layer and the services behind it. Types only; the routes and app.ts read
 * it, nothing here imports them back at run time.
 */
import type { ServerOptions as HttpsServerOptions } from 'node:https';
import type { Logger } from 'pino';
import type { TokenStore } from '../config/tokens.js';
import type { StateApi } from './routes/state.js';
import type { OperatorRoutesOptions } from './routes/operator.js';
import type { FleetRoutesOptions } from './routes/fleet.js';
import type { WindowsRoutesOptions } from './routes/windows.js';
import type { JobsRoutesOptions } from './routes/jobs.js';
import type { QuarantineRoutesOptions } from './routes/quarantine.js';
import type { ExplainQuery, ExplainResult } from '../serve/explain.js';

/** One line of /readyz. */
export interface ReadinessCheck {
  name: string;
  ok: boolean;
  detail: string;
}

/** What the API needs from the rest of the process. The API never reads config or state otherwise. */
export interface ApiDeps {
  /** Root logger; the API logs through `log.child({ module: 'api' })`. */
  log: Logger;
  tokens: TokenStore;
  /** Called per /readyz request; must be cheap and synchronous. A throw counts as not ready. */
  readiness(): { ready: boolean; checks: ReadinessCheck[] };
  /** Prometheus exposition, already aggregated across processes. */
  metrics(): Promise<{ contentType: string; body: string }>;
  /** The configuration in force; `loadedAt` in ms since the Unix epoch. */
  configInfo(): { version: string; file: string; loadedAt: number; zones: string[]; names: string[]; regions: string[]; banner?: string };
  /**
   * Re-reads and applies the configuration. Rejects with an Error carrying
   * `issues: {file, line?, column?, path, message}[]` (a ConfigError) when the files are
   * invalid: the API answers 422 GSLB_ERR_CONFIG_INVALID with the issues. Never called
   * concurrently by the API.
   */
  reload(): Promise<{ version: string; changed: boolean }>;
  /**
   * Explains the answer one client gets now, from the zones, plan and geo table the DNS path
   * answers from (GET /v1/explain). Rejects with an ExplainError (gslb/serve/explain.ts) for
   * bad input: the API answers 400 GSLB_ERR_VALIDATION naming `querystring.<field>`.
   */
  explain(q: ExplainQuery): Promise<ExplainResult>;
  /** Signals, overrides, audit and the plan (routes/state.ts); absent = those routes answer 404. */
  state?: StateApi;
  /**
   * Requests per minute per caller (token name, else client address); 0 or absent = no limit.
   * A function is read per request, so a configuration reload changes the limits.
   */
  rateLimit?: RateLimits | (() => RateLimits);
  /** ms clock for the rate limits (tests pass their own). */
  clock?: () => number;
  /**
   * Serve HTTPS with these options (gslb/config/tls.ts readHttpTls); absent = plain HTTP.
   * With `requestCert` but not `rejectUnauthorized` (requireClientCert: false), a connection
   * without a client certificate is let through, one presenting an invalid one is closed.
   */
  https?: HttpsServerOptions;
  /** Operator failover: drain, undrain, force, freeze, status, preview (routes/operator.ts); absent = 404. */
  operator?: OperatorRoutesOptions['operator'];
  /** The fleet for operators: GET /v1/regions, /v1/grid-events, /v1/stream (routes/fleet.ts); absent = 404. */
  fleet?: FleetRoutesOptions['fleet'];
  /** Recurring windows: GET/POST /v1/windows, DELETE /v1/windows/:id, POST /v1/windows/:id/skip-next (routes/windows.ts); absent = 404. */
  windows?: WindowsRoutesOptions['windows'];
  /** Housekeeping jobs and practice runs: GET /v1/jobs, GET /v1/practice-runs (routes/jobs.ts); absent = 404. */
  jobs?: JobsRoutesOptions['jobs'];
  /** Records held out of planning: GET /v1/quarantine, POST /v1/quarantine/release|drop (routes/quarantine.ts); absent = 404. */
  quarantine?: QuarantineRoutesOptions['quarantine'];
  /** Called once per request refused for its input (status 400, 413, 415 or 422), with the route (`/v1/signals`, `unrouted`): the gridsteer_api_rejected_total counter. */
  onRejected?(route: string, status: number): void;
  /** How often /v1/stream looks for changes, ms (default 1000; tests make it shorter). */
  streamTickMs?: number;
  /** The built web dashboard served at / (routes/dashboard.ts); default dist/dashboards/web; false = none. */
  dashboardDir?: string | false;
}

export interface RateLimits {
  writesPerMinute: number;
  explainPerMinute: number;
}

