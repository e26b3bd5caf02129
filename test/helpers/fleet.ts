/**
 * What the example fleet (gridsteer.yaml + regions/) must answer, and the records the
 * suites add to it. Expected values are written out here, not read from the config, so
 * that a change to the example config that breaks an expectation shows up as a failure.
 */
import { addRecords, type ConfigObject } from './server.js';

export const ZONE = 'gslb.example.com.';
export const API = 'api.gslb.example.com.';
export const WWW = 'www.gslb.example.com.';

/** api.gslb.example.com from the default location (Ashburn, VA): region us-va. */
export const VIRGINIA_A = ['192.0.2.10', '192.0.2.11'];
export const VIRGINIA_AAAA = ['2001:db8:10::10'];
export const API_TTL = 30;
export const ZONE_TTL = 3600;

export const SOA = {
  mname: 'ns1.gslb.example.com.',
  rname: 'hostmaster.example.com.',
  serial: 2026113001,
  refresh: 3600,
  retry: 600,
  expire: 1209600,
  minimum: 60,
};
/** RFC 2308 §5: the SOA in a negative answer carries min(SOA TTL, SOA MINIMUM). */
export const NEGATIVE_TTL = Math.min(ZONE_TTL, SOA.minimum);

export const NAMESERVERS = ['ns1.gslb.example.com.', 'ns2.gslb.example.com.'];
/** In-zone glue: owner → addresses. */
export const GLUE: Record<string, { A: string[]; AAAA: string[] }> = {
  'ns1.gslb.example.com.': { A: ['192.0.2.53'], AAAA: ['2001:db8::53'] },
  'ns2.gslb.example.com.': { A: ['198.51.100.53'], AAAA: ['2001:db8:1::53'] },
};

export const APEX_TXT = 'v=spf1 -all';
export const STATUS_TXT = 'GridSteer example fleet: seven regions on four continents';
export const APEX_CAA = '0 issue "ca.example.net"';

/** A TXT record far over 1232 bytes: only TCP can carry it. */
export const BIG_TXT = Array.from({ length: 1500 }, (_, i) => String.fromCharCode(97 + (i % 26))).join('');
/** A TXT record over 512 bytes but well under 1232. */
export const MEDIUM_TXT = Array.from({ length: 700 }, (_, i) => String.fromCharCode(65 + (i % 26))).join('');

/** A second zone whose SOA TTL (20) is below its MINIMUM (300): negative TTL must be 20. */
export const SECOND_ZONE = 'second.example.';
export const SECOND_NEGATIVE_TTL = 20;

/** Adds `big` and `medium` TXT records to the first zone. */
export function withLargeRecords(cfg: ConfigObject): void {
  addRecords(cfg, { name: 'big', type: 'TXT', data: BIG_TXT }, { name: 'medium', type: 'TXT', data: MEDIUM_TXT });
}

/** Adds the second zone (SOA ttl 20, minimum 300) with one record. */
export function withSecondZone(cfg: ConfigObject): void {
  cfg.zones.push({
    name: 'second.example',
    ttl: 600,
    soa: { rname: 'hostmaster.second.example.', serial: 7, minimum: 300, ttl: SECOND_NEGATIVE_TTL },
    nameservers: [{ name: 'ns1.gslb.example.com.' }],
    records: [{ name: 'host', type: 'A', data: '203.0.113.7' }],
  });
}

/** Splits dig's TXT presentation (`"abc" "def"`) into its strings (handles \" and \\ and \DDD). */
export function digTxtStrings(data: string): string[] {
  const out: string[] = [];
  const re = /"((?:[^"\\]|\\.)*)"/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(data))) {
    out.push(m[1]!.replace(/\\(\d{3}|.)/g, (_, e: string) => (e.length === 3 ? String.fromCharCode(Number(e)) : e)));
  }
  return out;
}

/** Sorted copy, for set comparisons. */
export function sorted<T>(xs: T[]): T[] {
  return [...xs].sort();
}
