/**
 * The dashboard talks to the same API as the CLI (docs/api.md), with the bearer token the
 * operator typed in (kept in sessionStorage: gone when the tab closes). Live updates come from
 * GET /v1/stream (Server-Sent Events) read with fetch, so the token goes in the Authorization
 * header (EventSource cannot send one) and never in a URL.
 */

const TOKEN_KEY = 'gridsteer.token';

export function token(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(t: string | null): void {
  if (t === null || t.trim() === '') sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, t.trim());
}

/** An API error as the API states it (`{error: {code, message, field?}}`). */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

function headers(json: boolean): Record<string, string> {
  const h: Record<string, string> = { accept: 'application/json' };
  const t = token();
  if (t) h.authorization = `Bearer ${t}`;
  if (json) h['content-type'] = 'application/json';
  return h;
}

async function failure(res: Response): Promise<ApiFailure> {
  let code = 'GSLB_ERR_HTTP';
  let message = `${res.status} ${res.statusText}`;
  let field: string | undefined;
  try {
    const b = (await res.json()) as { error?: { code?: string; message?: string; field?: string } };
    if (b.error?.code) code = b.error.code;
    if (b.error?.message) message = b.error.message;
    field = b.error?.field;
  } catch {
    /* not JSON: keep the status line */
  }
  return new ApiFailure(res.status, code, message, field);
}

export async function call<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<T> {
  const res = await fetch(path, { method, headers: headers(body !== undefined), ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  if (!res.ok) throw await failure(res);
  return (await res.json()) as T;
}

/**
 * Reads GET /v1/stream until `signal` aborts or the server ends it; calls `onEvent` per
 * event. Rejects with ApiFailure when the stream is refused (401, 403, 503).
 */
export async function stream(signal: AbortSignal, onEvent: (event: string, data: string) => void): Promise<void> {
  const res = await fetch('/v1/stream', { headers: { ...headers(false), accept: 'text/event-stream' }, signal });
  if (!res.ok || !res.body) throw await failure(res);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let cut: number;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue;
        const i = line.indexOf(':');
        const f = i < 0 ? line : line.slice(0, i);
        const v = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
        if (f === 'event') event = v;
        else if (f === 'data') data.push(v);
      }
      if (data.length > 0) onEvent(event, data.join('\n'));
    }
  }
}
