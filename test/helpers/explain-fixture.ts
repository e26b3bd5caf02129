/**
 * Test-only fixture for explain (not a test file itself): a three-region fleet, a small
 * synthetic geo table with geoip, override and default cells in both families, a stub
 * database lookup, and the ExplainContext that ties them together. Used by
 * serve/explain.test.ts and api/explain.test.ts.
 *
 * IPv4 cells: 0/8 default · 1/8 geoip [a b c] · 2/8 override [c a] · 3/8 geoip [b a c] ·
 * 4.0.0.0 and up default. IPv6 cells (top 64 bits): below 2a00:: default · 2a00::/8 geoip
 * [a b c] · 2b00::/8 geoip [b a c] · 2c00:: and up default.
 */
import { GeoTable, type RankingEntry } from '../../gslb/geo/table.js';
import { compileZones, type CompiledZones, type ZoneSnapshot } from '../../gslb/dns/zone.js';
import type { WhenAllDownPolicy } from '../../gslb/model/policy.js';
import type { FleetGeometry } from '../../gslb/geo/compile.js';
import type { Plan } from '../../gslb/model/types.js';
import { planFromSteps, type FleetStep } from './policy.js';
import type { ExplainContext } from '../../gslb/serve/serving.js';
import type { GeoPosition } from '../../gslb/geo/locator.js';

export const NOW = 1_800_000_000_000;

/** a in the west, b 700 km east of it, c 1400 km east; the default location is at a. */
export const FLEET: FleetGeometry = {
  regions: [
    { id: 'a', location: { lat: 50, lon: 0 }, bias: 0 },
    { id: 'b', location: { lat: 50, lon: 10 }, bias: 0 },
    { id: 'c', location: { lat: 50, lon: 20 }, bias: 20 },
  ],
  defaultLocation: { lat: 50, lon: 0 },
  overrides: [{ cidr: '2.0.0.0/8', regions: ['c', 'a'] }],
};

export const ADDRS = {
  a: { v4: ['192.0.2.1'], v6: ['2001:db8:a::1'] },
  b: { v4: ['192.0.2.2'], v6: [] as string[] },
  c: { v4: ['192.0.2.3', '192.0.2.4'], v6: ['2001:db8:c::1'] },
};

/** One zone; `api` is served by every region, `bc` by b and c only, `www` is a CNAME to api. */
export function snapshot(whenAllDown: WhenAllDownPolicy = 'nearest'): ZoneSnapshot {
  return {
    zones: [
      {
        name: 'gslb.example.com',
        ttl: 3600,
        soa: { rname: 'hostmaster.example.com.', serial: 1, refresh: 3600, retry: 600, expire: 1209600, minimum: 60, ttl: 300 },
        nameservers: [{ name: 'ns1', addresses: ['192.0.2.53'] }],
        records: [{ name: 'www', type: 'CNAME', data: 'api' }],
      },
    ],
    names: [
      { name: 'api.gslb.example.com', ttl: 30, whenAllDown },
      { name: 'bc.gslb.example.com', ttl: 20, regions: ['b', 'c'], whenAllDown },
    ],
    regions: (['a', 'b', 'c'] as const).map((id) => ({ id, endpoints: [...ADDRS[id].v4, ...ADDRS[id].v6].map((address) => ({ address })) })),
  };
}

const RANKINGS: RankingEntry[] = [
  { regions: ['a', 'b', 'c'], origin: 'default', note: 'not in the database' },
  { regions: ['a', 'b', 'c'], origin: 'geoip' },
  { regions: ['c', 'a'], origin: 'override', note: '2.0.0.0/8' },
  { regions: ['b', 'a', 'c'], origin: 'geoip' },
];

export function fixtureTable(): GeoTable {
  return new GeoTable(
    { dbHash: 'fixture0', geometryHash: 'fixture1', databaseType: 'GeoLite2-City', databaseBuilt: '2026-01-01T00:00:00.000Z', builtAt: 0, buildMs: 0, networks4: 5, networks6: 4 },
    RANKINGS,
    Uint32Array.of(0, 0x01000000, 0x02000000, 0x03000000, 0x04000000),
    Uint16Array.of(0, 1, 2, 3, 0),
    Uint32Array.of(0, 0x2a000000, 0x2b000000, 0x2c000000),
    Uint32Array.of(0, 0, 0, 0),
    Uint16Array.of(0, 1, 3, 0),
  );
}

/** The stub database: 1/8 and 2a00::/8 near a, 3/8 and 2b00::/8 near b, 2/8 near b (its override says c). */
export function lookup(address: string): GeoPosition | null {
  if (/^1\./.test(address)) return { lat: 50.1, lon: 0.2, country: 'GB', city: 'Westtown', accuracyRadiusKm: 20, network: '1.0.0.0/8' };
  if (/^2\./.test(address)) return { lat: 50.1, lon: 10.1, country: 'DE', accuracyRadiusKm: 100 };
  if (/^3\./.test(address)) return { lat: 49.9, lon: 9.8, country: 'DE', city: 'Middleton' };
  if (/^2a/.test(address)) return { lat: 50, lon: 0.5, country: 'GB' };
  if (/^2b/.test(address)) return { lat: 50, lon: 10.5, country: 'DE' };
  return null;
}

/** A plan of one fleet-wide step at 0 and, optionally, later ones a minute after NOW. */
export function planWith(step: Omit<FleetStep, 'at'> = {}, later: Omit<FleetStep, 'at'>[] = []): Plan {
  return planFromSteps([{ at: 0, reasons: ['fixture step'], ...step }, ...later.map((s) => ({ at: NOW + 60_000, reasons: ['later'], ...s }))], 'fixture:1');
}

export function context(o: { plan?: Plan; whenAllDown?: WhenAllDownPolicy; geo?: GeoTable; zones?: CompiledZones } = {}): ExplainContext {
  return {
    zones: o.zones ?? compileZones(snapshot(o.whenAllDown)),
    plan: o.plan ?? planWith(),
    geometry: FLEET,
    minTtl: 5,
    geo: o.geo ?? fixtureTable(),
    lookup: async () => lookup,
  };
}
