/**
 * `gridsteer explain <client-ip> <name> [--type A|AAAA] [--subnet CIDR] [--server URL]
 * [--token T] [--json]`: asks a running server's GET /v1/explain why that client gets the
 * answer it gets, and prints the report (or the JSON with --json).
 *
 * Exit codes: 0 explained; 1 the server is unreachable or answered an error (the message
 * says which, with the server's error code and message); 2 usage error.
 */
import { parseArgs } from 'node:util';
import type { ExplainCandidate, ExplainResult } from '../serve/explain.js';
import { CONNECTION_OPTIONS, callApi, connection, defaultIo, type CliIo } from './http.js';

export const EXPLAIN_USAGE = `usage: gridsteer explain <client-ip> <name> [options]

  Why does this client get that region? Asks a running server (GET /v1/explain).

  <client-ip>        the DNS packet's source: the resolver's address, or the client's own
  <name>             a steered name, e.g. api.gslb.example.com
  --type A|AAAA      query type (default A)
  --subnet CIDR      the query's EDNS Client Subnet, e.g. 133.242.0.0/24
  --server URL       the server's HTTP API (default: $GRIDSTEER_SERVER or http://127.0.0.1:8053)
  --token T          API token with role viewer (default: $GRIDSTEER_TOKEN)
  --json             print the server's JSON instead of the report
  (https with a private CA or mutual TLS: $GRIDSTEER_CA, $GRIDSTEER_CERT, $GRIDSTEER_KEY; docs/api.md)
`;

export type { CliIo } from './http.js';

/** Runs `gridsteer explain …` (`args` after the command word); resolves to the exit code. */
export async function runExplain(args: string[], io: CliIo = defaultIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      options: {
        type: { type: 'string' },
        subnet: { type: 'string' },
        ...CONNECTION_OPTIONS,
      },
      strict: true,
      allowPositionals: true,
    });
  } catch (e) {
    io.err(`gridsteer: ${(e as Error).message}\n${EXPLAIN_USAGE}`);
    return 2;
  }
  const v = parsed.values;
  if (v.help) {
    io.out(EXPLAIN_USAGE);
    return 0;
  }
  if (parsed.positionals.length !== 2) {
    io.err(`gridsteer: explain takes a client address and a name (got ${parsed.positionals.length} argument(s))\n${EXPLAIN_USAGE}`);
    return 2;
  }
  const [client, name] = parsed.positionals as [string, string];
  const type = (v.type ?? 'A').toUpperCase();
  if (type !== 'A' && type !== 'AAAA') {
    io.err(`gridsteer: --type takes A or AAAA (got "${v.type}")\n`);
    return 2;
  }
  const conn = connection(v, io);
  if (typeof conn === 'string') {
    io.err(`gridsteer: ${conn}\n`);
    return 2;
  }
  const r = await callApi(io, conn, { path: '/v1/explain', query: { client, name, type, subnet: v.subnet } });
  if (r.kind === 'failed') return 1;
  if (r.kind === 'refused') {
    const e = r.error;
    io.err(`gridsteer: the server refused: HTTP ${r.status} ${e?.code ?? ''}: ${e?.message ?? r.text.slice(0, 300)}\n`);
    if (r.status === 401 && !conn.token) io.err('gridsteer: pass a viewer token with --token or $GRIDSTEER_TOKEN\n');
    return 1;
  }
  io.out(v.json ? `${JSON.stringify(r.body, null, 2)}\n` : renderExplain(r.body as ExplainResult));
  return 0;
}

/** Left-aligned columns, two spaces apart. */
function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => [...(r[i] ?? '')].length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c + ' '.repeat(widths[i]! - [...c].length))).join('  ').trimEnd());
}

const km = (x: number | null) => (x === null ? '-' : x.toFixed(0));

function admittedText(c: ExplainCandidate): string {
  return c.admitted === true ? 'yes' : c.admitted === false ? 'no' : '-';
}

/** The report for people: where the client is, each region as decide weighed it, the answer. */
export function renderExplain(r: ExplainResult): string {
  const lines: string[] = [];
  const asked = r.name === r.steeredName ? r.name : `${r.name} (→ ${r.steeredName})`;
  lines.push(`${asked} ${r.qtype} for client ${r.client}${r.subnet ? ` with ECS ${r.subnet}` : ''}`);
  lines.push('');
  const kv: string[][] = [];
  kv.push(['subnet key', `${r.subnetKey} (${r.usedEcs ? 'from the ECS subnet' : r.cell.special ? 'the special cell: no usable address' : "from the packet's source"})`]);
  if (r.fallbackReason) kv.push(['ECS not used', r.fallbackReason]);
  if (r.located) {
    const l = r.located;
    const place = [l.city, l.country].filter(Boolean).join(', ') || 'no place name';
    const radius = l.accuracyRadiusKm === undefined ? '' : ` ±${l.accuracyRadiusKm} km`;
    kv.push(['located', `${place} at ${l.lat.toFixed(2)}, ${l.lon.toFixed(2)}${radius} (${l.address}${l.network ? ` in ${l.network}` : ''})`]);
  } else kv.push(['located', 'not looked up in the database (see notes)']);
  const cellRange = r.cell.range === null ? 'no range (special cell)' : r.cell.rangeCidrs.length === 1 && r.cell.rangeCidrsMore === 0 ? r.cell.rangeCidrs[0]! : r.cell.range;
  kv.push(['cell', `${cellRange}, placed by ${r.cell.description}`]);
  kv.push(['ranking', r.cell.ranking.join(' > ') || '(empty)']);
  if (r.distanceFrom) kv.push(['distances from', `${r.distanceFrom.what === 'database' ? "the client's location in the database" : 'the default location'} (${r.distanceFrom.lat.toFixed(2)}, ${r.distanceFrom.lon.toFixed(2)})`]);
  kv.push(['geo table', `${r.geoTable.version}: ${r.geoTable.note}`]);
  for (const line of table(kv)) lines.push(`  ${line}`);
  lines.push('');
  const rows: string[][] = [['', 'rank', 'region', 'km', 'bias', 'biased km', 'weight', 'draw', 'admitted', 'why']];
  for (const c of r.candidates) {
    rows.push([c.answered ? '>' : '', c.rank === null ? '-' : String(c.rank), c.region, km(c.distanceKm), String(c.bias), km(c.biasedKm), String(c.weight), c.draw === undefined ? '-' : c.draw.toFixed(4), admittedText(c), c.why]);
  }
  for (const line of table(rows)) lines.push(line);
  lines.push('');
  const a = r.answer;
  const what = a.region ?? (a.addresses.length > 0 ? 'every serving region' : 'no region');
  const scope = a.ecsScope === null ? 'no ECS in the reply' : `ECS scope /${a.ecsScope}`;
  lines.push(`answer: ${what} (${a.rcode}${a.rcode === 'NOERROR' && a.addresses.length === 0 ? ', NODATA' : ''})  ${a.addresses.join(' ') || '-'}  TTL ${a.ttl}s  ${scope}`);
  lines.push('');
  lines.push('reasons:');
  for (const x of r.reasons) lines.push(`  - ${x}`);
  // The home region's plan step: what the planner made of its state (overrides, health,
  // gridPolicy rules, power), with the rule names.
  const ps = r.planStep;
  lines.push(`plan step (home region) from ${ps.at === 0 ? 'the start' : new Date(ps.at).toISOString()}, plan ${ps.planVersion}:`);
  for (const x of ps.reasons) lines.push(`  - ${x}`);
  if (r.notes.length > 0) {
    lines.push('notes:');
    for (const x of r.notes) lines.push(`  - ${x}`);
  }
  return lines.join('\n') + '\n';
}
