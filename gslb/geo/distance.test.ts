import { test } from 'node:test';
import assert from 'node:assert/strict';
import { biasedDistance, greatCircleKm, rankRegions, type LatLon } from './distance.js';

const CITY: Record<string, LatLon> = {
  london: { lat: 51.5074, lon: -0.1278 },
  paris: { lat: 48.8566, lon: 2.3522 },
  newYork: { lat: 40.7128, lon: -74.006 },
  losAngeles: { lat: 34.0522, lon: -118.2437 },
  sydney: { lat: -33.8688, lon: 151.2093 },
  tokyo: { lat: 35.6762, lon: 139.6503 },
  singapore: { lat: 1.3521, lon: 103.8198 },
  saoPaulo: { lat: -23.5505, lon: -46.6333 },
};

test('greatCircleKm: known city pairs within 1 %', () => {
  // Published great-circle distances (spherical Earth), km.
  const cases: [string, string, number][] = [
    ['london', 'paris', 344],
    ['london', 'newYork', 5570],
    ['losAngeles', 'newYork', 3936],
    ['sydney', 'losAngeles', 12051],
    ['tokyo', 'singapore', 5320],
    ['london', 'saoPaulo', 9490],
  ];
  for (const [a, b, km] of cases) {
    const d = greatCircleKm(CITY[a]!, CITY[b]!);
    assert.ok(Math.abs(d - km) / km < 0.01, `${a}–${b}: ${d.toFixed(0)} km, expected ${km} km ± 1 %`);
    assert.equal(greatCircleKm(CITY[b]!, CITY[a]!), d, `${a}–${b} is symmetric`);
  }
  assert.equal(greatCircleKm(CITY.london!, CITY.london!), 0);
  // Half the circumference: antipodes, and pole to pole.
  const half = Math.PI * 6371.0088;
  assert.ok(Math.abs(greatCircleKm({ lat: 0, lon: 0 }, { lat: 0, lon: 180 }) - half) < 1e-6);
  assert.ok(Math.abs(greatCircleKm({ lat: 90, lon: 0 }, { lat: -90, lon: 0 }) - half) < 1e-6);
  // Across the antimeridian: 179°E to 179°W on the equator is 2°, not 358°.
  const twoDeg = (2 * Math.PI * 6371.0088) / 180;
  assert.ok(Math.abs(greatCircleKm({ lat: 0, lon: 179 }, { lat: 0, lon: -179 }) - twoDeg) < 1e-6);
});

test('biasedDistance: Route 53 bias — +b scales by (1 − b/100), −b divides by (1 + b/100)', () => {
  const cases: [number, number][] = [
    [0, 1000],
    [10, 900],
    [25, 750],
    [50, 500],
    [99, 10],
    [-50, 2000],
    [-75, 4000],
    [-20, 1250],
    [-99, 100000],
  ];
  for (const [b, want] of cases) assert.ok(Math.abs(biasedDistance(1000, b) - want) < 1e-6, `bias ${b}: ${biasedDistance(1000, b)}, expected ${want}`);
  assert.equal(biasedDistance(0, 50), 0);
  assert.equal(biasedDistance(0, -50), 0);
});

test('rankRegions: nearest first by biased distance, ties broken by id, k limits the length', () => {
  const fleet = [
    { id: 'us-va', location: { lat: 39.04, lon: -77.49 }, bias: 0 },
    { id: 'eu-ie', location: { lat: 53.35, lon: -6.26 }, bias: 0 },
    { id: 'ap-tyo', location: { lat: 35.68, lon: 139.69 }, bias: 0 },
    { id: 'sa-sao', location: { lat: -23.55, lon: -46.63 }, bias: 0 },
  ];
  assert.deepEqual(rankRegions(CITY.london!, fleet).map((r) => r.id), ['eu-ie', 'us-va', 'sa-sao', 'ap-tyo']);
  assert.deepEqual(rankRegions(CITY.newYork!, fleet, 2).map((r) => r.id), ['us-va', 'eu-ie']);
  assert.deepEqual(rankRegions(CITY.tokyo!, fleet, 1).map((r) => r.id), ['ap-tyo']);
  const r = rankRegions(CITY.london!, fleet)[0]!;
  assert.equal(r.km, greatCircleKm(CITY.london!, fleet[1]!.location));
  assert.equal(r.biasedKm, r.km);

  // A bias moves the boundary: from London, us-va (≈ 5900 km) beats eu-ie (≈ 460 km) only with a
  // strong positive bias on us-va and a negative one on eu-ie.
  const biased = fleet.map((x) => (x.id === 'us-va' ? { ...x, bias: 95 } : x.id === 'eu-ie' ? { ...x, bias: -50 } : x));
  const ranked = rankRegions(CITY.london!, biased);
  assert.deepEqual(ranked.map((x) => x.id).slice(0, 2), ['us-va', 'eu-ie']);
  assert.ok(Math.abs(ranked[1]!.biasedKm - 2 * ranked[1]!.km) < 1e-9, '-50 doubles the distance');
  assert.ok(Math.abs(ranked[0]!.biasedKm - 0.05 * ranked[0]!.km) < 1e-9, '+95 scales by 0.05');

  // Ties: regions at the same place (or at equal biased distance) are ordered by id, whatever
  // their order in the fleet.
  const here = { lat: 10, lon: 10 };
  const twins = ['zz', 'mm', 'aa', 'm'].map((id) => ({ id, location: here, bias: 0 }));
  assert.deepEqual(rankRegions({ lat: 20, lon: 20 }, twins).map((x) => x.id), ['aa', 'm', 'mm', 'zz']);
  assert.deepEqual(rankRegions({ lat: 20, lon: 20 }, [...twins].reverse()).map((x) => x.id), ['aa', 'm', 'mm', 'zz']);
  // Equal distances from different places: east and west of the client, mirrored.
  const from = { lat: 0, lon: 0 };
  const mirrored = [
    { id: 'west', location: { lat: 0, lon: -3 }, bias: 20 },
    { id: 'east', location: { lat: 0, lon: 3 }, bias: 20 },
  ];
  const e = rankRegions(from, mirrored);
  assert.equal(e[0]!.biasedKm, e[1]!.biasedKm);
  assert.deepEqual(e.map((x) => x.id), ['east', 'west'], 'equal biased distance: by id');
  assert.deepEqual(rankRegions(from, [...mirrored].reverse()).map((x) => x.id), ['east', 'west']);
  // …and a bias breaks the tie whatever the ids say.
  assert.deepEqual(rankRegions(from, [mirrored[0]!, { ...mirrored[1]!, bias: 19 }]).map((x) => x.id), ['west', 'east']);
});
