/** One HTTP API call as a client would make it: JSON in and out, a bearer token, bounded (10 s). */
export interface ApiReply {
  status: number;
  body: Record<string, unknown>;
}

export async function apiCall(base: string, method: string, path: string, token: string | null, body?: unknown): Promise<ApiReply> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10000),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}
