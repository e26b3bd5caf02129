/**
 * The one bounded HTTP client of the collectors and the drain hooks (gslb/control/hooks.ts): every
 * poller's request (carbon, grid-alerts, prometheus, the openadr3 VTN and token endpoint) and
 * every drain-hook POST goes through `boundedRequest`.
 *
 * Contract:
 * - At most `timeoutMs` (ms) for connect, request, headers and the body read together; at most
 *   `maxBytes` of body held in memory (declared or read); aborted when `stop` aborts. It never
 *   hangs and never buffers more than `maxBytes`. Its timer is unref'd (it never holds the
 *   process open by itself).
 * - Redirects are refused: a 3xx is returned as its status, never followed (a request may carry
 *   credentials, and a redirect would take them elsewhere). `redirect: 'follow'` is kept only
 *   for the pollers whose READMEs promised "after redirects" before the kit (prometheus,
 *   grid-alerts), so their configs keep working.
 * - Compressed answers (gzip, deflate, br) are decoded, and `maxBytes` bounds the decoded
 *   body. Any port may be asked for (node:http, one connection per request, closed after it).
 * - A failure is a FetchError whose `kind` each caller maps to its own error codes; its message
 *   is plain words without a module prefix. Nothing here logs or counts.
 */

import http from 'node:http';
import https from 'node:https';
import zlib from 'node:zlib';
import type { Readable } from 'node:stream';
import { BodyTooLarge, collect } from './body.js';

export type FetchFailure = 'network' | 'timeout' | 'stopped' | 'cut-short' | 'too-large';

/** Why a request gave no answer; `kind` is what callers map to their codes. */
export class FetchError extends Error {
  /** The answer's status when the failure came after its headers (reading the body), else undefined. */
  status: number | undefined;
  constructor(
    readonly kind: FetchFailure,
    message: string,
  ) {
    super(message);
    this.name = 'FetchError';
  }
}

export interface BoundedRequest {
  url: string | URL;
  /** Default GET. */
  method?: 'GET' | 'POST' | 'PUT';
  headers: Readonly<Record<string, string>>;
  body?: string;
  /** ms for connect, request, headers and body together. */
  timeoutMs: number;
  /** Most body bytes read. */
  maxBytes: number;
  stop: AbortSignal;
  /** `refuse` (default): a 3xx is the answer. `follow`: only for requests without credentials. */
  redirect?: 'refuse' | 'follow';
  /** Which statuses' bodies are read (default 2xx); other bodies are discarded unread. */
  readBody?: (status: number) => boolean;
  /** https: the server name to verify (default: the URL's host) and whether to verify at all (default true). */
  tls?: { servername?: string; rejectUnauthorized?: boolean };
  /** `fail` (default): a body past `maxBytes` is a `too-large` FetchError. `truncate`: the first `maxBytes` are kept, the rest discarded. */
  overflow?: 'fail' | 'truncate';
}

export interface BoundedAnswer {
  status: number;
  /** The body when it was read (see `readBody`), else empty; at most `maxBytes`. */
  body: Buffer;
  /** `body` as UTF-8 text. */
  text: string;
}

/** Why fetch failed, in words: `connect ECONNREFUSED 127.0.0.1:9`, `other side closed`. */
export function fetchReason(e: unknown): string {
  const err = e as Error & { cause?: { code?: string; message?: string } };
  const cause = err?.cause;
  if (cause && typeof cause === 'object') return cause.message || cause.code || err.message;
  return err?.message ?? String(e);
}

const is2xx = (s: number) => s >= 200 && s < 300;
/** Most redirects followed with `redirect: 'follow'` (fetch's limit). */
const MAX_REDIRECTS = 20;
/** Headers dropped when a followed redirect leaves the origin. */
const CREDENTIAL_HEADERS = ['authorization', 'cookie', 'proxy-authorization'];

/**
 * One request; resolves with the status and (when read) the body, or rejects with a FetchError.
 * node:http(s) with no agent (one connection per request, closed after it), so any port works
 * (fetch refuses some, e.g. 9 and 6000) and nothing lingers after stop.
 */
export async function boundedRequest(o: BoundedRequest): Promise<BoundedAnswer> {
  let why: FetchError | null = null;
  let current: http.ClientRequest | null = null;
  const abort = (e: FetchError) => {
    why ??= e;
    current?.destroy(why);
  };
  const timer = setTimeout(() => abort(new FetchError('timeout', `no complete answer within ${o.timeoutMs} ms`)), o.timeoutMs);
  timer.unref();
  const onStop = () => abort(new FetchError('stopped', 'stopped'));
  if (o.stop.aborted) onStop();
  else o.stop.addEventListener('abort', onStop, { once: true });
  try {
    let url: URL;
    try {
      url = new URL(o.url);
    } catch {
      throw new FetchError('network', `${JSON.stringify(String(o.url).slice(0, 200))} is not a URL`);
    }
    let headers: Record<string, string> = { ...o.headers };
    // As fetch did: offer compression, and bound the decoded body (a gzip bomb is too large).
    if (!Object.keys(headers).some((k) => k.toLowerCase() === 'accept-encoding')) headers['accept-encoding'] = 'gzip, deflate, br';
    for (let hop = 0; ; hop++) {
      if (why) throw why;
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new FetchError('network', `${url.protocol} URLs are not fetched (http: and https: only)`);
      const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
        const mod = url.protocol === 'https:' ? https : http;
        let req: http.ClientRequest;
        try {
          req = mod.request(url, { method: o.method ?? 'GET', headers, agent: false, ...(url.protocol === 'https:' ? o.tls : undefined) }, resolve);
        } catch (e) {
          // A header value node refuses (a line break, a non-Latin-1 character).
          reject(new FetchError('network', (e as Error).message));
          return;
        }
        current = req;
        req.on('error', (e) => reject(why ?? new FetchError('network', e.message)));
        if (o.body !== undefined && hop === 0) req.end(o.body);
        else req.end();
      });
      const status = res.statusCode ?? 0;
      const location = res.headers.location;
      if (o.redirect === 'follow' && status >= 300 && status < 400 && location !== undefined && (o.method ?? 'GET') === 'GET') {
        res.destroy();
        if (hop >= MAX_REDIRECTS) throw new FetchError('network', `more than ${MAX_REDIRECTS} redirects`);
        let next: URL;
        try {
          next = new URL(location, url);
        } catch {
          throw new FetchError('network', `a redirect to ${JSON.stringify(location.slice(0, 200))}, which is not a URL`);
        }
        if (next.origin !== url.origin) headers = Object.fromEntries(Object.entries(headers).filter(([k]) => !CREDENTIAL_HEADERS.includes(k.toLowerCase())));
        url = next;
        continue;
      }
      return await readAnswer(res, status, o, () => why);
    }
  } finally {
    clearTimeout(timer);
    o.stop.removeEventListener('abort', onStop);
    current = null;
  }
}

/** Reads (or discards) one answer's body within the caller's bounds. */
function readAnswer(res: http.IncomingMessage, status: number, o: BoundedRequest, why: () => FetchError | null): Promise<BoundedAnswer> {
  const failed = (e: FetchError): FetchError => {
    e.status ??= status;
    return e;
  };
  const empty = { status, body: Buffer.alloc(0), text: '' };
  // Discarding never waits: a peer that holds the connection must not hold the caller.
  if (!(o.readBody ?? is2xx)(status)) {
    res.destroy();
    return Promise.resolve(empty);
  }
  const truncate = o.overflow === 'truncate';
  const declared = Number(res.headers['content-length'] ?? NaN);
  if (!truncate && declared > o.maxBytes) {
    res.destroy();
    return Promise.reject(failed(new FetchError('too-large', `the body is ${declared} bytes, more than ${o.maxBytes}`)));
  }
  const encoding = String(res.headers['content-encoding'] ?? '').trim().toLowerCase();
  const decoder = encoding === 'gzip' || encoding === 'x-gzip' ? zlib.createGunzip() : encoding === 'deflate' ? zlib.createInflate() : encoding === 'br' ? zlib.createBrotliDecompress() : null;
  const stream: Readable = decoder ? res.pipe(decoder) : res;
  return collect(stream, o.maxBytes, { truncate, message: res, closedWhy: 'the connection closed' }).then(
    (body) => {
      // Truncated: the rest is not wanted (the connection is not reused).
      if (truncate) {
        res.destroy();
        decoder?.destroy();
      }
      return { status, body, text: body.toString('utf8') };
    },
    (e: Error) => {
      res.destroy();
      decoder?.destroy();
      throw failed(e instanceof BodyTooLarge ? new FetchError('too-large', e.message) : (why() ?? new FetchError('cut-short', `the body was cut short (${e.message})`)));
    },
  );
}

/** A URL for logs and status: scheme, host and path (a query may carry a key). */
export function showUrl(url: string | URL): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '(a URL that does not parse)';
  }
}
