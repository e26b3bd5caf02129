/**
 * Loads, validates and freezes the configuration: `gridsteer.yaml` plus every `*.yaml` in
 * its regions folder. Every problem is reported as a ConfigIssue naming the file, the line,
 * the path inside the file and what is expected; loading never half-succeeds.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import { basename, dirname, join, resolve } from 'node:path';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { LineCounter, parseDocument, isMap, isSeq, isScalar, type Node as YamlNode } from 'yaml';
import { ConfigSchema, RegionSchema, type Config, type RegionConfig } from './schema.js';

/** One problem in one file. `path` is JSON-pointer-like, rendered as `zones[0].soa.serial`. */
export interface ConfigIssue {
  file: string;
  line?: number;
  column?: number;
  path: string;
  message: string;
}

/** Thrown by loadConfig: carries every issue found, each printable on one line. */
export class ConfigError extends Error {
  readonly issues: ConfigIssue[];
  constructor(issues: ConfigIssue[]) {
    super(`config: ${issues.length} problem${issues.length === 1 ? '' : 's'}:\n` + issues.map(formatIssue).join('\n'));
    this.name = 'ConfigError';
    this.issues = issues;
  }
}

export function formatIssue(i: ConfigIssue): string {
  const where = i.line ? `${i.file}:${i.line}:${i.column ?? 1}` : i.file;
  return `  ${where}: ${i.path || '(top level)'}: ${i.message}`;
}

/** A region file as loaded: its content plus where it came from. */
export interface LoadedRegion extends RegionConfig {
  file: string;
}

/** The validated, defaulted, frozen configuration. */
export interface LoadedConfig {
  /** Absolute path of gridsteer.yaml. */
  file: string;
  config: Config;
  regions: LoadedRegion[];
  /** sha256 over the raw bytes of every file read, in a fixed order: the config version. */
  hash: string;
  /** Maps an issue path in a file to a line number (for errors found after validation). */
  locate(file: string, path: (string | number)[]): { line?: number; column?: number };
}

const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: false, allowUnionTypes: true });
ajv.addFormat('ip', { type: 'string', validate: (s: string) => isIP(s) !== 0 });
const validateConfig = ajv.compile(ConfigSchema) as ValidateFunction<Config>;
const validateRegion = ajv.compile(RegionSchema) as ValidateFunction<RegionConfig>;

interface ParsedFile {
  file: string;
  raw: Buffer;
  data: unknown;
  doc: ReturnType<typeof parseDocument>;
  lines: LineCounter;
}

function parseYamlFile(file: string, issues: ConfigIssue[]): ParsedFile | null {
  let raw: Buffer;
  try {
    raw = readFileSync(file);
  } catch (e) {
    issues.push({ file, path: '', message: `cannot read the file (${(e as NodeJS.ErrnoException).code ?? String(e)}): check the path` });
    return null;
  }
  const lines = new LineCounter();
  const doc = parseDocument(raw.toString('utf8'), { lineCounter: lines, uniqueKeys: true, prettyErrors: false });
  if (doc.errors.length > 0) {
    for (const err of doc.errors) {
      const pos = lines.linePos(err.pos[0]);
      issues.push({ file, line: pos.line, column: pos.col, path: '', message: `YAML syntax: ${err.message.split('\n')[0]}` });
    }
    return null;
  }
  return { file, raw, data: doc.toJS({ maxAliasCount: 100 }), doc, lines };
}

/** Finds the YAML node at a path and returns its position (the key's, for a missing child). */
function locateIn(pf: ParsedFile, path: (string | number)[]): { line?: number; column?: number } {
  let node: unknown = pf.doc.contents;
  let last: YamlNode | null = (node as YamlNode) ?? null;
  for (const seg of path) {
    if (isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(seg));
      if (!pair) break;
      last = (pair.key as YamlNode) ?? last;
      node = pair.value;
      if (node) last = node as YamlNode;
    } else if (isSeq(node)) {
      const item = node.items[Number(seg)];
      if (!item) break;
      node = item;
      last = item as YamlNode;
    } else break;
  }
  const range = last?.range;
  if (!range) return {};
  const pos = pf.lines.linePos(range[0]);
  return { line: pos.line, column: pos.col };
}

function pointerToPath(pointer: string): (string | number)[] {
  if (!pointer) return [];
  return pointer
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

/** Renders ['zones', 0, 'soa'] as `zones[0].soa`. */
export function renderPath(path: (string | number)[]): string {
  let out = '';
  for (const seg of path) out += typeof seg === 'number' ? `[${seg}]` : out ? `.${seg}` : seg;
  return out;
}

function describeAjvError(e: ErrorObject): { path: (string | number)[]; message: string } {
  const path = pointerToPath(e.instancePath);
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'additionalProperties':
      return {
        path: [...path, String(p.additionalProperty)],
        message: `unknown key "${String(p.additionalProperty)}": remove it or check its spelling`,
      };
    case 'required':
      return { path: [...path, String(p.missingProperty)], message: `missing: add "${String(p.missingProperty)}"` };
    case 'enum':
      return { path, message: `must be one of ${JSON.stringify(p.allowedValues)}` };
    case 'const':
      return { path, message: `must be ${JSON.stringify(p.allowedValue)}` };
    case 'pattern':
      return { path, message: `has the wrong form (expected to match ${String(p.pattern)})` };
    case 'format':
      return { path, message: `must be a valid ${String(p.format) === 'ip' ? 'IPv4 or IPv6 address' : String(p.format)}` };
    default:
      return { path, message: e.message ?? e.keyword };
  }
}

/**
 * Ajv reports every branch of a union; keep the most specific messages: drop `anyOf`
 * summaries when a branch error under the same path exists, and merge literal branches.
 */
function ajvIssues(pf: ParsedFile, errors: ErrorObject[]): ConfigIssue[] {
  const byPath = new Map<string, { path: (string | number)[]; messages: string[]; literals: unknown[] }>();
  for (const e of errors) {
    if (e.keyword === 'anyOf' || e.keyword === 'oneOf') continue;
    const d = describeAjvError(e);
    const key = renderPath(d.path);
    const entry = byPath.get(key) ?? { path: d.path, messages: [], literals: [] };
    if (e.keyword === 'const') entry.literals.push((e.params as { allowedValue: unknown }).allowedValue);
    else if (!entry.messages.includes(d.message)) entry.messages.push(d.message);
    byPath.set(key, entry);
  }
  const out: ConfigIssue[] = [];
  for (const [key, entry] of byPath) {
    const messages = [...entry.messages];
    if (entry.literals.length > 0) messages.unshift(`must be one of ${entry.literals.map((l) => JSON.stringify(l)).join(', ')}`);
    const got = valueAt(pf.data, entry.path);
    const gotText = got === undefined ? '' : ` (got ${JSON.stringify(got)?.slice(0, 60)})`;
    out.push({ file: pf.file, ...locateIn(pf, entry.path), path: key, message: messages.join('; or ') + gotText });
  }
  return out;
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

/**
 * Reads and validates gridsteer.yaml and its regions folder.
 * Throws ConfigError listing every problem; returns a deeply frozen LoadedConfig.
 * Checks that need the DNS layer (record data, zone contents) run in the zone compiler,
 * which reports through `locate` in the same format.
 */
export function loadConfig(configFile: string): LoadedConfig {
  const file = resolve(configFile);
  const issues: ConfigIssue[] = [];
  const pf = parseYamlFile(file, issues);
  if (!pf) throw new ConfigError(issues);
  if (pf.data === null || typeof pf.data !== 'object' || Array.isArray(pf.data)) {
    throw new ConfigError([{ file, path: '', message: 'expected a mapping (key: value) at the top level' }]);
  }
  if (!validateConfig(pf.data)) {
    throw new ConfigError(ajvIssues(pf, validateConfig.errors ?? []));
  }
  const config = pf.data as Config;

  const files = new Map<string, ParsedFile>([[file, pf]]);
  const regionsDir = resolve(dirname(file), config.regionsDir);
  let regionFiles: string[] = [];
  try {
    if (!statSync(regionsDir).isDirectory()) throw new Error('not a folder');
    regionFiles = readdirSync(regionsDir)
      .filter((n) => n.endsWith('.yaml') || n.endsWith('.yml'))
      .sort()
      .map((n) => join(regionsDir, n));
  } catch (e) {
    issues.push({
      file,
      ...locateIn(pf, ['regionsDir']),
      path: 'regionsDir',
      message: `cannot read the regions folder ${regionsDir} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): create it or fix the path`,
    });
  }
  const regions: LoadedRegion[] = [];
  const seenIds = new Map<string, string>();
  for (const rf of regionFiles) {
    const rp = parseYamlFile(rf, issues);
    if (!rp) continue;
    files.set(rf, rp);
    if (!validateRegion(rp.data)) {
      issues.push(...ajvIssues(rp, validateRegion.errors ?? []));
      continue;
    }
    const region = rp.data as RegionConfig;
    const expected = basename(rf).replace(/\.ya?ml$/, '');
    if (region.id !== expected) {
      issues.push({ file: rf, ...locateIn(rp, ['id']), path: 'id', message: `must equal the file name "${expected}" (got "${region.id}"): rename the file or the id` });
    }
    const other = seenIds.get(region.id);
    if (other) issues.push({ file: rf, ...locateIn(rp, ['id']), path: 'id', message: `region id "${region.id}" is also used by ${other}` });
    seenIds.set(region.id, rf);
    regions.push({ ...region, file: rf });
  }
  if (regionFiles.length === 0 && issues.length === 0) {
    issues.push({ file, ...locateIn(pf, ['regionsDir']), path: 'regionsDir', message: `no region files (*.yaml) in ${regionsDir}: add at least one (see regions/README.md)` });
  }
  config.names.forEach((n, i) => {
    for (const [j, r] of (n.regions ?? []).entries()) {
      if (!seenIds.has(r)) {
        issues.push({ file, ...locateIn(pf, ['names', i, 'regions', j]), path: renderPath(['names', i, 'regions', j]), message: `unknown region "${r}": known are ${[...seenIds.keys()].join(', ') || '(none)'}` });
      }
    }
  });
  if (issues.length > 0) throw new ConfigError(issues);

  const h = createHash('sha256');
  for (const [name, p] of [...files.entries()].sort(([a], [b]) => (a < b ? -1 : 1))) {
    h.update(name).update('\0').update(p.raw).update('\0');
  }
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
  return loaded;
}
