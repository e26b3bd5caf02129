/**
 * Worker-thread entry that compiles a geo table off the primary's event loop (seconds of
 * CPU) and writes it to `out`. workerData: { dbFile, dbHash, geometry, out }. Posts
 * { progress } as it goes (the fraction walked, at most once per whole per cent), then
 * { ok: true, meta } or { ok: false, error }.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { readFileSync } from 'node:fs';
import { compileGeo, type FleetGeometry } from './compile.js';

const { dbFile, dbHash, geometry, out } = workerData as { dbFile: string; dbHash: string; geometry: FleetGeometry; out: string };
try {
  let last = -1;
  const table = compileGeo(readFileSync(dbFile), geometry, dbHash, (f) => {
    const pct = Math.floor(f * 100);
    if (pct > last) {
      last = pct;
      parentPort!.postMessage({ progress: f });
    }
  });
  table.save(out);
  parentPort!.postMessage({ ok: true, meta: table.meta });
} catch (e) {
  parentPort!.postMessage({ ok: false, error: (e as Error).message });
}
