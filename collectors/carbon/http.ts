/**
 * One bounded GET for the carbon collector: at most `timeoutMs` for connect, headers and body
 * together, at most `maxBytes` of body, redirects never followed (the credentials would go to
 * wherever the redirect points), aborted when `stop` aborts. Throws only CarbonError.
 */
import { boundedRequest, FetchError } from '../kit/http.js';
import { CarbonError } from './parse.js';

/** Most body bytes read from one answer. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** The status and, for a 200, the body text. Other statuses' bodies are discarded unread. */
export interface Answer {
  status: number;
  text: string;
}

export async function get(url: URL, headers: Readonly<Record<string, string>>, timeoutMs: number, stop: AbortSignal, maxBytes = MAX_BODY_BYTES): Promise<Answer> {
  try {
    return await boundedRequest({
      url,
      headers: { accept: 'application/json', 'user-agent': 'gridsteer-carbon', ...headers },
      timeoutMs,
      maxBytes,
      stop,
      readBody: (status) => status === 200,
    });
  } catch (e) {
    if (!(e instanceof FetchError)) throw new CarbonError('CARBON_ERR_NETWORK', String(e));
    throw new CarbonError(e.kind === 'too-large' ? 'CARBON_ERR_TOO_LARGE' : e.kind === 'timeout' ? 'CARBON_ERR_TIMEOUT' : 'CARBON_ERR_NETWORK', e.message);
  }
}
