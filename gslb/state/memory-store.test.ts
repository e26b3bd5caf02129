/**
 * MemoryStore against the StateStore conformance suite, without a file and with an
 * append-only file in a temp dir. Memory-specific behaviour is tested elsewhere.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryStore } from './memory-store.js';
import { storeConformance } from '../../test/helpers/store-conformance.js';

storeConformance('MemoryStore (no file)', async () => {
  const store = new MemoryStore({ file: null });
  await store.start();
  return { store, cleanup: () => store.close() };
});

storeConformance('MemoryStore (append-only file)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gridsteer-memstore-'));
  const store = new MemoryStore({ file: join(dir, 'state.jsonl') });
  await store.start();
  return {
    store,
    cleanup: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
