/**
 * One bounded GET for the carbon collector: at most `timeoutMs` for connect, headers and body
 * together, at most `maxBytes` of body, redirects never followed (the credentials would go to
 * wherever the redirect points), aborted when `stop` aborts. Throws only CarbonError.
 */
import { CarbonError } from './parse.js';

/** Most body bytes read from one answer. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** The status and, for a 200, the body text. Other statuses' bodies are discarded unread. */
export interface Answer {
  status: number;
  text: string;
}

/** Why fetch failed, in words: `connect ECONNREFUSED 127.0.0.1:9`, `other side closed`. */
function reason(e: unknown): string {
  const err = e as Error & { cause?: { code?: string; message?: string } };
  const cause = err?.cause;
  if (cause && typeof cause === 'object') return cause.message || cause.code || err.message;
  return err?.message ?? String(e);
}

export async function get(url: URL, headers: Readonly<Record<string, string>>, timeoutMs: number, stop: AbortSignal, maxBytes = MAX_BODY_BYTES): Promise<Answer> {
  const ac = new AbortController();
  let why: CarbonError | null = null;
  const abort = (e: CarbonError) => {
    why ??= e;
    ac.abort();
  };
  const timer = setTimeout(() => abort(new CarbonError('CARBON_ERR_TIMEOUT', `no complete answer within ${timeoutMs} ms`)), timeoutMs);
  const onStop = () => abort(new CarbonError('CARBON_ERR_NETWORK', 'stopped'));
  if (stop.aborted) onStop();
  else stop.addEventListener('abort', onStop, { once: true });
  try {
    let res: Response;
    try {
      res = await fetch(url, { headers: { accept: 'application/json', 'user-agent': 'gridsteer-carbon', ...headers }, signal: ac.signal, redirect: 'manual' });
    } catch (e) {
      throw why ?? new CarbonError('CARBON_ERR_NETWORK', reason(e));
    }
    const body = res.body;
    if (res.status !== 200) {
      await body?.cancel().catch(() => undefined);
      return { status: res.status, text: '' };
    }
    const declared = Number(res.headers.get('content-length') ?? NaN);
    if (declared > maxBytes) {
      await body?.cancel().catch(() => undefined);
      throw new CarbonError('CARBON_ERR_TOO_LARGE', `the body is ${declared} bytes, more than ${maxBytes}`);
    }
    if (!body) return { status: 200, text: '' };
    const chunks: Uint8Array[] = [];
    let size = 0;
    const reader = body.getReader();
    try {
      while (true) {
        let r: Awaited<ReturnType<typeof reader.read>>;
        try {
          r = await reader.read();
        } catch (e) {
          throw why ?? new CarbonError('CARBON_ERR_NETWORK', `the body was cut short (${reason(e)})`);
        }
        if (r.done) break;
        size += r.value.byteLength;
        if (size > maxBytes) throw new CarbonError('CARBON_ERR_TOO_LARGE', `the body is more than ${maxBytes} bytes`);
        chunks.push(r.value);
      }
    } finally {
      await reader.cancel().catch(() => undefined);
    }
    return { status: 200, text: Buffer.concat(chunks, size).toString('utf8') };
  } finally {
    clearTimeout(timer);
    stop.removeEventListener('abort', onStop);
  }
}
