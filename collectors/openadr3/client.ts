/**
 * A small, bounded HTTP(S) client for a VTN: OAuth2 client-credentials tokens (cached until
 * shortly before `expires_in`, fetched again once on a 401) and GETs of JSON arrays with
 * skip/limit paging. Every request has a deadline (connect, headers and body together) and a
 * body cap; every failure is an Openadr3Error with a code from OPENADR3_ERRORS. Nothing here
 * logs or emits: the poller decides what a failure means.
 */
import { readFile } from 'node:fs/promises';
import { boundedRequest, FetchError } from '../kit/http.js';
import { defineErrors } from '../kit/errors.js';
import { defineCounters } from '../kit/counters.js';

/**
 * Error codes of this collector (docs/conventions.md "Errors carry codes"), with what each means. Messages start
 * with `collectors/openadr3:`.
 */
export const OPENADR3_ERRORS = {
  OADR3_ERR_CONFIG: 'the configuration cannot work (e.g. neither clientSecret nor clientSecretFile)',
  OADR3_ERR_NETWORK: 'the VTN or its token endpoint could not be reached, or the connection broke',
  OADR3_ERR_TIMEOUT: 'no complete answer within timeoutMs',
  OADR3_ERR_TOO_LARGE: 'an answer was larger than the body cap',
  OADR3_ERR_TOKEN: 'the token endpoint refused the client or answered something that is not a token',
  OADR3_ERR_AUTH: 'the VTN refused the token (401/403), also after fetching a new one',
  OADR3_ERR_STATUS: 'the VTN answered an HTTP status other than 200',
  OADR3_ERR_JSON: 'an answer was not valid JSON (truncated, garbage)',
  OADR3_ERR_SHAPE: 'an answer was JSON of the wrong shape (e.g. not an array of objects)',
  OADR3_ERR_INTERNAL: 'a poll failed for a reason none of the other codes names (a bug: please report it with the log line)',
} as const;
export type Openadr3ErrorCode = keyof typeof OPENADR3_ERRORS;

export const Openadr3Error = defineErrors('collectors/openadr3', OPENADR3_ERRORS, { name: 'Openadr3Error' });
export type Openadr3Error = InstanceType<typeof Openadr3Error>;

/**
 * Counters of one running instance (monotonic, never reset): the poller makes them
 * (countersFor) and hands them to its TokenSource and webhook.
 */
export const openadr3Counters = defineCounters({
  /** Polls started, and polls that failed as a whole (nothing emitted from them). */
  polls: 0,
  pollFailures: 0,
  /** Token requests, and ones that failed (refused, unreachable, not a token). */
  tokenFetches: 0,
  tokenFailures: 0,
  /** Events read from the VTN, and ones that could not be read at all or only in part. */
  events: 0,
  badEvents: 0,
  /** Polls that hit maxEvents (or the paging bound): no cancellations were inferred from them. */
  truncatedPolls: 0,
  /** grid.event facts emitted, and of those the cancellations. */
  signals: 0,
  cancelled: 0,
  /** Notifications accepted by the webhook, and requests it refused (auth, shape, size, path). */
  notifications: 0,
  notificationsRefused: 0,
});
export type Openadr3Stats = ReturnType<typeof openadr3Counters.create>;
/** Sums over every instance in this process (collectors/kit/counters.ts): tests and diagnostics only. */
export const openadr3Totals = openadr3Counters.total;

/** Most bytes read from one VTN answer. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;
/** Most bytes read from the token endpoint. */
const MAX_TOKEN_BYTES = 64 * 1024;
/** Page size asked of the VTN (the definitions' maximum for `limit`). */
export const PAGE_LIMIT = 50;

export interface HttpAnswer {
  status: number;
  body: Buffer;
}

/**
 * One request through the kit's bounded client: resolves with the status and at most
 * `maxBytes` of body (of any status: the token endpoint's error body names the error), or
 * rejects with an Openadr3Error (NETWORK, TIMEOUT or TOO_LARGE). Never follows a redirect.
 */
export async function httpRequest(
  url: URL,
  o: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: string; timeoutMs: number; maxBytes: number; signal: AbortSignal },
): Promise<HttpAnswer> {
  const what = `${o.method} ${url.origin}${url.pathname}`;
  try {
    const a = await boundedRequest({ url, method: o.method, headers: { 'user-agent': 'gridsteer-openadr3', ...o.headers }, body: o.body, timeoutMs: o.timeoutMs, maxBytes: o.maxBytes, stop: o.signal, readBody: () => true });
    return { status: a.status, body: a.body };
  } catch (e) {
    const kind = e instanceof FetchError ? e.kind : 'network';
    if (kind === 'timeout') throw new Openadr3Error('OADR3_ERR_TIMEOUT', `${what}: no complete answer within ${o.timeoutMs} ms`);
    if (kind === 'too-large') throw new Openadr3Error('OADR3_ERR_TOO_LARGE', `${what}: the answer is larger than ${o.maxBytes} bytes`);
    if (kind === 'stopped') throw new Openadr3Error('OADR3_ERR_NETWORK', `${what}: stopped`);
    if (kind === 'cut-short') throw new Openadr3Error('OADR3_ERR_NETWORK', `${what}: the answer was cut short`);
    throw new Openadr3Error('OADR3_ERR_NETWORK', `${what}: ${(e as Error).message}`);
  }
}

/** Parses a JSON answer; OADR3_ERR_JSON when it is not JSON. */
export function parseJson(a: HttpAnswer, what: string): unknown {
  try {
    return JSON.parse(a.body.toString('utf8'));
  } catch (e) {
    throw new Openadr3Error('OADR3_ERR_JSON', `${what}: the answer is not valid JSON (${(e as Error).message.slice(0, 120)})`);
  }
}

/** What the token source needs. */
export interface TokenConfig {
  /** The VTN base URL (no trailing slash). */
  base: string;
  tokenUrl?: string;
  clientId: string;
  clientSecret?: string;
  clientSecretFile?: string;
  scope?: string;
  clientAuth: 'body' | 'basic';
  timeoutMs: number;
}

/**
 * OAuth2 client credentials (RFC 6749 §4.4) against the token endpoint: `vtn.tokenUrl`, else
 * the one the VTN names at GET /auth/server (3.1), else `<url>/auth/token` (3.0.1's relative
 * `auth/token`). The token is kept until `expires_in` minus a margin (a tenth, at most 60 s);
 * without `expires_in`, until the VTN answers 401. The secret file is read at each fetch, so a
 * rotated secret is picked up.
 */
export class TokenSource {
  private token: { value: string; refreshAt: number } | null = null;
  private discovered: string | null = null;

  constructor(
    private readonly c: TokenConfig,
    private readonly now: () => number,
    /** The instance's counters (tokenFetches, tokenFailures). */
    private readonly stats: Pick<Openadr3Stats, 'tokenFetches' | 'tokenFailures'>,
  ) {}

  /** A bearer token, fetched if none is cached or it is due for refresh. */
  async get(signal: AbortSignal): Promise<string> {
    if (this.token && this.now() < this.token.refreshAt) return this.token.value;
    this.token = null;
    this.stats.tokenFetches++;
    try {
      return await this.fetch(signal);
    } catch (e) {
      this.stats.tokenFailures++;
      throw e;
    }
  }

  private async fetch(signal: AbortSignal): Promise<string> {
    const url = await this.endpoint(signal);
    const secret = await this.secret();
    const form = new URLSearchParams({ grant_type: 'client_credentials' });
    if (this.c.scope) form.set('scope', this.c.scope);
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
    if (this.c.clientAuth === 'basic') {
      // RFC 6749 §2.3.1: each part form-urlencoded, then base64.
      const enc = (s: string) => new URLSearchParams({ x: s }).toString().slice(2);
      headers.authorization = `Basic ${Buffer.from(`${enc(this.c.clientId)}:${enc(secret)}`).toString('base64')}`;
    } else {
      form.set('client_id', this.c.clientId);
      form.set('client_secret', secret);
    }
    const t0 = this.now();
    const a = await httpRequest(url, { method: 'POST', headers, body: form.toString(), timeoutMs: this.c.timeoutMs, maxBytes: MAX_TOKEN_BYTES, signal });
    const where = `token endpoint ${url.origin}${url.pathname}`;
    if (a.status !== 200) {
      let detail = '';
      try {
        const err = JSON.parse(a.body.toString('utf8')) as { error?: unknown };
        if (typeof err?.error === 'string') detail = ` (${err.error.slice(0, 60)})`;
      } catch {
        // not JSON: the status says enough
      }
      throw new Openadr3Error('OADR3_ERR_TOKEN', `${where} answered ${a.status}${detail}`);
    }
    let body: unknown;
    try {
      body = JSON.parse(a.body.toString('utf8'));
    } catch {
      throw new Openadr3Error('OADR3_ERR_TOKEN', `${where}: the answer is not JSON`);
    }
    const r = (typeof body === 'object' && body !== null ? body : {}) as { access_token?: unknown; token_type?: unknown; expires_in?: unknown };
    if (typeof r.access_token !== 'string' || !/^[\x21-\x7e]{1,4096}$/.test(r.access_token)) throw new Openadr3Error('OADR3_ERR_TOKEN', `${where}: access_token is missing or not a token`);
    if (r.token_type !== undefined && (typeof r.token_type !== 'string' || r.token_type.toLowerCase() !== 'bearer')) {
      throw new Openadr3Error('OADR3_ERR_TOKEN', `${where}: token_type ${JSON.stringify(r.token_type)} is not Bearer`);
    }
    const exp = typeof r.expires_in === 'number' ? r.expires_in : typeof r.expires_in === 'string' && /^\d{1,10}$/.test(r.expires_in) ? Number(r.expires_in) : undefined;
    const refreshAt = exp !== undefined && exp > 0 ? t0 + exp * 1000 - Math.min(60_000, (exp * 1000) / 10) : exp === 0 ? t0 : Infinity;
    this.token = { value: r.access_token, refreshAt };
    return r.access_token;
  }

  /** Forget the cached token (after a 401). */
  invalidate(): void {
    this.token = null;
  }

  private async secret(): Promise<string> {
    if (this.c.clientSecret !== undefined) return this.c.clientSecret;
    if (this.c.clientSecretFile === undefined) throw new Openadr3Error('OADR3_ERR_CONFIG', 'vtn: set clientSecret or clientSecretFile');
    let text: string;
    try {
      const fh = await readFile(this.c.clientSecretFile, { encoding: 'utf8', flag: 'r' });
      text = fh.slice(0, 4097);
    } catch (e) {
      throw new Openadr3Error('OADR3_ERR_CONFIG', `vtn.clientSecretFile ${this.c.clientSecretFile}: ${(e as Error).message}`);
    }
    const s = text.trim();
    if (s.length === 0 || s.length > 4096) throw new Openadr3Error('OADR3_ERR_CONFIG', `vtn.clientSecretFile ${this.c.clientSecretFile}: the secret must be 1–4096 characters`);
    return s;
  }

  private async endpoint(signal: AbortSignal): Promise<URL> {
    if (this.c.tokenUrl) return new URL(this.c.tokenUrl);
    if (this.discovered) return new URL(this.discovered);
    const fallback = new URL(`${this.c.base}/auth/token`);
    // 3.1: GET /auth/server names the token endpoint. A 3.0.1 VTN answers 404: use the fallback.
    let a: HttpAnswer;
    try {
      a = await httpRequest(new URL(`${this.c.base}/auth/server`), { method: 'GET', headers: { accept: 'application/json' }, timeoutMs: this.c.timeoutMs, maxBytes: MAX_TOKEN_BYTES, signal });
    } catch {
      return fallback;
    }
    if (a.status === 404 || a.status === 405 || a.status === 501) {
      this.discovered = fallback.href;
      return fallback;
    }
    if (a.status !== 200) return fallback;
    try {
      const info = JSON.parse(a.body.toString('utf8')) as { tokenURL?: unknown };
      const u = typeof info?.tokenURL === 'string' ? new URL(info.tokenURL, `${this.c.base}/`) : null;
      // Never downgrade: the client secret goes there.
      if (u && (u.protocol === 'https:' || (u.protocol === 'http:' && new URL(this.c.base).protocol === 'http:')) && u.username === '' && u.password === '') {
        this.discovered = u.href;
        return u;
      }
    } catch {
      // not JSON or not a URL: the fallback
    }
    this.discovered = fallback.href;
    return fallback;
  }
}

/**
 * A VTN API client: GET a path with the bearer token, once more with a fresh token after a 401.
 * Answers other than 200 and bodies that are not JSON are Openadr3Errors.
 */
export class VtnClient {
  constructor(
    private readonly base: string,
    readonly tokens: TokenSource,
    private readonly timeoutMs: number,
  ) {}

  async getJson(pathAndQuery: string, signal: AbortSignal): Promise<unknown> {
    const url = new URL(`${this.base}${pathAndQuery}`);
    const what = `GET ${url.pathname}`;
    let tok = await this.tokens.get(signal);
    const ask = (t: string) =>
      httpRequest(url, { method: 'GET', headers: { authorization: `Bearer ${t}`, accept: 'application/json' }, timeoutMs: this.timeoutMs, maxBytes: MAX_BODY_BYTES, signal });
    let a = await ask(tok);
    if (a.status === 401) {
      this.tokens.invalidate();
      tok = await this.tokens.get(signal);
      a = await ask(tok);
    }
    if (a.status === 401 || a.status === 403) throw new Openadr3Error('OADR3_ERR_AUTH', `${what}: the VTN refused the token (${a.status})`);
    if (a.status !== 200) throw new Openadr3Error('OADR3_ERR_STATUS', `${what}: status ${a.status}`);
    return parseJson(a, what);
  }

  /**
   * Every object of a paged collection (`skip`/`limit` = PAGE_LIMIT), at most `max` of them.
   * Stops on a short page, an empty page, or a page with nothing new (a VTN that ignores skip).
   * `truncated` when there may be more than `max`. Items must be JSON objects with an `id`
   * (else OADR3_ERR_SHAPE); duplicates by id are dropped.
   */
  async getAll(path: string, query: string, max: number, signal: AbortSignal): Promise<{ items: Record<string, unknown>[]; truncated: boolean }> {
    const items: Record<string, unknown>[] = [];
    const ids = new Set<string>();
    let skip = 0;
    const maxPages = Math.ceil(max / PAGE_LIMIT) + 1;
    for (let page = 0; page < maxPages; page++) {
      const q = new URLSearchParams(query);
      q.set('skip', String(skip));
      q.set('limit', String(PAGE_LIMIT));
      const body = await this.getJson(`${path}?${q.toString()}`, signal);
      if (!Array.isArray(body)) throw new Openadr3Error('OADR3_ERR_SHAPE', `GET ${path}: the answer is not a JSON array`);
      let fresh = 0;
      for (const it of body) {
        if (typeof it !== 'object' || it === null || Array.isArray(it)) throw new Openadr3Error('OADR3_ERR_SHAPE', `GET ${path}: an element of the answer is not a JSON object`);
        const id = (it as { id?: unknown }).id;
        const key = typeof id === 'string' ? id : `\u0000${items.length}`;
        if (ids.has(key)) continue;
        if (items.length >= max) return { items, truncated: true };
        ids.add(key);
        items.push(it as Record<string, unknown>);
        fresh++;
      }
      if (body.length < PAGE_LIMIT || fresh === 0) return { items, truncated: false };
      skip += body.length;
    }
    return { items, truncated: true };
  }
}
