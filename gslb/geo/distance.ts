/**
 * Great-circle distance and Route 53's geoproximity bias. Pure; no I/O.
 */

export interface LatLon {
  lat: number;
  lon: number;
}

const EARTH_RADIUS_KM = 6371.0088;
const rad = (d: number) => (d * Math.PI) / 180;

/** Haversine great-circle distance in kilometres. */
export function greatCircleKm(a: LatLon, b: LatLon): number {
  const dLat = rad(b.lat - a.lat);
  const dLon = rad(b.lon - a.lon);
  const s = Math.sin(dLat / 2) ** 2 + Math.cos(rad(a.lat)) * Math.cos(rad(b.lat)) * Math.sin(dLon / 2) ** 2;
  return 2 * EARTH_RADIUS_KM * Math.asin(Math.min(1, Math.sqrt(s)));
}

/**
 * Route 53's bias: a positive bias b (1..99) scales the distance by (1 − b/100), so the
 * region looks nearer; a negative b divides it by (1 + b/100), so −50 doubles it.
 */
export function biasedDistance(km: number, bias: number): number {
  if (bias > 0) return km * (1 - bias / 100);
  if (bias < 0) return km / (1 + bias / 100);
  return km;
}

export interface RankedRegion {
  id: string;
  km: number;
  biasedKm: number;
}

/**
 * Regions ordered by biased distance from `from`, nearest first; ties broken by id so the
 * order is the same on every node. `k` limits the length (default: all).
 */
export function rankRegions(from: LatLon, regions: { id: string; location: LatLon; bias: number }[], k = Infinity): RankedRegion[] {
  return regions
    .map((r) => {
      const km = greatCircleKm(from, r.location);
      return { id: r.id, km, biasedKm: biasedDistance(km, r.bias) };
    })
    .sort((a, b) => a.biasedKm - b.biasedKm || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .slice(0, k);
}
