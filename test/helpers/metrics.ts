/**
 * Reads GridSteer's Prometheus text from GET /metrics (bounded by a timeout) and sums
 * samples by name and label values.
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the Prometheus text exposition format (comments skipped). */
export function parsePrometheus(text: string): Sample[] {
  const out: Sample[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/);
    if (!m) continue;
    const labels: Record<string, string> = {};
    const body = m[2] ?? '';
    const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
    let lm: RegExpExecArray | null;
    while ((lm = re.exec(body))) labels[lm[1]!] = lm[2]!.replace(/\\"/g, '"').replace(/\\n/g, '\n').replace(/\\\\/g, '\\');
    const v = m[3]!;
    out.push({ name: m[1]!, labels, value: v === '+Inf' ? Infinity : v === '-Inf' ? -Infinity : Number(v) });
  }
  return out;
}

/** GET {base}/metrics, bounded by `timeoutMs`; throws on a non-200 status. */
export async function scrape(base: string, timeoutMs = 10000): Promise<Sample[]> {
  const res = await fetch(`${base}/metrics`, { signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`metrics: GET ${base}/metrics answered ${res.status}: ${text.slice(0, 500)}`);
  return parsePrometheus(text);
}

/**
 * The sum of every sample named `name` whose labels include all of `match` (a label
 * matches when its value is the one given, or any of a list given).
 */
export function sumOf(samples: Sample[], name: string, match: Record<string, string | string[]> = {}): number {
  let total = 0;
  for (const s of samples) {
    if (s.name !== name) continue;
    const ok = Object.entries(match).every(([k, v]) => {
      const got = s.labels[k];
      return got !== undefined && (Array.isArray(v) ? v.includes(got) : got === v);
    });
    if (ok) total += s.value;
  }
  return total;
}

/** Label values for a query type or rcode: the mnemonic, or its number. */
export const QTYPE_LABEL = { A: ['A', '1'], AAAA: ['AAAA', '28'], TXT: ['TXT', '16'] } as const;
export const RCODE_LABEL = { NOERROR: ['NOERROR', '0'], NXDOMAIN: ['NXDOMAIN', '3'] } as const;

/** Whether any sample named `name` exists (to tell "no such metric" from zero). */
export function hasMetric(samples: Sample[], name: string): boolean {
  return samples.some((s) => s.name === name);
}

/** A short listing of the samples of one metric, for assertion messages. */
export function describeMetric(samples: Sample[], name: string): string {
  const lines = samples.filter((s) => s.name === name).map((s) => `${s.name}${JSON.stringify(s.labels)} ${s.value}`);
  return lines.length ? lines.join('\n') : `(no samples named ${name})`;
}

export const QUERIES = 'gridsteer_dns_queries_total';
export const MALFORMED = 'gridsteer_dns_malformed_total';
