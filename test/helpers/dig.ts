/**
 * Runs the real DNS clients, dig (bind9-dnsutils) and kdig (knot-dnsutils), against a
 * loopback server, and turns their output into plain objects. Every run is bounded
 * (`+tries=1 +time=…` and a process timeout).
 */
import { execFile } from 'node:child_process';
import { requireTool } from './tools.js';
import type { Endpoint } from './net.js';

export interface ToolRun {
  /** Exit code (null when killed). */
  code: number | null;
  stdout: string;
  stderr: string;
  /** The command line, for failure messages. */
  cmd: string;
}

/** Runs a program with a hard time bound; never rejects on a non-zero exit. */
export function run(file: string, args: string[], timeoutMs = 20000): Promise<ToolRun> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: timeoutMs, maxBuffer: 8 * 1024 * 1024, killSignal: 'SIGKILL' }, (err, stdout, stderr) => {
      if (err && typeof (err as NodeJS.ErrnoException).code === 'string' && (err as NodeJS.ErrnoException).code === 'ENOENT') {
        reject(err);
        return;
      }
      const code = err ? (typeof err.code === 'number' ? err.code : null) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr), cmd: [file, ...args].join(' ') });
    });
  });
}

// ---------------------------------------------------------------- dig

export interface DigRecord {
  name: string;
  ttl: number;
  class: string;
  type: string;
  /** RDATA as dig prints it, e.g. `"v=spf1 -all"` or `0 issue "ca.example.net"`. */
  data: string;
}

export interface DigQuestion {
  name: string;
  class: string;
  type: string;
}

export interface DigOpt {
  version: number;
  /** EDNS flags as printed, e.g. ['do']. */
  flags: string[];
  udp: number;
  /** Other pseudosection lines as name → value, e.g. CLIENT-SUBNET → "198.51.100.0/24/0". */
  options: { name: string; value: string }[];
}

export interface DigMessage {
  opcode: string;
  status: string;
  id: number;
  flags: string[];
  counts: { query: number; answer: number; authority: number; additional: number };
  opt: DigOpt | undefined;
  question: DigQuestion[];
  answer: DigRecord[];
  authority: DigRecord[];
  additional: DigRecord[];
  /** 'UDP' or 'TCP' from the ;; SERVER line, when printed. */
  transport: string | undefined;
  msgSize: number | undefined;
}

export interface DigResult extends ToolRun {
  /** Every message dig printed (a BADVERS retry prints two). */
  messages: DigMessage[];
  /** The last message printed. Throws on access when dig printed none (timeout etc.). */
  msg: DigMessage;
  /** dig said ";; Truncated, retrying in TCP mode." */
  retriedOverTcp: boolean;
}

const RR_LINE = /^(\S+)\s+(\d+)\s+(\S+)\s+(\S+)\s*(.*)$/;

/** Parses dig's default text output (one or more messages). */
export function parseDig(stdout: string): DigMessage[] {
  const out: DigMessage[] = [];
  const chunks = stdout.split(/^;; Got answer:\s*$/m).slice(1);
  for (const chunk of chunks) {
    const m: DigMessage = {
      opcode: '',
      status: '',
      id: -1,
      flags: [],
      counts: { query: 0, answer: 0, authority: 0, additional: 0 },
      opt: undefined,
      question: [],
      answer: [],
      authority: [],
      additional: [],
      transport: undefined,
      msgSize: undefined,
    };
    let section: 'none' | 'opt' | 'question' | 'answer' | 'authority' | 'additional' = 'none';
    for (const raw of chunk.split('\n')) {
      const line = raw.replace(/\s+$/, '');
      let mm: RegExpMatchArray | null;
      if ((mm = line.match(/^;; ->>HEADER<<- opcode: (\S+), status: (\S+), id: (\d+)/))) {
        m.opcode = mm[1]!;
        m.status = mm[2]!;
        m.id = Number(mm[3]);
      } else if ((mm = line.match(/^;; flags:([^;]*); QUERY: (\d+), ANSWER: (\d+), AUTHORITY: (\d+), ADDITIONAL: (\d+)/))) {
        m.flags = mm[1]!.trim().split(/\s+/).filter(Boolean);
        m.counts = { query: Number(mm[2]), answer: Number(mm[3]), authority: Number(mm[4]), additional: Number(mm[5]) };
      } else if (line === ';; OPT PSEUDOSECTION:') section = 'opt';
      else if (line === ';; QUESTION SECTION:') section = 'question';
      else if (line === ';; ANSWER SECTION:') section = 'answer';
      else if (line === ';; AUTHORITY SECTION:') section = 'authority';
      else if (line === ';; ADDITIONAL SECTION:') section = 'additional';
      else if ((mm = line.match(/^;; SERVER: .*\((UDP|TCP)\)$/))) m.transport = mm[1];
      else if ((mm = line.match(/^;; MSG SIZE\s+rcvd: (\d+)/))) m.msgSize = Number(mm[1]);
      else if (line === '') {
        if (section !== 'opt') section = 'none';
      } else if (section === 'opt') {
        if ((mm = line.match(/^; EDNS: version: (\d+), flags:([^;]*); udp: (\d+)/))) {
          m.opt = { version: Number(mm[1]), flags: mm[2]!.trim().split(/\s+/).filter(Boolean), udp: Number(mm[3]), options: [] };
        } else if ((mm = line.match(/^; ([^:]+): ?(.*)$/)) && m.opt) {
          m.opt.options.push({ name: mm[1]!, value: mm[2]! });
        } else if (line.startsWith(';;')) section = 'none';
      } else if (section === 'question') {
        if ((mm = line.match(/^;(\S+)\s+(\S+)\s+(\S+)$/))) m.question.push({ name: mm[1]!, class: mm[2]!, type: mm[3]! });
      } else if (section === 'answer' || section === 'authority' || section === 'additional') {
        if ((mm = line.match(RR_LINE))) {
          m[section].push({ name: mm[1]!, ttl: Number(mm[2]), class: mm[3]!, type: mm[4]!, data: mm[5]! });
        }
      }
    }
    out.push(m);
  }
  return out;
}

/** Runs dig against the endpoint: `dig -p PORT @HOST +tries=1 +time=3 <args…>`. */
export async function dig(ep: Endpoint, args: string[], opts: { timeSeconds?: number } = {}): Promise<DigResult> {
  const bin = requireTool('dig');
  const r = await run(bin, ['-p', String(ep.port), `@${ep.host}`, '+tries=1', `+time=${opts.timeSeconds ?? 3}`, ...args]);
  const messages = parseDig(r.stdout);
  const result = {
    ...r,
    messages,
    retriedOverTcp: /^;; Truncated, retrying in TCP mode\./m.test(r.stdout),
  } as DigResult;
  Object.defineProperty(result, 'msg', {
    enumerable: false,
    get() {
      const last = messages[messages.length - 1];
      if (!last) throw new Error(`dig printed no DNS message (exit ${r.code}):\n$ ${r.cmd}\n${r.stdout}${r.stderr}`);
      return last;
    },
  });
  return result;
}

/** A one-line summary of a dig run for assertion messages. */
export function digSummary(r: DigResult): string {
  return `$ ${r.cmd}\n(exit ${r.code})\n${r.stdout}${r.stderr}`;
}

// ---------------------------------------------------------------- kdig

/** One resource record in kdig's RFC 8427 JSON. */
export interface KdigRR {
  NAME: string;
  TYPE: number;
  TYPEname?: string;
  CLASS: number;
  CLASSname?: string;
  TTL: number;
  RDLENGTH: number;
  RDATAHEX?: string;
  [rdataField: string]: unknown;
}

/** kdig's RFC 8427 JSON message (the fields the tests read). */
export interface KdigMessage {
  ID: number;
  QR: number;
  Opcode: number;
  AA: number;
  TC: number;
  RD: number;
  RA: number;
  AD: number;
  CD: number;
  RCODE: number;
  QDCOUNT: number;
  ANCOUNT: number;
  NSCOUNT: number;
  ARCOUNT: number;
  QNAME?: string;
  QTYPE?: number;
  QTYPEname?: string;
  msgLength?: number;
  answerRRs?: KdigRR[];
  authorityRRs?: KdigRR[];
  additionalRRs?: KdigRR[];
}

export interface KdigResult extends ToolRun {
  /** The parsed reply. Throws on access when kdig printed no JSON message. */
  json: KdigMessage;
}

/** Runs `kdig -p PORT @HOST +json +retry=0 +timeout=3 <args…>` and parses its JSON. */
export async function kdig(ep: Endpoint, args: string[]): Promise<KdigResult> {
  const bin = requireTool('kdig');
  const r = await run(bin, ['-p', String(ep.port), `@${ep.host}`, '+json', '+retry=0', '+timeout=3', ...args]);
  const result = { ...r } as KdigResult;
  Object.defineProperty(result, 'json', {
    enumerable: false,
    get() {
      const start = r.stdout.indexOf('{');
      const end = r.stdout.lastIndexOf('}');
      if (start < 0 || end < start) throw new Error(`kdig printed no JSON message (exit ${r.code}):\n$ ${r.cmd}\n${r.stdout}${r.stderr}`);
      return JSON.parse(r.stdout.slice(start, end + 1)) as KdigMessage;
    },
  });
  return result;
}

/** The OPT record of a kdig reply, decoded from its RDATAHEX (undefined without one). */
export function kdigOpt(msg: KdigMessage): { udp: number; version: number; do: boolean; options: { code: number; data: Buffer }[] } | undefined {
  const opt = (msg.additionalRRs ?? []).find((rr) => rr.TYPE === 41);
  if (!opt) return undefined;
  const rdata = Buffer.from(opt.RDATAHEX ?? '', 'hex');
  const options: { code: number; data: Buffer }[] = [];
  for (let p = 0; p + 4 <= rdata.length; ) {
    const code = rdata.readUInt16BE(p);
    const len = rdata.readUInt16BE(p + 2);
    options.push({ code, data: rdata.subarray(p + 4, p + 4 + len) });
    p += 4 + len;
  }
  const ttl = opt.TTL >>> 0;
  return { udp: opt.CLASS, version: (ttl >>> 16) & 0xff, do: (ttl & 0x8000) !== 0, options };
}
