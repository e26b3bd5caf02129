/**
 * Reads only `location.latitude` and `location.longitude` from a MaxMind DB data record,
 * skipping everything else without building it (a GeoLite2 City record carries names in
 * eight languages; decoding them whole costs most of a compile). MaxMind DB format 2.0,
 * "Output Data Section". Throws on malformed data; the caller falls back to the full decoder.
 */

const T_POINTER = 1;
const T_UTF8 = 2;
const T_DOUBLE = 3;
const T_MAP = 7;
const T_ARRAY = 11;
const T_BOOLEAN = 14;

export class MmdbLocationReader {
  /** `dataStart`: offset of the data section in `db` (search tree size + 16). */
  constructor(
    private readonly db: Buffer,
    private readonly dataStart: number,
  ) {}

  /** Type, size and the offset of the payload for the field at `at`. */
  private ctrl(at: number): [type: number, size: number, payload: number] {
    const db = this.db;
    const c = db[at]!;
    let type = c >>> 5;
    let p = at + 1;
    if (type === T_POINTER) {
      const ss = (c >>> 3) & 3;
      const v = c & 7;
      let ptr: number;
      if (ss === 0) ptr = (v << 8) | db[p]!;
      else if (ss === 1) ptr = ((v << 16) | (db[p]! << 8) | db[p + 1]!) + 2048;
      else if (ss === 2) ptr = ((v << 24) | (db[p]! << 16) | (db[p + 1]! << 8) | db[p + 2]!) + 526336;
      else ptr = db.readUInt32BE(p);
      // For pointers, `size` is the pointer's own length and `payload` the target.
      return [T_POINTER, 1 + ss + 1, this.dataStart + ptr];
    }
    if (type === 0) {
      type = 7 + db[p]!;
      p++;
    }
    let size = c & 31;
    if (size === 29) size = 29 + db[p++]!;
    else if (size === 30) {
      size = 285 + ((db[p]! << 8) | db[p + 1]!);
      p += 2;
    } else if (size === 31) {
      size = 65821 + ((db[p]! << 16) | (db[p + 1]! << 8) | db[p + 2]!);
      p += 3;
    }
    return [type, size, p];
  }

  /** Offset just past the field at `at`. */
  private skip(at: number): number {
    const [type, size, p] = this.ctrl(at);
    switch (type) {
      case T_POINTER:
        return at + size;
      case T_MAP: {
        let o = p;
        for (let i = 0; i < size; i++) o = this.skip(this.skip(o));
        return o;
      }
      case T_ARRAY: {
        let o = p;
        for (let i = 0; i < size; i++) o = this.skip(o);
        return o;
      }
      case T_BOOLEAN:
        return p;
      default:
        return p + size;
    }
  }

  /** The map at `at` (following one pointer), as [size, first pair offset]. */
  private mapAt(at: number): [number, number] {
    let [type, size, p] = this.ctrl(at);
    if (type === T_POINTER) [type, size, p] = this.ctrl(p);
    if (type !== T_MAP) throw new Error(`mmdb: expected a map at ${at}, found type ${type}`);
    return [size, p];
  }

  /** The UTF-8 key at `at` (following one pointer). */
  private keyAt(at: number): string {
    let [type, size, p] = this.ctrl(at);
    if (type === T_POINTER) [type, size, p] = this.ctrl(p);
    if (type !== T_UTF8) throw new Error(`mmdb: expected a string key at ${at}, found type ${type}`);
    return this.db.toString('latin1', p, p + size);
  }

  private doubleAt(at: number): number | undefined {
    let [type, , p] = this.ctrl(at);
    if (type === T_POINTER) [type, , p] = this.ctrl(p);
    return type === T_DOUBLE ? this.db.readDoubleBE(p) : undefined;
  }

  /** The record's location, or null when it has none. `record` is an offset into `db`. */
  location(record: number): { lat: number; lon: number } | null {
    const [n, first] = this.mapAt(record);
    let o = first;
    for (let i = 0; i < n; i++) {
      const key = this.keyAt(o);
      const v = this.skip(o);
      if (key === 'location') {
        const [m, lf] = this.mapAt(v);
        let lat: number | undefined;
        let lon: number | undefined;
        let q = lf;
        for (let j = 0; j < m; j++) {
          const k = this.keyAt(q);
          const val = this.skip(q);
          if (k === 'latitude') lat = this.doubleAt(val);
          else if (k === 'longitude') lon = this.doubleAt(val);
          q = this.skip(val);
        }
        return lat === undefined || lon === undefined ? null : { lat, lon };
      }
      o = this.skip(v);
    }
    return null;
  }
}
