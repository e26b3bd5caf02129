/** DNS protocol numbers used by GridSteer (RFC 1035, 2782, 3596, 6891, 7871, 8482, 8659). */

export const QTYPE = {
  A: 1,
  NS: 2,
  CNAME: 5,
  SOA: 6,
  PTR: 12,
  HINFO: 13,
  MX: 15,
  TXT: 16,
  AAAA: 28,
  SRV: 33,
  OPT: 41,
  IXFR: 251,
  AXFR: 252,
  ANY: 255,
  CAA: 257,
} as const;

export const QCLASS = { IN: 1, CH: 3, NONE: 254, ANY: 255 } as const;

export const RCODE = {
  NOERROR: 0,
  FORMERR: 1,
  SERVFAIL: 2,
  NXDOMAIN: 3,
  NOTIMP: 4,
  REFUSED: 5,
  /** Extended (needs OPT): upper 8 bits go in the OPT TTL. */
  BADVERS: 16,
  /** Extended: a bad server cookie (RFC 7873 §8). */
  BADCOOKIE: 23,
} as const;

export const OPCODE_QUERY = 0;

/** EDNS option codes. */
export const EDNS_OPT = { NSID: 3, ECS: 8, COOKIE: 10, KEEPALIVE: 11 } as const;

/** Header flag bits in the 16-bit flags word. */
export const FLAG = {
  QR: 0x8000,
  AA: 0x0400,
  TC: 0x0200,
  RD: 0x0100,
  RA: 0x0080,
  AD: 0x0020,
  CD: 0x0010,
} as const;

/** The DO bit in the OPT record's TTL field (low 16 bits hold the flags). */
export const EDNS_DO = 0x8000;

/** The classic UDP limit without EDNS (RFC 1035 §4.2.1). */
export const UDP_MIN = 512;

const typeNames = new Map<number, string>(Object.entries(QTYPE).map(([k, v]) => [v, k]));
/** Mnemonic of a type (`TYPE65` for unknown ones, RFC 3597). */
export function typeName(t: number): string {
  return typeNames.get(t) ?? `TYPE${t}`;
}

const rcodeNames = new Map<number, string>(Object.entries(RCODE).map(([k, v]) => [v, k]));
export function rcodeName(r: number): string {
  return rcodeNames.get(r) ?? `RCODE${r}`;
}

/** Looks up a type by mnemonic; undefined for unknown ones. */
export function typeByName(name: string): number | undefined {
  const upper = name.toUpperCase();
  if (upper in QTYPE) return QTYPE[upper as keyof typeof QTYPE];
  const m = /^TYPE(\d{1,5})$/.exec(upper);
  return m ? Number(m[1]) : undefined;
}
