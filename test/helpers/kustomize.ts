/**
 * A small kustomize, for the tests of infra/kubernetes/: no kustomize or kubectl is needed.
 *
 * It renders the few kustomization fields those manifests use, the way kustomize v5 does,
 * and refuses everything else with an error naming the field, so that a manifest never
 * relies on a feature the tests do not render:
 *
 * - `apiVersion: kustomize.config.k8s.io/v1beta1`, `kind: Kustomization`;
 * - `resources`: YAML files inside the kustomization's folder (any number of documents), or
 *   folders with a kustomization of their own (anywhere, e.g. `../../base`); no URLs;
 * - `namespace`: set on every namespaced object; a Namespace object must carry that name;
 * - `configMapGenerator`: entries of `name`, `files` (`path` or `key=path`, inside the folder,
 *   UTF-8 text) and `options.labels`; the generated name gets kustomize's content hash
 *   suffix, and references to the ConfigMap in pod templates (volumes, projected volumes,
 *   env and envFrom) are renamed, at this level and above.
 *
 * YAML is read strictly: duplicate keys are errors, and so is any plain scalar that YAML 1.1
 * (what kubectl reads) and YAML 1.2 read differently (`yes`, `0440`, `1:30`, …): quote it.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { basename, isAbsolute, join, relative, resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { parseAllDocuments } from 'yaml';

/** A Kubernetes object as rendered: plain JSON. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string>; [k: string]: unknown };
  [k: string]: unknown;
}

export interface Rendered {
  objects: K8sObject[];
  /** Every file read (absolute, real paths): kustomizations, resources, generator files. */
  files: Set<string>;
}

export class KustomizeError extends Error {
  constructor(message: string) {
    super(`kustomize: ${message}`);
    this.name = 'KustomizeError';
  }
}

const KUSTOMIZATION_FIELDS = new Set(['apiVersion', 'kind', 'resources', 'namespace', 'configMapGenerator']);
const GENERATOR_FIELDS = new Set(['name', 'files', 'options']);
const GENERATOR_OPTIONS = new Set(['labels']);
/** Kinds that have no namespace (of those a GridSteer deployment could hold). */
const CLUSTER_SCOPED = new Set([
  'Namespace',
  'ClusterRole',
  'ClusterRoleBinding',
  'CustomResourceDefinition',
  'PriorityClass',
  'StorageClass',
  'PersistentVolume',
  'IngressClass',
  'ValidatingWebhookConfiguration',
  'MutatingWebhookConfiguration',
]);
/** Kinds whose pod template `renameConfigMaps` follows, and where the template is. */
const POD_TEMPLATES: Record<string, (o: K8sObject) => unknown> = {
  Deployment: (o) => (o.spec as { template?: unknown } | undefined)?.template,
  DaemonSet: (o) => (o.spec as { template?: unknown } | undefined)?.template,
  StatefulSet: (o) => (o.spec as { template?: unknown } | undefined)?.template,
  ReplicaSet: (o) => (o.spec as { template?: unknown } | undefined)?.template,
  Job: (o) => (o.spec as { template?: unknown } | undefined)?.template,
  Pod: (o) => ({ spec: o.spec }),
};

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Parses every document of a YAML file strictly (see the module comment). Empty documents
 * are skipped, as kustomize does.
 */
export function parseYamlStrict(text: string, file: string): unknown[] {
  const v12 = parseAllDocuments(text, { uniqueKeys: true, prettyErrors: false });
  const v11 = parseAllDocuments(text, { uniqueKeys: true, prettyErrors: false, version: '1.1' });
  if (!Array.isArray(v12) || !Array.isArray(v11)) throw new KustomizeError(`${file}: not a YAML stream`);
  const out: unknown[] = [];
  v12.forEach((doc, i) => {
    const problems = [...doc.errors, ...doc.warnings];
    if (problems.length > 0) throw new KustomizeError(`${file}: document ${i + 1}: ${problems.map((e) => e.message.split('\n')[0]).join('; ')}`);
    const a = doc.toJS({ maxAliasCount: 100 }) as unknown;
    const b = v11[i]!.toJS({ maxAliasCount: 100 }) as unknown;
    if (!isDeepStrictEqual(a, b)) {
      throw new KustomizeError(`${file}: document ${i + 1}: ${firstDifference(a, b, '')}: YAML 1.1 (kubectl) and YAML 1.2 read this value differently; quote it`);
    }
    if (a !== null && a !== undefined) out.push(a);
  });
  return out;
}

function firstDifference(a: unknown, b: unknown, path: string): string {
  if (isMap(a) && isMap(b)) {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
      if (!isDeepStrictEqual(a[k], b[k])) return firstDifference(a[k], b[k], path ? `${path}.${k}` : k);
    }
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      if (!isDeepStrictEqual(a[i], b[i])) return firstDifference(a[i], b[i], `${path}[${i}]`);
    }
  }
  return `${path || '(the document)'} (${JSON.stringify(a)} in YAML 1.2, ${JSON.stringify(b)} in YAML 1.1)`;
}

/** Go's json.Marshal escapes these (HTML safety and JavaScript line terminators); kustomize hashes that text. */
function goJson(value: unknown): string {
  const sortKeys = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sortKeys);
    if (isMap(v)) return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortKeys(v[k])]));
    return v;
  };
  return JSON.stringify(sortKeys(value)).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * kustomize's name suffix for a generated ConfigMap: SHA-256 of the JSON of
 * {data, kind, name} (keys sorted, as Go writes them), the first 10 hex digits with
 * 0→g, 1→h, 3→k, a→m, e→t (so that the suffix never looks like a number or a bad word).
 * The name kustomize v5 hashes is always "": it looks the name up as one field literally
 * called "metadata/name" (api/hasher), which no object has. So the suffix depends on the
 * data alone.
 */
export function configMapHash(data: Record<string, string>): string {
  const hex = createHash('sha256').update(goJson({ kind: 'ConfigMap', name: '', data }), 'utf8').digest('hex');
  const swap: Record<string, string> = { '0': 'g', '1': 'h', '3': 'k', a: 'm', e: 't' };
  return [...hex.slice(0, 10)].map((c) => swap[c] ?? c).join('');
}

function inside(root: string, p: string): boolean {
  const rel = relative(root, p);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
}

function checkObject(o: unknown, where: string): K8sObject {
  if (!isMap(o)) throw new KustomizeError(`${where}: a document must be a mapping (a Kubernetes object)`);
  const { apiVersion, kind, metadata } = o;
  if (typeof apiVersion !== 'string' || typeof kind !== 'string') throw new KustomizeError(`${where}: apiVersion and kind must be strings`);
  if (kind === 'List' || kind.endsWith('List')) throw new KustomizeError(`${where}: ${kind}: lists are not rendered here; write the objects out`);
  if (!isMap(metadata) || typeof metadata.name !== 'string' || metadata.name === '') {
    throw new KustomizeError(`${where}: ${kind}: metadata.name must be a string (generateName is not rendered here)`);
  }
  return o as unknown as K8sObject;
}

function id(o: K8sObject): string {
  const group = o.apiVersion.includes('/') ? o.apiVersion.split('/')[0] : '';
  return `${group}/${o.kind}/${o.metadata.namespace ?? '~'}/${o.metadata.name}`;
}

/** Renames references to generated ConfigMaps in every pod template (kustomize's nameReference for ConfigMap). */
function renameConfigMaps(objects: K8sObject[], renames: Map<string, string>): void {
  const rn = (ref: unknown, key: string) => {
    if (isMap(ref) && typeof ref[key] === 'string' && renames.has(ref[key] as string)) ref[key] = renames.get(ref[key] as string);
  };
  for (const o of objects) {
    const template = POD_TEMPLATES[o.kind]?.(o);
    if (!isMap(template) || !isMap(template.spec)) continue;
    const spec = template.spec;
    for (const v of Array.isArray(spec.volumes) ? spec.volumes : []) {
      if (!isMap(v)) continue;
      rn(v.configMap, 'name');
      const projected = v.projected;
      if (isMap(projected) && Array.isArray(projected.sources)) for (const s of projected.sources) if (isMap(s)) rn(s.configMap, 'name');
    }
    for (const list of [spec.containers, spec.initContainers, spec.ephemeralContainers]) {
      for (const c of Array.isArray(list) ? list : []) {
        if (!isMap(c)) continue;
        for (const e of Array.isArray(c.env) ? c.env : []) if (isMap(e) && isMap(e.valueFrom)) rn(e.valueFrom.configMapKeyRef, 'name');
        for (const e of Array.isArray(c.envFrom) ? c.envFrom : []) if (isMap(e)) rn(e.configMapRef, 'name');
      }
    }
  }
}

interface Level {
  objects: K8sObject[];
  renames: Map<string, string>;
}

function buildLevel(dir: string, files: Set<string>, stack: string[]): Level {
  const root = realpathSync(dir);
  if (stack.includes(root)) throw new KustomizeError(`${root}: a cycle of kustomizations: ${[...stack, root].join(' → ')}`);
  for (const other of ['kustomization.yml', 'Kustomization']) {
    if (existsSync(join(root, other))) throw new KustomizeError(`${join(root, other)}: name the file kustomization.yaml (the only name rendered here)`);
  }
  const kfile = join(root, 'kustomization.yaml');
  if (!existsSync(kfile)) throw new KustomizeError(`${root}: no kustomization.yaml`);
  files.add(kfile);
  const docs = parseYamlStrict(readFileSync(kfile, 'utf8'), kfile);
  if (docs.length !== 1 || !isMap(docs[0])) throw new KustomizeError(`${kfile}: expected one mapping`);
  const k = docs[0];
  for (const key of Object.keys(k)) {
    if (!KUSTOMIZATION_FIELDS.has(key)) {
      throw new KustomizeError(`${kfile}: the field "${key}" is not rendered by test/helpers/kustomize.ts (it renders ${[...KUSTOMIZATION_FIELDS].join(', ')}): do without it, or teach the renderer and its test`);
    }
  }
  if (k.apiVersion !== 'kustomize.config.k8s.io/v1beta1') throw new KustomizeError(`${kfile}: apiVersion must be kustomize.config.k8s.io/v1beta1`);
  if (k.kind !== 'Kustomization') throw new KustomizeError(`${kfile}: kind must be Kustomization (components are not rendered here)`);

  const objects: K8sObject[] = [];
  const renames = new Map<string, string>();
  const resources = k.resources ?? [];
  if (!Array.isArray(resources)) throw new KustomizeError(`${kfile}: resources must be a list`);
  for (const r of resources) {
    if (typeof r !== 'string' || r === '') throw new KustomizeError(`${kfile}: resources: every entry must be a path`);
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(r) || r.startsWith('github.com/')) throw new KustomizeError(`${kfile}: resources: ${r}: remote resources are not rendered here`);
    const p = resolve(root, r);
    if (!existsSync(p)) throw new KustomizeError(`${kfile}: resources: ${r} does not exist`);
    if (statSync(p).isDirectory()) {
      const sub = buildLevel(p, files, [...stack, root]);
      objects.push(...sub.objects);
      for (const [a, b] of sub.renames) renames.set(a, b);
      continue;
    }
    const real = realpathSync(p);
    if (!inside(root, real)) throw new KustomizeError(`${kfile}: resources: ${r} is outside ${root} (kustomize reads no file outside the kustomization's folder)`);
    files.add(real);
    parseYamlStrict(readFileSync(real, 'utf8'), real).forEach((d, i) => objects.push(checkObject(d, `${real} document ${i + 1}`)));
  }

  const generators = k.configMapGenerator ?? [];
  if (!Array.isArray(generators)) throw new KustomizeError(`${kfile}: configMapGenerator must be a list`);
  for (const [gi, g] of generators.entries()) {
    const where = `${kfile}: configMapGenerator[${gi}]`;
    if (!isMap(g)) throw new KustomizeError(`${where}: must be a mapping`);
    for (const key of Object.keys(g)) {
      if (!GENERATOR_FIELDS.has(key)) throw new KustomizeError(`${where}: the field "${key}" is not rendered here (only ${[...GENERATOR_FIELDS].join(', ')})`);
    }
    if (typeof g.name !== 'string' || g.name === '') throw new KustomizeError(`${where}: name must be a string`);
    if (!Array.isArray(g.files) || g.files.length === 0) throw new KustomizeError(`${where}: files must be a non-empty list`);
    const data: Record<string, string> = {};
    for (const f of g.files) {
      if (typeof f !== 'string') throw new KustomizeError(`${where}: files: every entry must be a string`);
      const eq = f.indexOf('=');
      const key = eq >= 0 ? f.slice(0, eq) : basename(f);
      const path = eq >= 0 ? f.slice(eq + 1) : f;
      if (!/^[-._a-zA-Z0-9]+$/.test(key)) throw new KustomizeError(`${where}: files: "${key}" is not a valid ConfigMap key`);
      if (Object.hasOwn(data, key)) throw new KustomizeError(`${where}: files: the key "${key}" is there twice`);
      const p = resolve(root, path);
      if (!existsSync(p) || !statSync(p).isFile()) throw new KustomizeError(`${where}: files: ${path} is not a file`);
      const real = realpathSync(p);
      if (!inside(root, real)) throw new KustomizeError(`${where}: files: ${path} is outside ${root} (kustomize reads no file outside the kustomization's folder)`);
      const bytes = readFileSync(real);
      const text = bytes.toString('utf8');
      if (!Buffer.from(text, 'utf8').equals(bytes)) throw new KustomizeError(`${where}: files: ${path} is not UTF-8 text (binaryData is not rendered here)`);
      files.add(real);
      data[key] = text;
    }
    let labels: Record<string, string> | undefined;
    if (g.options !== undefined) {
      if (!isMap(g.options)) throw new KustomizeError(`${where}: options must be a mapping`);
      for (const key of Object.keys(g.options)) {
        if (!GENERATOR_OPTIONS.has(key)) throw new KustomizeError(`${where}: options.${key} is not rendered here (only labels)`);
      }
      if (g.options.labels !== undefined) {
        if (!isMap(g.options.labels) || !Object.values(g.options.labels).every((v) => typeof v === 'string')) {
          throw new KustomizeError(`${where}: options.labels must map strings to strings`);
        }
        labels = g.options.labels as Record<string, string>;
      }
    }
    const name = `${g.name}-${configMapHash(data)}`;
    if (renames.has(g.name)) throw new KustomizeError(`${where}: a ConfigMap ${g.name} is generated twice`);
    renames.set(g.name, name);
    objects.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ...(labels ? { labels: { ...labels } } : {}) }, data });
  }

  if (k.namespace !== undefined) {
    const ns = k.namespace;
    if (typeof ns !== 'string' || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(ns)) throw new KustomizeError(`${kfile}: namespace must be a namespace name`);
    for (const o of objects) {
      if (o.kind === 'Namespace') {
        if (o.metadata.name !== ns) throw new KustomizeError(`${kfile}: the Namespace ${o.metadata.name} differs from namespace: ${ns} (kustomize would rename it)`);
      } else if (!CLUSTER_SCOPED.has(o.kind)) {
        o.metadata.namespace = ns;
      }
    }
  }
  renameConfigMaps(objects, renames);

  const seen = new Set<string>();
  for (const o of objects) {
    const key = id(o);
    if (seen.has(key)) throw new KustomizeError(`${kfile}: ${o.kind} ${o.metadata.name} is there twice`);
    seen.add(key);
  }
  return { objects, renames };
}

/** The objects of a manifest file outside any kustomization (e.g. secret.example.yaml), read as strictly. */
export function readManifest(file: string): K8sObject[] {
  return parseYamlStrict(readFileSync(file, 'utf8'), file).map((d, i) => checkObject(d, `${file} document ${i + 1}`));
}

/** Renders the kustomization in `dir` (what `kubectl kustomize dir` prints, as objects). */
export function kustomizeBuild(dir: string): Rendered {
  const files = new Set<string>();
  const { objects } = buildLevel(dir, files, []);
  return { objects: structuredClone(objects), files };
}
