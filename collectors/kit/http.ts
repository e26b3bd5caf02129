/**
 * The one bounded HTTP client of the collectors and the drain hooks (gslb/hooks.ts): every
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
 * - A failure is a FetchError whose `kind` each caller maps to its own error codes; its message
 *   is plain words without a module prefix. Nothing here logs or counts.
 */

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

/** One request; resolves with the status and (when read) the body, or rejects with a FetchError. */
export async function boundedRequest(o: BoundedRequest): Promise<BoundedAnswer> {
  const ac = new AbortController();
  let why: FetchError | null = null;
  const abort = (e: FetchError) => {
    why ??= e;
    ac.abort();
  };
  const timer = setTimeout(() => abort(new FetchError('timeout', `no complete answer within ${o.timeoutMs} ms`)), o.timeoutMs);
  timer.unref();
  const onStop = () => abort(new FetchError('stopped', 'stopped'));
  if (o.stop.aborted) onStop();
  else o.stop.addEventListener('abort', onStop, { once: true });
  try {
    let res: Response;
    try {
      res = await fetch(o.url, { method: o.method ?? 'GET', headers: o.headers, body: o.body, signal: ac.signal, redirect: o.redirect === 'follow' ? 'follow' : 'manual' });
    } catch (e) {
      throw why ?? new FetchError('network', fetchReason(e));
    }
    const status = res.status;
    const failed = (e: FetchError): FetchError => {
      e.status ??= status;
      return e;
    };
    const body = res.body;
    // Cancelling is never awaited: a peer that holds the connection must not hold the caller.
    if (!(o.readBody ?? is2xx)(res.status)) {
      void body?.cancel().catch(() => undefined);
      return { status: res.status, body: Buffer.alloc(0), text: '' };
    }
    const truncate = o.overflow === 'truncate';
    const declared = Number(res.headers.get('content-length') ?? NaN);
    if (!truncate && declared > o.maxBytes) {
      void body?.cancel().catch(() => undefined);
      throw failed(new FetchError('too-large', `the body is ${declared} bytes, more than ${o.maxBytes}`));
    }
    if (!body) return { status: res.status, body: Buffer.alloc(0), text: '' };
    const chunks: Uint8Array[] = [];
    let size = 0;
    const reader = body.getReader();
    try {
      while (!truncate || size < o.maxBytes) {
        let r: Awaited<ReturnType<typeof reader.read>>;
        try {
          r = await reader.read();
        } catch (e) {
          throw failed(why ?? new FetchError('cut-short', `the body was cut short (${fetchReason(e)})`));
        }
        if (r.done) break;
        size += r.value.byteLength;
        if (!truncate && size > o.maxBytes) throw failed(new FetchError('too-large', `the body is more than ${o.maxBytes} bytes`));
        chunks.push(r.value);
      }
    } finally {
      void reader.cancel().catch(() => undefined);
    }
    const buf = Buffer.concat(chunks, size);
    const kept = truncate ? buf.subarray(0, o.maxBytes) : buf;
    return { status: res.status, body: kept, text: kept.toString('utf8') };
  } finally {
    clearTimeout(timer);
    o.stop.removeEventListener('abort', onStop);
  }
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
