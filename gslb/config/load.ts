/**
 * Loads, validates and freezes the configuration: `gridsteer.yaml` plus every `*.yaml` in
 * its regions folder. Every problem is reported as a ConfigIssue naming the file, the line,
 * the path inside the file, what is expected and how to fix it; loading never half-succeeds.
 */
import { readdirSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { isMap } from 'yaml';
import { closest, formatIssue, got, locateIn, parseYamlFile, pointerToPath, renderPath, type ConfigIssue, type ParsedFile } from './yaml.js';
import { parseCidr } from '../geo/compile.js';
import { parsePrefix } from '../geo/addr.js';
import { ConfigSchema, RegionSchema, type Config, type RegionConfig } from './schema.js';
import { expected, type SchemaLike } from './describe.js';
import { readHttpTls } from './tls.js';
import { checkWindow, safetyFactsOf } from './windows.js';

export { formatIssue, renderPath, type ConfigIssue } from './yaml.js';

/** Thrown by loadConfig (and prepare): carries every issue found, each printable on one line. */
export class ConfigError extends Error {
  readonly issues: ConfigIssue[];
  constructor(issues: ConfigIssue[]) {
    super(`config: ${issues.length} problem${issues.length === 1 ? '' : 's'}:\n` + issues.map(formatIssue).join('\n'));
    this.name = 'ConfigError';
    this.issues = issues;
  }
}

/** A region file as loaded: its content plus where it came from. */
export interface LoadedRegion extends RegionConfig {
  /** Absolute path of the region file. */
  file: string;
}

/** The validated, defaulted, deeply frozen configuration. */
export interface LoadedConfig {
  /** Absolute path of gridsteer.yaml. */
  file: string;
  config: Config;
  /** Sorted by file name. */
  regions: LoadedRegion[];
  /**
   * 16 hex digits of a sha256 over the bytes of every file read and its path relative to
   * gridsteer.yaml's folder: the config version. Equal for equal files wherever they are.
   */
  hash: string;
  /** Maps a path in a file to the line and column of its value (for errors found after validation). */
  locate(file: string, path: (string | number)[]): { line?: number; column?: number };
}

const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: false, allowUnionTypes: true, verbose: true });
ajv.addFormat('ip', { type: 'string', validate: (s: string) => isIP(s) !== 0 });
ajv.addFormat('listen-address', { type: 'string', validate: isListenAddress });
const validateConfig = ajv.compile(ConfigSchema) as ValidateFunction<Config>;
const validateRegion = ajv.compile(RegionSchema) as ValidateFunction<RegionConfig>;

/** `host:port`: IPv4 or localhost, or IPv6 in brackets; port 0–65535. */
function isListenAddress(s: string): boolean {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(s);
  if (!m || Number(m[3]) > 65535) return false;
  return m[1] !== undefined ? isIP(m[1]) === 6 : m[2] === 'localhost' || isIP(m[2]!) === 4;
}

interface Described {
  path: (string | number)[];
  /** Where to point: the value at `path`, the key at `path`, or the key of its parent (a missing key). */
  at: 'key' | 'value' | 'parent';
  /** The schema the value failed. */
  schema?: SchemaLike;
  message: string;
  /** Append the value found to the message. */
  showValue: boolean;
}

/** One Ajv error as a sentence: what is wrong, what is expected, how to fix it. */
function describeAjvError(e: ErrorObject): Described {
  const path = pointerToPath(e.instancePath);
  const p = e.params as Record<string, unknown>;
  const schema = (e.parentSchema ?? {}) as SchemaLike;
  switch (e.keyword) {
    case 'additionalProperties': {
      const key = String(p.additionalProperty);
      const known = Object.keys(schema.properties ?? {});
      const near = closest(key, known);
      const hint = near ? `did you mean "${near}"? ` : '';
      return {
        path: [...path, key],
        at: 'key',
        message: `unknown key "${key}": ${hint}remove it or fix its spelling; the keys allowed here are ${known.join(', ')}`,
        showValue: false,
      };
    }
    case 'required': {
      const key = String(p.missingProperty);
      const desc = schema.properties?.[key]?.description;
      return { path: [...path, key], at: 'parent', message: `missing key "${key}": add it${desc ? ` (${desc})` : ''}`, showValue: false };
    }
    case 'type':
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
    case 'pattern':
    case 'format':
    case 'const':
    case 'enum':
      return { path, at: 'value', schema, message: `must be ${expected(schema)}`, showValue: true };
    case 'minLength':
      return { path, at: 'value', message: schema.minLength === 1 ? 'must not be empty' : `must be at least ${String(p.limit)} characters long`, showValue: true };
    case 'maxLength':
      return { path, at: 'value', message: `must be at most ${String(p.limit)} characters long`, showValue: true };
    case 'minItems':
      return { path, at: 'value', message: `must list at least ${String(p.limit)} item${p.limit === 1 ? '' : 's'}`, showValue: true };
    default:
      return { path, at: 'value', message: e.message ?? e.keyword, showValue: true };
  }
}

/** A hint on how to fix a wrong value, from what was expected and what was found. */
function fixFor(schema: SchemaLike | undefined, v: unknown): string {
  if (!schema) return '';
  const wantsNumber = (s: SchemaLike): boolean => s.type === 'integer' || s.type === 'number' || (s.anyOf ?? []).some(wantsNumber);
  const wantsString = (s: SchemaLike): boolean => s.type === 'string' || (s.anyOf ?? []).some(wantsString);
  if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v)) && wantsNumber(schema)) return ': write the number without quotes';
  if ((typeof v === 'number' || typeof v === 'boolean') && wantsString(schema) && !wantsNumber(schema)) return ': put the value in quotes';
  if (v === null) return ': write a value after the colon, or remove the key';
  if (typeof schema.default !== 'object' && schema.default !== undefined) return `; the default is ${JSON.stringify(schema.default)}`;
  return '';
}

/**
 * Ajv reports every branch of a union (anyOf). When the value's shape matched a branch
 * (errors deeper inside it), keep that branch's errors; when no branch matched even its
 * shape, replace them all by one "must be A or B" for the union.
 */
function resolveUnions(errors: ErrorObject[]): (ErrorObject | Described)[] {
  const unions = errors.filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf').sort((a, b) => b.schemaPath.length - a.schemaPath.length);
  let kept = errors.filter((e) => e.keyword !== 'anyOf' && e.keyword !== 'oneOf');
  const merged: Described[] = [];
  for (const u of unions) {
    const prefix = u.schemaPath + '/';
    const branchOf = (e: ErrorObject) => e.schemaPath.slice(prefix.length).split('/')[0];
    const inUnion = kept.filter((e) => e.schemaPath.startsWith(prefix));
    const deeper = new Set(inUnion.filter((e) => e.instancePath !== u.instancePath).map(branchOf));
    if (deeper.size > 0) {
      kept = kept.filter((e) => !e.schemaPath.startsWith(prefix) || deeper.has(branchOf(e)));
    } else {
      kept = kept.filter((e) => !e.schemaPath.startsWith(prefix));
      merged.push({ ...describeAjvError({ ...u, keyword: 'type' }), showValue: true });
    }
  }
  return [...kept, ...merged];
}

function ajvIssues(pf: ParsedFile, errors: ErrorObject[]): ConfigIssue[] {
  const byPath = new Map<string, { d: Described; messages: string[] }>();
  for (const item of resolveUnions(errors)) {
    const d = 'keyword' in item ? describeAjvError(item) : item;
    const key = `${d.at} ${renderPath(d.path)}`;
    const entry = byPath.get(key) ?? { d, messages: [] };
    if (!entry.messages.includes(d.message)) entry.messages.push(d.message);
    byPath.set(key, entry);
  }
  const out: ConfigIssue[] = [];
  for (const { d, messages } of byPath.values()) {
    let message = messages.join('; ');
    if (d.showValue) {
      const v = valueAt(pf.data, d.path);
      message += got(v) + fixFor(d.schema, v);
    }
    const where = d.at === 'parent' ? locateIn(pf, d.path.slice(0, -1), 'key') : locateIn(pf, d.path, d.at);
    out.push({ file: pf.file, ...where, path: renderPath(d.path), message });
  }
  return out.sort((a, b) => (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0));
}

function valueAt(data: unknown, path: (string | number)[]): unknown {
  let v: unknown = data;
  for (const seg of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[seg as string];
  }
  return v;
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object' && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}

/** One spelling per address (2001:DB8::0:1 and 2001:db8::1 are the same), via the WHATWG URL host parser. */
function canonicalIp(a: string): string {
  return isIP(a) === 6 ? new URL(`http://[${a}]/`).hostname : a;
}

/** An issue when a file's top level is not a mapping (empty, a list, a single value). */
function notAMapping(pf: ParsedFile, what: string, help: string): ConfigIssue | null {
  const d = pf.data;
  if (d !== null && typeof d === 'object' && !Array.isArray(d)) return null;
  const found = d === null || d === undefined ? 'the file is empty' : Array.isArray(d) ? 'found a list' : `found the single value ${JSON.stringify(d)}`;
  return {
    file: pf.file,
    ...(d === null || d === undefined ? {} : locateIn(pf, [])),
    path: '',
    message: `expected a mapping (key: value lines) at the top level, but ${found}: write the ${what} as "key: value" lines (see ${help})`,
  };
}

/**
 * Reads and validates gridsteer.yaml and its regions folder.
 * Throws ConfigError listing every problem; returns a deeply frozen LoadedConfig.
 * Checks that need the DNS layer (record data, zone contents) run in the zone compiler,
 * which reports through `locate` in the same format (see serving.ts prepare()).
 */
export function loadConfig(configFile: string): LoadedConfig {
  const file = resolve(configFile);
  const issues: ConfigIssue[] = [];
  const pf = parseYamlFile(file, issues);
  if (!pf) throw new ConfigError(issues);
  const top = notAMapping(pf, 'settings (zones:, names:, …)', 'docs/configuration.md');
  if (top) throw new ConfigError([top]);
  // Problems in gridsteer.yaml do not stop the region files from being checked, so one run reports both.
  const configOk = validateConfig(pf.data);
  if (!configOk) issues.push(...ajvIssues(pf, validateConfig.errors ?? []));
  const config = pf.data as Config;
  if (typeof config.regionsDir !== 'string') throw new ConfigError(issues);

  const files = new Map<string, ParsedFile>([[file, pf]]);
  const regionsDir = resolve(dirname(file), config.regionsDir);
  const regionsDirAt = { file, ...locateIn(pf, ['regionsDir']), path: 'regionsDir' };
  const setBy = isMap(pf.doc.contents) && pf.doc.contents.has('regionsDir') ? `regionsDir "${config.regionsDir}"` : `regionsDir (default "${config.regionsDir}")`;
  let regionFiles: string[] = [];
  let folderRead = false;
  try {
    if (!statSync(regionsDir).isDirectory()) throw Object.assign(new Error(), { code: 'ENOTDIR' });
    regionFiles = readdirSync(regionsDir)
      .filter((n) => (n.endsWith('.yaml') || n.endsWith('.yml')) && !n.startsWith('.'))
      .sort()
      .map((n) => join(regionsDir, n))
      .filter((f) => f !== file); // regionsDir "." keeps the regions beside gridsteer.yaml
    folderRead = true;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'it does not exist' : code === 'ENOTDIR' ? 'it is not a folder' : code ?? (e as Error).message;
    issues.push({
      ...regionsDirAt,
      message: `cannot read the regions folder ${regionsDir} set by ${setBy}, relative to this file (${why}): create it with one file per region, or set regionsDir to the right folder`,
    });
  }
  const regions: LoadedRegion[] = [];
  const seenIds = new Map<string, string>();
  /** Region ids of files that failed to load: names may refer to them without a second complaint. */
  const brokenIds = new Set<string>();
  for (const rf of regionFiles) {
    const expectedId = basename(rf).replace(/\.ya?ml$/, '');
    const rp = parseYamlFile(rf, issues);
    if (!rp) {
      brokenIds.add(expectedId);
      continue;
    }
    files.set(rf, rp);
    const top = notAMapping(rp, 'region (id:, name:, location:, endpoints:, …)', 'regions/README.md');
    if (top || !validateRegion(rp.data)) {
      issues.push(...(top ? [top] : ajvIssues(rp, validateRegion.errors ?? [])));
      brokenIds.add(expectedId);
      continue;
    }
    const region = rp.data as RegionConfig;
    if (region.id !== expectedId) {
      issues.push({
        file: rf,
        ...locateIn(rp, ['id']),
        path: 'id',
        message: `"${region.id}" differs from the file name: a region's id must equal its file name without .yaml; set id: ${expectedId}, or rename the file to ${region.id}.yaml`,
      });
      brokenIds.add(expectedId);
    }
    const other = seenIds.get(region.id);
    if (other) {
      issues.push({
        file: rf,
        ...locateIn(rp, ['id']),
        path: 'id',
        message: `region id "${region.id}" is also used by ${other}: every region needs its own id; remove one of the two files, or rename one (file and id)`,
      });
    }
    const seenAddr = new Map<string, number>();
    region.endpoints.forEach((ep, i) => {
      const key = canonicalIp(ep.address);
      const first = seenAddr.get(key);
      if (first !== undefined) {
        issues.push({ file: rf, ...locateIn(rp, ['endpoints', i, 'address']), path: renderPath(['endpoints', i, 'address']), message: `${ep.address} is listed twice (also endpoints[${first}]): remove one` });
      } else seenAddr.set(key, i);
    });
    seenIds.set(region.id, rf);
    regions.push({ ...region, file: rf });
  }
  if (regionFiles.length === 0 && folderRead) {
    issues.push({
      ...regionsDirAt,
      message: `no region files (*.yaml) in the regions folder ${regionsDir} set by ${setBy}: add one file per region, e.g. us-va.yaml (format: regions/README.md)`,
    });
  }
  /** Every place gridsteer.yaml names a region must name a loaded one. */
  const checkRegion = (r: string, path: (string | number)[]) => {
    // Without region files, the issue above says it all.
    if (regionFiles.length > 0 && !seenIds.has(r) && !brokenIds.has(r)) {
      const known = [...seenIds.keys()].sort();
      const near = closest(r, known);
      issues.push({
        file,
        ...locateIn(pf, path),
        path: renderPath(path),
        message:
          `unknown region "${r}": no file ${r}.yaml in ${regionsDir}; ${near ? `did you mean "${near}"? ` : ''}` +
          `use one of ${known.join(', ') || '(none loaded)'}, or add ${r}.yaml there`,
      });
    }
  };
  if (configOk) {
    config.names.forEach((n, i) => (n.regions ?? []).forEach((r, j) => checkRegion(r, ['names', i, 'regions', j])));
    config.networks.forEach((n, i) => {
      n.regions.forEach((r, j) => checkRegion(r, ['networks', i, 'regions', j]));
      try {
        parseCidr(n.cidr);
      } catch (e) {
        issues.push({ file, ...locateIn(pf, ['networks', i, 'cidr']), path: renderPath(['networks', i, 'cidr']), message: (e as Error).message });
      }
    });
    config.dns.rateLimit.exempt.forEach((p, i) => {
      try {
        parsePrefix(p);
      } catch (e) {
        const path = ['dns', 'rateLimit', 'exempt', i];
        issues.push({ file, ...locateIn(pf, path), path: renderPath(path), message: (e as Error).message });
      }
    });
    for (const [home, targets] of Object.entries(config.policy.weights)) {
      checkRegion(home, ['policy', 'weights', home]);
      for (const target of Object.keys(targets)) checkRegion(target, ['policy', 'weights', home, target]);
    }
    for (const [source, bound] of Object.entries(config.policy.grid.loss.bindings)) bound.forEach((r, j) => checkRegion(r, ['policy', 'grid', 'loss', 'bindings', source, j]));
    // Collector sections' region grants (ADR 0021): a configured section, regions of the fleet.
    for (const [name, g] of Object.entries(config.ingest.collectors)) {
      if ((config.collectors as Record<string, unknown>)[name] === undefined) {
        const path = ['ingest', 'collectors', name];
        const known = Object.keys(config.collectors).filter((k) => (config.collectors as Record<string, unknown>)[k] !== undefined);
        issues.push({ file, ...locateIn(pf, path), path: renderPath(path), message: `"${name}" is not a configured collector section (configured: ${known.join(', ') || 'none'}): grant regions to a section under collectors:` });
      } else g.regions.forEach((r, j) => checkRegion(r, ['ingest', 'collectors', name, 'regions', j]));
    }
    // Recurring windows: ids once each, the cron expression (node-cron), time zone, regions, safety limits.
    const windowIds = new Map<string, number>();
    const safety = safetyFactsOf(config, regions);
    config.windows.forEach((w, i) => {
      const first = windowIds.get(w.id);
      if (first !== undefined) issues.push({ file, ...locateIn(pf, ['windows', i, 'id']), path: renderPath(['windows', i, 'id']), message: `window id "${w.id}" is also used by windows[${first}]: give each window its own id` });
      else windowIds.set(w.id, i);
      for (const p of checkWindow(w, new Set([...seenIds.keys(), ...brokenIds]), safety, 'config').problems) {
        const path = ['windows', i, ...p.path];
        issues.push({ file, ...locateIn(pf, path), path: renderPath(path), message: p.message });
      }
    });
    // The TLS files are read here too, so that check-config and a reload report them like the rest.
    if (config.http.tls) {
      for (const p of readHttpTls(config.http.tls, dirname(file)).problems) {
        const path = ['http', 'tls', p.key];
        issues.push({ file, ...locateIn(pf, path), path: renderPath(path), message: p.message });
      }
    }
  }
  if (issues.length > 0) throw new ConfigError(issues);

  const base = dirname(file);
  const h = createHash('sha256');
  for (const [name, p] of [...files.entries()].map(([f, p]) => [relative(base, f), p] as const).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    h.update(name).update('\0').update(p.raw).update('\0');
  }
  // The build's time zone data: recurring windows read wall time through it, so nodes with
  // different tz data never share a config version (they would place windows differently).
  h.update(`tz ${process.versions.tz ?? 'unknown'}`);
  const loaded: LoadedConfig = {
    file,
    config: deepFreeze(config),
    regions: deepFreeze(regions),
    hash: h.digest('hex').slice(0, 16),
    locate: (f, path) => {
      const p = files.get(f);
      return p ? locateIn(p, path) : {};
    },
  };
  return Object.freeze(loaded);
}
