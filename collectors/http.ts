/**
 * One bounded HTTP GET for the collectors that poll a peer: at most `timeoutMs` for connect,
 * headers and body together, at most `maxBytes` of body (declared or read), aborted when
 * `stop` aborts. Never hangs and never buffers more than `maxBytes`. A failure is a
 * FetchError whose `kind` each collector maps to its own error codes.
 */

export type FetchFailure = 'network' | 'timeout' | 'stopped' | 'cut-short' | 'too-large';

export class FetchError extends Error {
  constructor(
    readonly kind: FetchFailure,
    message: string,
  ) {
    super(message);
    this.name = 'FetchError';
  }
}

export interface BoundedGet {
  url: string | URL;
  headers: Readonly<Record<string, string>>;
  timeoutMs: number;
  maxBytes: number;
  stop: AbortSignal;
  /** `manual` for requests carrying credentials (a redirect would take them elsewhere). */
  redirect: 'follow' | 'manual';
  /** Which statuses' bodies are read (default 2xx); other bodies are discarded unread. */
  readBody?: (status: number) => boolean;
}

/** Why fetch failed, in words: `connect ECONNREFUSED 127.0.0.1:9`, `other side closed`. */
export function fetchReason(e: unknown): string {
  const err = e as Error & { cause?: { code?: string; message?: string } };
  const cause = err?.cause;
  if (cause && typeof cause === 'object') return cause.message || cause.code || err.message;
  return err?.message ?? String(e);
}

/** The status and, when its body was read, the body as UTF-8 text ('' otherwise). */
export async function boundedGet(o: BoundedGet): Promise<{ status: number; text: string }> {
  const ac = new AbortController();
  let why: FetchError | null = null;
  const abort = (e: FetchError) => {
    why ??= e;
    ac.abort();
  };
  const timer = setTimeout(() => abort(new FetchError('timeout', `no complete answer within ${o.timeoutMs} ms`)), o.timeoutMs);
  const onStop = () => abort(new FetchError('stopped', 'stopped'));
  if (o.stop.aborted) onStop();
  else o.stop.addEventListener('abort', onStop, { once: true });
  try {
    let res: Response;
    try {
      res = await fetch(o.url, { headers: o.headers, signal: ac.signal, redirect: o.redirect });
    } catch (e) {
      throw why ?? new FetchError('network', fetchReason(e));
    }
    const body = res.body;
    // Cancelling is never awaited: a peer that holds the connection must not hold the poll.
    if (!(o.readBody ?? ((s) => s >= 200 && s < 300))(res.status)) {
      void body?.cancel().catch(() => undefined);
      return { status: res.status, text: '' };
    }
    const declared = Number(res.headers.get('content-length') ?? NaN);
    if (declared > o.maxBytes) {
      void body?.cancel().catch(() => undefined);
      throw new FetchError('too-large', `the body is ${declared} bytes, more than ${o.maxBytes}`);
    }
    if (!body) return { status: res.status, text: '' };
    const chunks: Uint8Array[] = [];
    let size = 0;
    const reader = body.getReader();
    try {
      while (true) {
        let r: Awaited<ReturnType<typeof reader.read>>;
        try {
          r = await reader.read();
        } catch (e) {
          throw why ?? new FetchError('cut-short', `the body was cut short (${fetchReason(e)})`);
        }
        if (r.done) break;
        size += r.value.byteLength;
        if (size > o.maxBytes) throw new FetchError('too-large', `the body is more than ${o.maxBytes} bytes`);
        chunks.push(r.value);
      }
    } finally {
      void reader.cancel().catch(() => undefined);
    }
    return { status: res.status, text: Buffer.concat(chunks, size).toString('utf8') };
  } finally {
    clearTimeout(timer);
    o.stop.removeEventListener('abort', onStop);
  }
}

/** A URL for logs and status: scheme, host and path (a query may carry a key). */
export function showUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '(a URL that does not parse)';
  }
}
