/**
 * The configuration reference, rendered from the schemas (schema.ts) as Markdown: one row
 * per setting of gridsteer.yaml and of a region file, with its path, type, default and
 * description. docs/configuration.md holds it between the markers below; doc.test.ts fails
 * when the two differ.
 *
 *   node dist/gslb/config/doc.js            print the reference
 *   node dist/gslb/config/doc.js --check    exit 1 when docs/configuration.md is out of date
 *   node dist/gslb/config/doc.js --write    rewrite the reference in docs/configuration.md
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ConfigSchema, RegionSchema } from './schema.js';
import { stringForm, stringKind, typeLabel, type SchemaLike } from './describe.js';

export const START_MARKER = '<!-- generated:start -->';
export const END_MARKER = '<!-- generated:end -->';

/** docs/configuration.md, found from the compiled file (dist/gslb/config/doc.js). */
export const DOC_FILE = fileURLToPath(new URL('../../../docs/configuration.md', import.meta.url));

/** The command that rewrites the generated section (said by every out-of-date message). */
export const WRITE_COMMAND = 'node dist/gslb/config/doc.js --write';

/** One setting: where it is, what it takes. `path` uses `[]` for "every item of the list". */
export interface Setting {
  path: string;
  schema: SchemaLike;
  /** Must be written (required and without a default). */
  required: boolean;
}

/** Every setting under `schema`, depth first in declaration order. */
export function settingsOf(schema: SchemaLike, prefix = ''): Setting[] {
  const out: Setting[] = [];
  const required = new Set(schema.required ?? []);
  for (const [key, s] of Object.entries(schema.properties ?? {})) {
    const path = prefix ? `${prefix}.${key}` : key;
    out.push({ path, schema: s, required: required.has(key) && s.default === undefined });
    if (s.type === 'object' && s.properties) out.push(...settingsOf(s, path));
    if (s.type === 'array' && s.items?.type === 'object' && s.items.properties) out.push(...settingsOf(s.items, `${path}[]`));
  }
  return out;
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

function defaultOf(s: Setting): string {
  if (s.required) return '**required**';
  const d = s.schema.default;
  if (d === undefined || (typeof d === 'object' && d !== null && !Array.isArray(d) && Object.keys(d).length === 0)) return 'optional';
  return `\`${JSON.stringify(d)}\``;
}

function table(schema: SchemaLike): string {
  const rows = settingsOf(schema).map(
    (s) => `| \`${s.path}\` | ${cell(typeLabel(s.schema))} | ${cell(defaultOf(s))} | ${cell(s.schema.description ?? '')} |`,
  );
  return ['| Setting | Type | Default | Description |', '| --- | --- | --- | --- |', ...rows].join('\n');
}

/** The kinds of string used by the settings, with their forms, in order of first use. */
function kinds(...schemas: SchemaLike[]): string {
  const seen = new Map<string, string>();
  for (const schema of schemas) {
    for (const { schema: s } of settingsOf(schema)) {
      for (const x of [s, s.items ?? {}, ...(s.anyOf ?? [])]) {
        const kind = stringKind(x);
        const form = stringForm(x);
        if (kind && form && !seen.has(kind)) seen.set(kind, form);
      }
    }
  }
  const rows = [...seen].map(([kind, form]) => `| ${cell(kind)} | ${cell(form)} |`);
  return ['| Type | Form |', '| --- | --- |', ...rows].join('\n');
}

/** The generated reference (what goes between the markers), ending in a blank line. */
export function renderReference(): string {
  return [
    `<!-- Rendered by gslb/config/doc.ts from gslb/config/schema.ts; after changing the schema run: npm run docs (or npm run build && ${WRITE_COMMAND}) -->`,
    '',
    '### Settings of gridsteer.yaml',
    '',
    '`zones[].records[].ttl` means: the `ttl` of any item of the `records` list of any item of `zones`.',
    'Unknown keys are errors at every level. A setting marked **required** inside an optional mapping',
    'is required when that mapping is written.',
    '',
    table(ConfigSchema as SchemaLike),
    '',
    '### Settings of a region file (regions/ID.yaml)',
    '',
    table(RegionSchema as SchemaLike),
    '',
    '### Kinds of string',
    '',
    kinds(ConfigSchema as SchemaLike, RegionSchema as SchemaLike),
    '',
    '',
  ].join('\n');
}

/** The text between the markers of `doc`; throws when they are missing or out of order. */
export function generatedPart(doc: string): string {
  const a = doc.indexOf(START_MARKER);
  const b = doc.indexOf(END_MARKER);
  if (a < 0 || b < a) throw new Error(`doc: the markers ${START_MARKER} and ${END_MARKER} are missing or out of order: add them, then run ${WRITE_COMMAND}`);
  return doc.slice(a + START_MARKER.length, b).replace(/^\n/, '');
}

/** `doc` with the text between the markers replaced by `reference`. */
export function spliceReference(doc: string, reference: string): string {
  generatedPart(doc);
  const a = doc.indexOf(START_MARKER) + START_MARKER.length;
  const b = doc.indexOf(END_MARKER);
  return `${doc.slice(0, a)}\n${reference}${doc.slice(b)}`;
}

function main(args: string[]): number {
  const reference = renderReference();
  if (args.includes('--write') || args.includes('--check')) {
    const doc = readFileSync(DOC_FILE, 'utf8');
    const next = spliceReference(doc, reference);
    if (next === doc) {
      process.stdout.write(`${DOC_FILE}: the reference is up to date\n`);
      return 0;
    }
    if (args.includes('--check')) {
      process.stderr.write(`doc: ${DOC_FILE}: the reference differs from the schema: run ${WRITE_COMMAND}\n`);
      return 1;
    }
    writeFileSync(DOC_FILE, next);
    process.stdout.write(`${DOC_FILE}: reference rewritten\n`);
    return 0;
  }
  process.stdout.write(reference);
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = main(process.argv.slice(2));
}
