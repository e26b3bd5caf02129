/**
 * Worker-thread entry that compiles a geo table off the primary's event loop (seconds of
 * CPU) and writes it to `out`. workerData: { dbFile, dbHash, geometry, out }. Posts
 * { ok: true, meta } or { ok: false, error }.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { readFileSync } from 'node:fs';
import { compileGeo, type FleetGeometry } from './compile.js';

const { dbFile, dbHash, geometry, out } = workerData as { dbFile: string; dbHash: string; geometry: FleetGeometry; out: string };
try {
  const table = compileGeo(readFileSync(dbFile), geometry, dbHash);
  table.save(out);
  parentPort!.postMessage({ ok: true, meta: table.meta });
} catch (e) {
  parentPort!.postMessage({ ok: false, error: (e as Error).message });
}
