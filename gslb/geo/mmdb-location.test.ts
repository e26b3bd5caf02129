/**
 * The location-only reader must agree with mmdb-lib's full decoder on real GeoLite2 City
 * records: every distinct record of a deterministic sample of networks, both families.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { openMmdb, walkTree } from './mmdb-walk.js';
import { defaultCacheDir, unpackEmbedded } from './service.js';

test('location-only reader equals the full decoder on 30,000 GeoLite2 City records', async () => {
  const file = await unpackEmbedded(defaultCacheDir());
  const m = openMmdb(readFileSync(file));
  const pointers: number[] = [];
  const seen = new Set<number>();
  for (const fam of [4, 6] as const) {
    let i = 0;
    walkTree(m.tree, fam, (_h, _l, _p, ptr) => {
      // Every 7th network: spread over the whole address space.
      if (ptr >= 0 && i++ % 7 === 0 && !seen.has(ptr) && pointers.length < 30_000) {
        seen.add(ptr);
        pointers.push(ptr);
      }
    });
  }
  assert.ok(pointers.length >= 20_000, `sampled ${pointers.length} records`);
  let withLocation = 0;
  for (const p of pointers) {
    const rec = m.decode(p) as { location?: { latitude?: number; longitude?: number } } | null;
    const lat = rec?.location?.latitude;
    const lon = rec?.location?.longitude;
    const full = typeof lat === 'number' && typeof lon === 'number' ? { lat, lon } : null;
    if (full) withLocation++;
    assert.deepEqual(m.location(p), full, `record ${p}`);
  }
  assert.ok(withLocation > pointers.length * 0.9, `most records have a location (${withLocation}/${pointers.length})`);
});
