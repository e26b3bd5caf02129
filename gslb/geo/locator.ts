/**
 * Looks single addresses up in the GeoIP2/GeoLite2 City database, for explain only (never
 * on the DNS path, which answers from the compiled table). The database is read into memory
 * on the first lookup — not at start, so a server nobody asks to explain never holds it —
 * and read again when the file or the geo table in force changes.
 */
import { readFile, stat } from 'node:fs/promises';
import { Reader, type CityResponse } from 'mmdb-lib';
import { formatAddr, maskAddr, parseAddr } from './addr.js';

/** The database file to read and the version of the table in force (a change reopens it). */
export interface LocatorSource {
  file: string;
  version: string;
}

/** What the GeoIP database says about one address (for people; never used to decide). */
export interface GeoPosition {
  lat: number;
  lon: number;
  /** ISO 3166-1 alpha-2. */
  country?: string;
  city?: string;
  accuracyRadiusKm?: number;
  /** The database network holding the address, as CIDR. */
  network?: string;
}

/** Looks an address up in the GeoIP database; null when it holds no location for it. May throw. */
export type LocationLookup = (address: string) => GeoPosition | null;

/** What a database record says about an address, in GeoPosition terms; null without a location. */
export function positionOf(rec: CityResponse | null, prefix: number, address: string): GeoPosition | null {
  const lat = rec?.location?.latitude;
  const lon = rec?.location?.longitude;
  if (typeof lat !== 'number' || typeof lon !== 'number') return null;
  const p: GeoPosition = { lat, lon };
  const country = rec?.country?.iso_code ?? rec?.registered_country?.iso_code;
  if (country) p.country = country;
  const city = rec?.city?.names?.en;
  if (city) p.city = city;
  if (typeof rec?.location?.accuracy_radius === 'number') p.accuracyRadiusKm = rec.location.accuracy_radius;
  const a = parseAddr(address);
  if (a) p.network = a.family === 6 && prefix > 64 ? `${address}/${prefix}` : formatAddr(maskAddr(a, prefix), prefix);
  return p;
}

export class DatabaseLocator {
  private reader: Reader<CityResponse> | null = null;
  private key = '';
  private loading: { key: string; done: Promise<Reader<CityResponse>> } | null = null;

  /** `source()` names the database now in use, or null when there is none (geoip disabled). */
  constructor(private readonly source: () => LocatorSource | null) {}

  /**
   * A lookup over the database now in use (read on first use, again after a change), or null
   * when there is none. Rejects when the file cannot be read or is not a MaxMind DB.
   */
  async current(): Promise<LocationLookup | null> {
    const src = this.source();
    if (src === null) {
      this.reader = null;
      this.key = '';
      return null;
    }
    const st = await stat(src.file);
    const key = `${src.file}|${src.version}|${st.size}|${st.mtimeMs}`;
    let reader = this.reader;
    if (reader === null || key !== this.key) {
      let pending = this.loading;
      if (pending === null || pending.key !== key) {
        const done = readFile(src.file).then((buf) => new Reader<CityResponse>(buf));
        pending = { key, done };
        this.loading = pending;
        done.then(
          (r) => {
            if (this.loading?.key === key) {
              this.reader = r;
              this.key = key;
              this.loading = null;
            }
          },
          () => {
            if (this.loading?.key === key) this.loading = null;
          },
        );
      }
      reader = await pending.done;
    }
    const r = reader;
    return (address: string) => {
      const [rec, prefix] = r.getWithPrefixLength(address);
      return positionOf(rec, prefix, address);
    };
  }
}
