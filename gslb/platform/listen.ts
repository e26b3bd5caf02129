/**
 * The one parser of `host:port` listen addresses in GridSteer: DNS and the HTTP API
 * (gslb/dns/server.ts re-exports it as `parseListen`), and the collectors' receivers (through
 * collectors/kit/server.ts). A leaf module: it imports only Node built-ins, so the core and the
 * collectors can both use it without either importing the other.
 *
 * Contract: pure, synchronous; it never resolves a name and never touches a socket. It throws
 * an Error whose message starts with the caller's `label` and names the form expected; it
 * never returns a port outside 0–65535 (0: any free port).
 */
import net from 'node:net';

export interface ListenAddress {
  /** An IP address (IPv6 without brackets), or with `hosts: 'name'` possibly a host name. */
  host: string;
  /** 0–65535; 0 asks the OS for a free port. */
  port: number;
}

export interface ListenRules {
  /**
   * `ip`: an IPv4 address, `[IPv6]` or `localhost` (read as 127.0.0.1), checked to be an IP
   * address — what DNS sockets bind to. `name`: also a host name (anything without a colon, a
   * bracket or white space, left for listen() to resolve; `localhost` stays `localhost`), and
   * a bracketed part is taken as it is.
   */
  hosts: 'ip' | 'name';
  /** What the message starts with, before the quoted input: `dns: `, `collectors/<name>: listen: `. */
  label: string;
  /** The forms shown in the message, e.g. `127.0.0.1:5353 or [::1]:5353`. */
  example: string;
}

/** `[v6]:port` or `host:port`, 1–5 digits of port. */
const FORM = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]\s]+)):([0-9]{1,5})$/;
/** What `hosts: 'ip'` lets through unbracketed before the IP check. */
const IP_OR_LOCALHOST = /^(?:[0-9.]+|localhost)$/;

/** Parses `127.0.0.1:53`, `[::1]:53`, `localhost:53` (and with `hosts: 'name'`, `gw.example:9091`). */
export function parseListenWith(s: string, rules: ListenRules): ListenAddress {
  const m = FORM.exec(s);
  const port = m ? Number(m[3]) : NaN;
  const plain = m?.[2];
  if (!m || port > 65535 || (rules.hosts === 'ip' && plain !== undefined && !IP_OR_LOCALHOST.test(plain))) {
    throw new Error(`${rules.label}${JSON.stringify(s)} is not host:port (e.g. ${rules.example})`);
  }
  if (rules.hosts === 'name') return { host: m[1] ?? plain!, port };
  const host = m[1] ?? (plain === 'localhost' ? '127.0.0.1' : plain!);
  if (net.isIP(host) === 0) throw new Error(`${rules.label}${JSON.stringify(host)} in ${JSON.stringify(s)} is not an IP address`);
  return { host, port };
}

/** `host:port`, with IPv6 in brackets: the inverse of parseListenWith for an IP address. */
export function formatListen(a: ListenAddress): string {
  return net.isIPv6(a.host) ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
}
