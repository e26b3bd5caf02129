/**
 * infra/kubernetes/: the manifests render (test/helpers/kustomize.ts, no kustomize needed),
 * every object validates strictly against its kind's Kubernetes JSON schema (the npm package
 * kubernetes-models, and @kubernetes-models/prometheus-operator for the ServiceMonitor:
 * offline), and the pieces fit together: selectors, ports, probes, volumes, Secrets, the Pod
 * Security Standard the namespace enforces, and the configuration as a pod sees it, which
 * the real `gridsteer check-config` accepts. Both ways of running are checked: the
 * Deployment behind a LoadBalancer (infra/kubernetes) and the anycast DaemonSet
 * (infra/kubernetes/overlays/anycast). Every file in infra/kubernetes is read by one of the
 * tests.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix, relative } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { DaemonSet } from 'kubernetes-models/apps/v1/DaemonSet';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor';
import { hashToken, loadTokens, TokenLoadError } from '../gslb/config/tokens.js';
import { run } from './helpers/dig.js';
import { cliPath, exampleRegions, repoRoot } from './helpers/paths.js';
import { configMapHash, kustomizeBuild, KustomizeError, readManifest, type K8sObject, type Rendered } from './helpers/kustomize.js';

const K8S = join(repoRoot, 'infra', 'kubernetes');
const SECRET_EXAMPLE = join(K8S, 'secret.example.yaml');
const README = join(K8S, 'README.md');

// ------------------------------------------------------------------ the two renders

interface Mode {
  name: string;
  dir: string;
  workloadKind: 'Deployment' | 'DaemonSet';
}
const MODES: Mode[] = [
  { name: 'Deployment + LoadBalancer (infra/kubernetes)', dir: K8S, workloadKind: 'Deployment' },
  { name: 'anycast DaemonSet (overlays/anycast)', dir: join(K8S, 'overlays', 'anycast'), workloadKind: 'DaemonSet' },
];
const renders = new Map<string, Rendered>();
function render(mode: Mode): Rendered {
  let r = renders.get(mode.dir);
  if (!r) {
    r = kustomizeBuild(mode.dir);
    renders.set(mode.dir, r);
  }
  return structuredClone(r);
}

// ------------------------------------------------------------------ the parts of objects read here

interface Selector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }[];
}
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string }; configMapKeyRef?: { name: string; key: string }; fieldRef?: { fieldPath: string } };
}
interface ContainerPort {
  name?: string;
  containerPort: number;
  hostPort?: number;
  protocol?: string;
}
interface Probe {
  httpGet?: { path?: string; port: number | string; scheme?: string };
  exec?: unknown;
  tcpSocket?: unknown;
  grpc?: unknown;
}
interface SecurityContext {
  runAsNonRoot?: boolean;
  runAsUser?: number;
  allowPrivilegeEscalation?: boolean;
  readOnlyRootFilesystem?: boolean;
  privileged?: boolean;
  capabilities?: { add?: string[]; drop?: string[] };
  seccompProfile?: { type: string };
  procMount?: string;
  windowsOptions?: { hostProcess?: boolean };
  sysctls?: { name: string; value: string }[];
}
interface Container {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  env?: EnvVar[];
  envFrom?: unknown[];
  ports?: ContainerPort[];
  volumeMounts?: { name: string; mountPath: string; subPath?: string; readOnly?: boolean }[];
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  startupProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: SecurityContext;
}
interface Volume {
  name: string;
  configMap?: { name: string; items?: unknown[] };
  secret?: { secretName: string; items?: unknown[] };
  emptyDir?: { medium?: string; sizeLimit?: string };
  [type: string]: unknown;
}
interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  ephemeralContainers?: Container[];
  volumes?: Volume[];
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
  dnsPolicy?: string;
  nodeSelector?: Record<string, string>;
  securityContext?: SecurityContext;
  topologySpreadConstraints?: { topologyKey: string; labelSelector?: Selector }[];
}
interface Workload extends K8sObject {
  spec: { replicas?: number; selector: Selector; template: { metadata: { labels: Record<string, string> }; spec: PodSpec } };
}
interface ServiceObject extends K8sObject {
  spec: {
    type?: string;
    selector?: Record<string, string>;
    externalTrafficPolicy?: string;
    ports: { name?: string; port: number; targetPort?: number | string; protocol?: string }[];
  };
}

const byKind = <T extends K8sObject = K8sObject>(objects: K8sObject[], kind: string): T[] => objects.filter((o) => o.kind === kind) as T[];
function one<T extends K8sObject = K8sObject>(objects: K8sObject[], kind: string, name?: string): T {
  const found = byKind<T>(objects, kind).filter((o) => name === undefined || o.metadata.name === name);
  assert.equal(found.length, 1, `expected exactly one ${kind}${name ? ` ${name}` : ''}, found ${found.map((o) => o.metadata.name).join(', ') || 'none'}`);
  return found[0]!;
}
const allContainers = (pod: PodSpec): Container[] => [...pod.containers, ...(pod.initContainers ?? []), ...(pod.ephemeralContainers ?? [])];
function gridsteerContainer(pod: PodSpec): Container {
  const c = pod.containers.find((x) => x.name === 'gridsteer');
  assert.ok(c, 'the pod has a container named gridsteer');
  return c;
}

/** Whether a label selector selects these labels (an empty selector selects everything, as in Kubernetes). */
function selects(sel: Selector, labels: Record<string, string>): boolean {
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const val = labels[e.key];
    if (e.operator === 'In' && !(has && (e.values ?? []).includes(val!))) return false;
    if (e.operator === 'NotIn' && has && (e.values ?? []).includes(val!)) return false;
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

// ------------------------------------------------------------------ strict schema validation

type Validatable = { prototype: { validate(): void } };
/** The schema of each kind these manifests use: kubernetes-models' validators, generated from the Kubernetes OpenAPI (and the Prometheus Operator's CRDs). */
const SCHEMAS: Record<string, Validatable> = {
  'v1/Namespace': Namespace,
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'apps/v1/Deployment': Deployment,
  'apps/v1/DaemonSet': DaemonSet,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor,
};

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A copy of `value` whose every mapping records which of its keys the validator reads. A
 * schema's validator reads each property its schema declares (and every key of a free-form
 * map such as labels); a key it never reads is one the schema does not know: an unknown
 * field, which kubectl's strict field validation refuses too.
 */
function tracked(value: unknown, path: string, read: Set<string>, present: string[]): unknown {
  if (Array.isArray(value)) return value.map((v, i) => tracked(v, `${path}[${i}]`, read, present));
  if (!isMap(value)) return value;
  const at = (k: string) => (path ? `${path}.${k}` : k);
  const target: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    present.push(at(k));
    target[k] = tracked(v, at(k), read, present);
  }
  return new Proxy(target, {
    get(t, k, receiver) {
      if (typeof k === 'string') read.add(at(k));
      return Reflect.get(t, k, receiver) as unknown;
    },
    has(t, k) {
      if (typeof k === 'string') read.add(at(k));
      return Reflect.has(t, k);
    },
  });
}

/** Every schema problem of one object: violations (types, enums, required) and unknown fields, each with its path. */
function schemaProblems(o: K8sObject): string[] {
  const model = SCHEMAS[`${o.apiVersion}/${o.kind}`];
  if (!model) return [`${o.apiVersion} ${o.kind}: no schema for this kind here (add it to SCHEMAS in this test)`];
  const read = new Set<string>();
  const present: string[] = [];
  const problems: string[] = [];
  try {
    model.prototype.validate.call(tracked(o, '', read, present));
  } catch (e) {
    const errors = (e as { errors?: { instancePath: string; message?: string; params?: Record<string, unknown> }[] }).errors;
    if (!errors) throw e;
    for (const err of errors) {
      const path = err.instancePath.replace(/^\//, '').replace(/\/(\d+)(?=\/|$)/g, '[$1]').replaceAll('/', '.') || '(the object)';
      const allowed = err.params?.allowedValues ? ` (${JSON.stringify(err.params.allowedValues)})` : '';
      problems.push(`${path}: ${err.message ?? 'invalid'}${allowed}`);
    }
  }
  for (const p of present) if (!read.has(p)) problems.push(`${p}: unknown field (not in the ${o.kind} schema)`);
  return problems;
}

function assertValid(o: K8sObject, where: string): void {
  const problems = schemaProblems(o);
  assert.deepEqual(problems, [], `${where}: ${o.kind} ${o.metadata.name}:\n  ${problems.join('\n  ')}`);
}

// ------------------------------------------------------------------ Pod Security Standards

const BASELINE_CAPS = new Set(['AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD', 'NET_BIND_SERVICE', 'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT']);
const SAFE_SYSCTLS = new Set([
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
]);
const RESTRICTED_VOLUMES = new Set(['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'persistentVolumeClaim', 'projected', 'secret']);

/** The Pod Security Standards' checks (kubernetes.io/docs/concepts/security/pod-security-standards) a pod fails at `level`. */
function podSecurityProblems(pod: PodSpec, level: 'baseline' | 'restricted'): string[] {
  const p: string[] = [];
  const psc = pod.securityContext ?? {};
  if (pod.hostNetwork || pod.hostPID || pod.hostIPC) p.push('host namespaces (hostNetwork, hostPID or hostIPC)');
  for (const v of pod.volumes ?? []) if ('hostPath' in v) p.push(`volume ${v.name}: hostPath`);
  for (const s of psc.sysctls ?? []) if (!SAFE_SYSCTLS.has(s.name)) p.push(`sysctl ${s.name} is not a safe sysctl`);
  if (psc.seccompProfile?.type === 'Unconfined') p.push('pod seccompProfile Unconfined');
  for (const c of allContainers(pod)) {
    const sc = c.securityContext ?? {};
    if (sc.privileged) p.push(`${c.name}: privileged`);
    if (sc.windowsOptions?.hostProcess) p.push(`${c.name}: hostProcess`);
    if (sc.procMount && sc.procMount !== 'Default') p.push(`${c.name}: procMount ${sc.procMount}`);
    if (sc.seccompProfile?.type === 'Unconfined') p.push(`${c.name}: seccompProfile Unconfined`);
    for (const cap of sc.capabilities?.add ?? []) if (!BASELINE_CAPS.has(cap)) p.push(`${c.name}: adds capability ${cap}`);
    for (const port of c.ports ?? []) if (port.hostPort) p.push(`${c.name}: hostPort ${port.hostPort}`);
  }
  if (level === 'baseline') return p;
  for (const v of pod.volumes ?? []) {
    const type = Object.keys(v).find((k) => k !== 'name');
    if (!type || !RESTRICTED_VOLUMES.has(type)) p.push(`volume ${v.name}: type ${type} is not allowed`);
  }
  for (const c of allContainers(pod)) {
    const sc = c.securityContext ?? {};
    if (sc.allowPrivilegeEscalation !== false) p.push(`${c.name}: allowPrivilegeEscalation must be false`);
    if (sc.runAsNonRoot === false || (sc.runAsNonRoot !== true && psc.runAsNonRoot !== true)) p.push(`${c.name}: runAsNonRoot must be true`);
    if (sc.runAsUser === 0) p.push(`${c.name}: runAsUser 0`);
    const seccomp = sc.seccompProfile?.type ?? psc.seccompProfile?.type;
    if (seccomp !== 'RuntimeDefault' && seccomp !== 'Localhost') p.push(`${c.name}: seccompProfile must be RuntimeDefault or Localhost`);
    if (!(sc.capabilities?.drop ?? []).includes('ALL')) p.push(`${c.name}: capabilities must drop ALL`);
    for (const cap of sc.capabilities?.add ?? []) if (cap !== 'NET_BIND_SERVICE') p.push(`${c.name}: adds capability ${cap} (only NET_BIND_SERVICE)`);
  }
  if (psc.runAsUser === 0) p.push('pod runAsUser 0');
  return p;
}

// ------------------------------------------------------------------ the configuration as a pod sees it

/** The files of the Secrets in secret.example.yaml, with every placeholder filled in (sha256 placeholders with real hashes of fresh tokens). */
function exampleSecrets(): { secrets: Map<string, Record<string, string>>; tokens: Map<string, string> } {
  const secrets = new Map<string, Record<string, string>>();
  const tokens = new Map<string, string>();
  for (const s of readManifest(SECRET_EXAMPLE)) {
    const data: Record<string, string> = {};
    for (const [k, v] of Object.entries((s.data ?? {}) as Record<string, string>)) data[k] = Buffer.from(v, 'base64').toString('utf8');
    for (const [k, v] of Object.entries((s.stringData ?? {}) as Record<string, string>)) data[k] = v;
    for (const k of Object.keys(data)) {
      data[k] = data[k]!.replace(/REPLACE_WITH_SHA256_[A-Z0-9_]+/g, (placeholder) => {
        const token = randomBytes(32).toString('hex');
        tokens.set(placeholder, token);
        return hashToken(token);
      });
      data[k] = data[k]!.replace(/REPLACE_WITH_[A-Z0-9_]+/g, '123456');
    }
    secrets.set(s.metadata.name, data);
  }
  return { secrets, tokens };
}

/** Writes a ConfigMap or Secret volume the way the kubelet does: files in a timestamped folder, ..data pointing at it, each key a symlink through ..data. */
function writeAtomicVolume(dir: string, data: Record<string, string>): void {
  const stamp = '..2026_11_30_00_00_00.000000001';
  mkdirSync(join(dir, stamp), { recursive: true });
  for (const [k, v] of Object.entries(data)) writeFileSync(join(dir, stamp, k), v);
  symlinkSync(stamp, join(dir, '..data'));
  for (const k of Object.keys(data)) symlinkSync(posix.join('..data', k), join(dir, k));
}

/**
 * Lays out below `root` what the gridsteer container sees at its mount paths: the rendered
 * ConfigMaps, the example Secrets (placeholders filled in), empty emptyDirs.
 */
function materializeMounts(root: string, pod: PodSpec, c: Container, configMaps: Map<string, Record<string, string>>, secrets: Map<string, Record<string, string>>): void {
  for (const m of c.volumeMounts ?? []) {
    const vol = (pod.volumes ?? []).find((v) => v.name === m.name);
    assert.ok(vol, `${c.name}: the volumeMount ${m.name} names a volume of the pod`);
    const target = join(root, m.mountPath);
    let data: Record<string, string> | undefined;
    if (vol.configMap) {
      data = configMaps.get(vol.configMap.name);
      assert.ok(data, `volume ${vol.name}: the ConfigMap ${vol.configMap.name} is rendered`);
    } else if (vol.secret) {
      data = secrets.get(vol.secret.secretName);
      assert.ok(data, `volume ${vol.name}: the Secret ${vol.secret.secretName} is in secret.example.yaml`);
    } else if (vol.emptyDir) {
      mkdirSync(target, { recursive: true });
      continue;
    } else {
      assert.fail(`volume ${vol.name}: only configMap, secret and emptyDir volumes are laid out here`);
    }
    assert.equal(vol.configMap?.items ?? vol.secret?.items, undefined, `volume ${vol.name}: items are not laid out here`);
    if (m.subPath !== undefined) {
      assert.ok(Object.hasOwn(data, m.subPath), `${c.name}: the subPath ${m.subPath} of ${m.name} is a key of its ${vol.configMap ? 'ConfigMap' : 'Secret'}`);
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, data[m.subPath]!);
    } else {
      writeAtomicVolume(target, data);
    }
  }
}

/** host:port → port (IPv4, [IPv6] or a name). */
function portOf(listen: string): number {
  const m = /:(\d+)$/.exec(listen);
  assert.ok(m, `a listen address with a port: ${listen}`);
  return Number(m[1]);
}

/** The values of a repeatable option in args (`--opt value`). */
function optionValues(args: string[], opt: string): string[] {
  const out: string[] = [];
  args.forEach((a, i) => {
    if (a === opt) out.push(args[i + 1]!);
    else if (a.startsWith(`${opt}=`)) out.push(a.slice(opt.length + 1));
  });
  return out;
}

interface PodView {
  objects: K8sObject[];
  workload: Workload;
  pod: PodSpec;
  labels: Record<string, string>;
  gs: Container;
  configPath: string;
  config: Record<string, unknown>;
  configMaps: Map<string, Record<string, string>>;
  dnsListen: string[];
  httpListen: string;
}

function podView(mode: Mode): PodView {
  const { objects } = render(mode);
  const workload = one<Workload>(objects, mode.workloadKind);
  const pod = workload.spec.template.spec;
  const gs = gridsteerContainer(pod);
  const args = gs.args ?? [];
  assert.equal(args[0], 'serve', `the gridsteer container runs serve: ${JSON.stringify(args)}`);
  const configPath = optionValues(args, '--config')[0];
  assert.ok(configPath, 'serve is given --config');
  const configMaps = new Map(byKind(objects, 'ConfigMap').map((cm) => [cm.metadata.name, cm.data as Record<string, string>]));
  // The configuration file is the one a configMap volume puts at --config.
  const mount = (gs.volumeMounts ?? []).find((m) => m.mountPath === configPath || configPath.startsWith(`${m.mountPath}/`));
  assert.ok(mount, `a volumeMount provides ${configPath}`);
  const vol = (pod.volumes ?? []).find((v) => v.name === mount.name);
  assert.ok(vol?.configMap, `${configPath} comes from a ConfigMap`);
  const key = mount.subPath ?? posix.relative(mount.mountPath, configPath);
  const text = configMaps.get(vol.configMap.name)?.[key];
  assert.ok(text !== undefined, `the ConfigMap ${vol.configMap.name} has the key ${key}`);
  const config = parseYaml(text) as Record<string, unknown>;
  const cfgDns = (config.dns as { listen?: string[] } | undefined)?.listen ?? ['127.0.0.1:5353'];
  const cfgHttp = (config.http as { listen?: string } | undefined)?.listen ?? '127.0.0.1:8053';
  const argDns = optionValues(args, '--dns-listen');
  const argHttp = optionValues(args, '--http-listen');
  return {
    objects,
    workload,
    pod,
    labels: workload.spec.template.metadata.labels,
    gs,
    configPath,
    config,
    configMaps,
    dnsListen: argDns.length > 0 ? argDns : cfgDns,
    httpListen: argHttp[0] ?? cfgHttp,
  };
}

function tempDir(t: { after(fn: () => void): void }, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function walk(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else out.push(p);
  }
  return out;
}

// ================================================================== the renderer and the schema check themselves

test('kustomize renderer: refuses the fields it does not render, files outside the folder and YAML that kubectl reads otherwise; hashes as kustomize v5 does', (t) => {
  const dir = tempDir(t, 'gridsteer-kustomize-');
  const kust = (extra: string) =>
    writeFileSync(join(dir, 'kustomization.yaml'), `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [cm.yaml]\n${extra}`);
  writeFileSync(join(dir, 'cm.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: plain }\ndata: { a: b }\n');
  for (const field of ['patches: []', 'commonLabels: { a: b }', 'images: []', 'components: []', 'secretGenerator: []']) {
    kust(field);
    assert.throws(() => kustomizeBuild(dir), (e: Error) => e instanceof KustomizeError && e.message.includes(`the field "${field.split(':')[0]}" is not rendered`), field);
  }
  kust('configMapGenerator: [{ name: g, files: [../outside.yaml] }]');
  assert.throws(() => kustomizeBuild(dir), /is not a file|outside/);
  kust('configMapGenerator: [{ name: g, files: [cm.yaml], behavior: merge }]');
  assert.throws(() => kustomizeBuild(dir), /the field "behavior" is not rendered/);
  writeFileSync(join(dir, 'cm.yaml'), 'apiVersion: v1\nkind: Secret\nmetadata: { name: plain }\nstringData: { mode: 0440 }\n');
  kust('');
  assert.throws(() => kustomizeBuild(dir), /stringData\.mode .*quote it/);

  // A generated ConfigMap: its name suffix and the renamed reference in a pod template.
  // `kubectl kustomize` (kustomize v5.5.0) names a ConfigMap generated from one file "a"
  // holding "b" x-4h2mbtbbt6.
  assert.equal(configMapHash({ a: 'b' }), '4h2mbtbbt6');
  writeFileSync(join(dir, 'a'), 'b');
  writeFileSync(
    join(dir, 'cm.yaml'),
    'apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: d }\nspec:\n  selector: { matchLabels: { a: b } }\n  template:\n    metadata: { labels: { a: b } }\n    spec:\n      containers: [{ name: c, image: i, envFrom: [{ configMapRef: { name: x } }] }]\n      volumes: [{ name: v, configMap: { name: x } }]\n',
  );
  kust('namespace: ns\nconfigMapGenerator: [{ name: x, files: [a] }]');
  const { objects } = kustomizeBuild(dir);
  const cm = one(objects, 'ConfigMap');
  assert.equal(cm.metadata.name, 'x-4h2mbtbbt6');
  assert.equal(cm.metadata.namespace, 'ns');
  const d = one<Workload>(objects, 'Deployment');
  assert.equal(d.spec.template.spec.volumes?.[0]?.configMap?.name, 'x-4h2mbtbbt6');
  assert.deepEqual(d.spec.template.spec.containers[0]!.envFrom, [{ configMapRef: { name: 'x-4h2mbtbbt6' } }]);
});

test('schema check: unknown fields, wrong types and values outside an enum are errors, for core kinds and the ServiceMonitor', () => {
  const { objects } = render(MODES[0]!);
  const base = one<Workload>(objects, 'Deployment');
  assert.deepEqual(schemaProblems(base), [], 'the rendered Deployment is valid to start with');

  const typo = structuredClone(base);
  (typo.spec.template.spec.containers[0] as unknown as Record<string, unknown>).securityContex = {};
  assert.deepEqual(schemaProblems(typo), ['spec.template.spec.containers[0].securityContex: unknown field (not in the Deployment schema)']);

  const nested = structuredClone(base);
  (nested.spec.template.spec.containers[0]!.readinessProbe!.httpGet as Record<string, unknown>).paht = '/readyz';
  assert.deepEqual(schemaProblems(nested), ['spec.template.spec.containers[0].readinessProbe.httpGet.paht: unknown field (not in the Deployment schema)']);

  const type = structuredClone(base);
  (type.spec as Record<string, unknown>).replicas = '3';
  assert.match(schemaProblems(type).join('\n'), /^spec\.replicas: must be integer/m);

  const required = structuredClone(base);
  delete (required.spec.template.spec.containers[0] as Partial<Container>).name;
  assert.match(schemaProblems(required).join('\n'), /spec\.template\.spec\.containers\[0\]: must have required property '?name'?/);

  // Free-form maps take any key.
  const labels = structuredClone(base);
  labels.metadata.labels = { ...labels.metadata.labels, 'example.com/anything': 'x' };
  assert.deepEqual(schemaProblems(labels), []);

  const svc = structuredClone(one<ServiceObject>(objects, 'Service', 'gridsteer-dns'));
  svc.spec.ports[0]!.protocol = 'udp';
  assert.match(schemaProblems(svc).join('\n'), /^spec\.ports\[0\]\.protocol: must be equal to one of the allowed values \(\["SCTP","TCP","UDP"\]\)/m);

  const sm = structuredClone(one(objects, 'ServiceMonitor'));
  ((sm.spec as { endpoints: Record<string, unknown>[] }).endpoints[0]!).intervall = '30s';
  assert.deepEqual(schemaProblems(sm), ['spec.endpoints[0].intervall: unknown field (not in the ServiceMonitor schema)']);

  assert.deepEqual(schemaProblems({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' } }), ['v1 Pod: no schema for this kind here (add it to SCHEMAS in this test)']);
});

// ================================================================== the files

test('every file in infra/kubernetes is rendered by a kustomization or checked by this test', () => {
  const rendered = new Set<string>();
  for (const mode of MODES) for (const f of render(mode).files) rendered.add(f);
  assert.ok(!rendered.has(SECRET_EXAMPLE), 'secret.example.yaml is in no kustomization (an apply would put its placeholders over the real Secrets)');
  const checkedHere = new Set([SECRET_EXAMPLE, README]);
  const unexercised = walk(K8S).filter((f) => !rendered.has(f) && !checkedHere.has(f));
  assert.deepEqual(unexercised.map((f) => relative(K8S, f)), [], 'files that no test reads');
});

test('base/regions is a byte-for-byte copy of regions/*.yaml, and the regions ConfigMap holds exactly those files', () => {
  const want = readdirSync(exampleRegions).filter((n) => n.endsWith('.yaml') || n.endsWith('.yml')).sort();
  const copyDir = join(K8S, 'base', 'regions');
  assert.deepEqual(readdirSync(copyDir).sort(), want, 'the same region files');
  for (const n of want) {
    assert.ok(readFileSync(join(copyDir, n)).equals(readFileSync(join(exampleRegions, n))), `base/regions/${n} equals regions/${n}: copy it again (cp regions/*.yaml infra/kubernetes/base/regions/)`);
  }
  for (const mode of MODES) {
    const v = podView(mode);
    const vol = (v.pod.volumes ?? []).find((x) => x.configMap && (v.gs.volumeMounts ?? []).some((m) => m.name === x.name && m.mountPath === posix.join(posix.dirname(v.configPath), String(v.config.regionsDir ?? 'regions'))));
    assert.ok(vol?.configMap, `${mode.name}: a ConfigMap is mounted at the regionsDir of the configuration`);
    const data = v.configMaps.get(vol.configMap.name)!;
    assert.deepEqual(Object.keys(data).sort(), want, `${mode.name}: the ConfigMap ${vol.configMap.name} has one key per region file`);
    for (const n of want) assert.equal(data[n], readFileSync(join(exampleRegions, n), 'utf8'), `${mode.name}: ${n}`);
  }
});

// ================================================================== each way of running

for (const mode of MODES) {
  test(`${mode.name}: every object validates strictly against its kind's Kubernetes schema`, () => {
    const { objects } = render(mode);
    assert.ok(objects.length > 0);
    for (const o of objects) assertValid(o, mode.name);
    // Everything but the Namespace lives in it.
    const ns = one(objects, 'Namespace').metadata.name;
    for (const o of objects) if (o.kind !== 'Namespace') assert.equal(o.metadata.namespace, ns, `${o.kind} ${o.metadata.name} is in namespace ${ns}`);
  });

  test(`${mode.name}: the gridsteer container runs serve on the mounted configuration, and the ports, probes and listen addresses agree`, () => {
    const v = podView(mode);
    const { workload, pod, gs } = v;
    assert.ok(selects(workload.spec.selector, v.labels), 'the workload selector selects its own pod template');
    // node itself: a shell in between would lose the node binary's file capability under allowPrivilegeEscalation: false.
    assert.deepEqual(gs.command, ['node', '/app/dist/gslb/cli/main.js'], 'the image runs node /app/dist/gslb/cli/main.js');
    assert.ok(gs.image && /^[^\s:]+(:[\w.-]+)?(@sha256:[0-9a-f]{64})?$/.test(gs.image), `an image reference: ${gs.image}`);

    // $(VAR) in args expands only from the container's own env.
    const env = new Set((gs.env ?? []).map((e) => e.name));
    for (const a of gs.args ?? []) for (const m of a.matchAll(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g)) assert.ok(env.has(m[1]!), `args use $(${m[1]}), which the container's env defines`);

    const ports = gs.ports ?? [];
    const port = (name: string) => ports.find((p) => p.name === name);
    const dnsPorts = new Set(v.dnsListen.map(portOf));
    assert.equal(dnsPorts.size, 1, `one DNS port: ${v.dnsListen.join(' ')}`);
    const dnsPort = [...dnsPorts][0]!;
    assert.equal(dnsPort, 53, 'DNS on port 53');
    assert.deepEqual([port('dns-udp')?.containerPort, port('dns-udp')?.protocol], [dnsPort, 'UDP'], 'dns-udp: the DNS listen port, UDP');
    assert.deepEqual([port('dns-tcp')?.containerPort, port('dns-tcp')?.protocol], [dnsPort, 'TCP'], 'dns-tcp: the DNS listen port, TCP');
    assert.deepEqual([port('http')?.containerPort, port('http')?.protocol ?? 'TCP'], [portOf(v.httpListen), 'TCP'], 'http: the HTTP API listen port');

    const probe = (p: Probe | undefined, name: string, path: string) => {
      assert.ok(p?.httpGet, `${name}: an httpGet probe`);
      assert.equal(p.httpGet.path, path, `${name} asks ${path}`);
      assert.equal(p.httpGet.port, 'http', `${name} uses the port named http`);
      assert.ok(p.httpGet.scheme === undefined || p.httpGet.scheme === 'HTTP', `${name}: plain HTTP (the configuration has no http.tls)`);
    };
    assert.equal((v.config.http as Record<string, unknown>).tls, undefined, 'no http.tls: the probes and Prometheus speak plain HTTP');
    probe(gs.readinessProbe, 'readinessProbe', '/readyz');
    probe(gs.livenessProbe, 'livenessProbe', '/healthz');
    probe(gs.startupProbe, 'startupProbe', '/healthz');
    for (const c of allContainers(pod)) {
      for (const pr of [c.readinessProbe, c.livenessProbe, c.startupProbe]) {
        const p = pr?.httpGet?.port;
        if (typeof p === 'string') assert.ok((c.ports ?? []).some((x) => x.name === p), `${c.name}: the probe port ${p} is a named port of the container`);
      }
    }

    // Not "auto": that counts the node's cores, not the CPU the pod is given.
    assert.equal(typeof v.config.workers, 'number', 'workers is a number');
    const cpuRequest = gs.resources?.requests?.cpu;
    assert.ok(cpuRequest, 'the gridsteer container requests CPU');
  });

  test(`${mode.name}: volumes, Secrets and writable paths fit the configuration`, () => {
    const v = podView(mode);
    const { pod, gs } = v;
    const { secrets } = exampleSecrets();
    const volumes = new Map((pod.volumes ?? []).map((x) => [x.name, x]));
    for (const c of allContainers(pod)) {
      for (const m of c.volumeMounts ?? []) assert.ok(volumes.has(m.name), `${c.name}: the mount ${m.mountPath} names the volume ${m.name}`);
      for (const e of c.env ?? []) {
        const ref = e.valueFrom?.secretKeyRef;
        if (ref) assert.ok(Object.hasOwn(secrets.get(ref.name) ?? {}, ref.key), `${c.name}: env ${e.name} reads the key ${ref.key} of the Secret ${ref.name}, which secret.example.yaml defines`);
        const cref = e.valueFrom?.configMapKeyRef;
        if (cref) assert.ok(Object.hasOwn(v.configMaps.get(cref.name) ?? {}, cref.key), `${c.name}: env ${e.name}: ConfigMap ${cref.name} key ${cref.key}`);
      }
    }
    for (const vol of volumes.values()) {
      assert.ok(allContainers(pod).some((c) => (c.volumeMounts ?? []).some((m) => m.name === vol.name)), `the volume ${vol.name} is mounted`);
      if (vol.configMap) assert.ok(v.configMaps.has(vol.configMap.name), `the volume ${vol.name}: the ConfigMap ${vol.configMap.name} is rendered`);
      if (vol.secret) assert.ok(secrets.has(vol.secret.secretName), `the volume ${vol.name}: the Secret ${vol.secret.secretName} is in secret.example.yaml`);
    }

    const mountAt = (c: Container, path: string) =>
      (c.volumeMounts ?? []).filter((m) => path === m.mountPath || path.startsWith(`${m.mountPath}/`)).sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
    const writable = (c: Container, path: string) => {
      const m = mountAt(c, path);
      return m !== undefined && !m.readOnly && volumes.get(m.name)?.emptyDir !== undefined;
    };
    const base = posix.dirname(v.configPath);
    const http = v.config.http as { tokensFile?: string };
    assert.ok(http.tokensFile, 'http.tokensFile is set: the API needs tokens');
    const tokensPath = posix.resolve(base, http.tokensFile);
    const tokensMount = mountAt(gs, tokensPath);
    assert.ok(tokensMount && volumes.get(tokensMount.name)?.secret, `http.tokensFile ${tokensPath} is on a Secret volume`);
    const tokenKey = tokensMount.subPath ?? posix.relative(tokensMount.mountPath, tokensPath);
    assert.ok(Object.hasOwn(secrets.get(volumes.get(tokensMount.name)!.secret!.secretName)!, tokenKey), `the Secret has the key ${tokenKey}`);

    // The root filesystem is read-only: what the server writes must be on an emptyDir.
    for (const c of allContainers(pod)) assert.equal(c.securityContext?.readOnlyRootFilesystem, true, `${c.name}: readOnlyRootFilesystem`);
    const geoip = v.config.geoip as { enabled?: boolean; cacheDir?: string; database?: string };
    assert.notEqual(geoip.enabled, false, 'geoip is enabled');
    assert.ok(geoip.cacheDir && posix.isAbsolute(geoip.cacheDir), 'geoip.cacheDir is set (the default is under $HOME)');
    assert.ok(writable(gs, geoip.cacheDir), `geoip.cacheDir ${geoip.cacheDir} is a writable emptyDir`);
    assert.ok(writable(gs, '/tmp'), '/tmp is a writable emptyDir');
    assert.equal((v.config.state as { store?: string }).store, 'redis', 'no state file: the state is in Redis');

    // The GeoIP database: the image has none; the geoipupdate container downloads it into a volume the server reads.
    assert.ok(geoip.database, 'geoip.database is set: the image carries no database (docs/adr/0004-geolite2-licence.md)');
    const dbMount = mountAt(gs, geoip.database);
    assert.ok(dbMount, `a volume holds ${geoip.database}`);
    const updater = pod.containers.find((c) => c.name === 'geoipupdate');
    assert.ok(updater, 'a geoipupdate container keeps the database current');
    const uenv = new Map((updater.env ?? []).map((e) => [e.name, e]));
    const dbDir = uenv.get('GEOIPUPDATE_DB_DIR')?.value ?? '/usr/share/GeoIP';
    const umount = mountAt(updater, dbDir);
    assert.ok(umount && umount.name === dbMount.name && !umount.readOnly, `geoipupdate writes ${dbDir} on the volume ${dbMount.name}`);
    assert.equal(posix.relative(umount.mountPath, dbDir), posix.relative(dbMount.mountPath, posix.dirname(geoip.database)), 'geoipupdate writes where the server reads');
    const editions = (uenv.get('GEOIPUPDATE_EDITION_IDS')?.value ?? '').split(/\s+/);
    assert.ok(editions.includes(posix.basename(geoip.database, '.mmdb')), `GEOIPUPDATE_EDITION_IDS (${editions.join(' ')}) downloads ${posix.basename(geoip.database)}`);
    for (const k of ['GEOIPUPDATE_ACCOUNT_ID', 'GEOIPUPDATE_LICENSE_KEY']) assert.ok(uenv.get(k)?.valueFrom?.secretKeyRef, `${k} comes from a Secret`);
    const conf = uenv.get('GEOIPUPDATE_CONF_FILE')?.value ?? '/etc/GeoIP.conf';
    assert.ok(writable(updater, conf), `geoipupdate writes its configuration ${conf} on a writable emptyDir`);
  });

  test(`${mode.name}: security: non-root, read-only, no privilege escalation, only NET_BIND_SERVICE, port 53 bindable, and the namespace enforces the strictest Pod Security Standard the pod meets`, () => {
    const v = podView(mode);
    const { pod, gs } = v;
    const psc = pod.securityContext ?? {};
    assert.equal(psc.runAsNonRoot, true, 'runAsNonRoot');
    assert.ok(typeof psc.runAsUser === 'number' && psc.runAsUser > 0, 'a numeric non-root runAsUser');
    assert.equal(psc.seccompProfile?.type, 'RuntimeDefault');
    for (const c of allContainers(pod)) {
      const sc = c.securityContext ?? {};
      assert.equal(sc.allowPrivilegeEscalation, false, `${c.name}: allowPrivilegeEscalation false`);
      assert.deepEqual(sc.capabilities?.drop, ['ALL'], `${c.name}: drops every capability`);
      assert.deepEqual(sc.capabilities?.add ?? [], c === gs ? ['NET_BIND_SERVICE'] : [], `${c.name}: adds ${c === gs ? 'NET_BIND_SERVICE only' : 'nothing'}`);
      assert.ok(sc.runAsUser === undefined || sc.runAsUser > 0, `${c.name}: not root`);
      assert.ok(c.resources?.requests?.memory && c.resources.limits?.memory, `${c.name}: a memory request and limit`);
    }
    // Port 53 as a non-root user.
    const unprivStart = (psc.sysctls ?? []).find((s) => s.name === 'net.ipv4.ip_unprivileged_port_start');
    if (pod.hostNetwork) {
      assert.equal(psc.sysctls, undefined, 'no sysctls on the node network (the kubelet refuses them)');
      assert.equal(gs.command?.[0], 'node', 'the file capability of node needs node exec\'d directly');
    } else {
      assert.ok(unprivStart && Number(unprivStart.value) <= 53, 'net.ipv4.ip_unprivileged_port_start ≤ 53 in the pod\'s network');
    }

    const ns = one(v.objects, 'Namespace');
    const enforce = ns.metadata.labels?.['pod-security.kubernetes.io/enforce'];
    const restricted = podSecurityProblems(pod, 'restricted');
    const baseline = podSecurityProblems(pod, 'baseline');
    const strictest = restricted.length === 0 ? 'restricted' : baseline.length === 0 ? 'baseline' : 'privileged';
    assert.equal(enforce, strictest, `the namespace enforces "${strictest}"; the pod fails restricted by: ${restricted.join('; ') || 'nothing'}; baseline by: ${baseline.join('; ') || 'nothing'}`);
    if (mode.workloadKind === 'Deployment') assert.deepEqual(restricted, [], 'the Deployment\'s pods meet "restricted"');
    else assert.deepEqual(baseline, ['host namespaces (hostNetwork, hostPID or hostIPC)', 'gridsteer: hostPort 53', 'gridsteer: hostPort 53', 'gridsteer: hostPort 8053'], 'the DaemonSet needs the node\'s network, nothing more');
  });

  test(`${mode.name}: gridsteer check-config accepts the configuration laid out as the pod sees it`, async (t) => {
    const v = podView(mode);
    const root = tempDir(t, 'gridsteer-k8s-pod-');
    const { secrets } = exampleSecrets();
    materializeMounts(root, v.pod, v.gs, v.configMaps, secrets);
    const file = join(root, v.configPath);
    const r = await run(process.execPath, [cliPath, 'check-config', '--config', file], 60000);
    const regions = readdirSync(exampleRegions).filter((n) => n.endsWith('.yaml')).length;
    assert.equal(r.code, 0, `$ ${r.cmd}\n(exit ${r.code})\n${r.stdout}${r.stderr}`);
    assert.match(r.stdout, new RegExp(`^ok .*1 zone\\(s\\), 1 steered name\\(s\\), ${regions} region\\(s\\), \\d+ token\\(s\\)$`, 'm'));
    // The tokens file the pod reads parses with the server's own loader.
    const http = v.config.http as { tokensFile: string };
    const store = loadTokens({ file: join(root, posix.resolve(posix.dirname(v.configPath), http.tokensFile)) });
    assert.ok(store.size > 0, 'the tokens file holds tokens');
  });

  test(`${mode.name}: the shared state is Redis through Sentinel, at names inside the cluster`, () => {
    const v = podView(mode);
    const state = v.config.state as { store: string; redis?: { url?: string; waitReplicas?: number } };
    assert.equal(state.store, 'redis');
    const url = state.redis?.url ?? '';
    const m = /^redis\+sentinel:\/\/([^/@]+)\/([^/]+)$/.exec(url);
    assert.ok(m, `a redis+sentinel:// URL without credentials (it would sit in a ConfigMap): ${url}`);
    const hosts = m[1]!.split(',');
    assert.ok(hosts.length >= 3, 'at least three Sentinels');
    for (const h of hosts) assert.match(h, /^[a-z0-9-]+(\.[a-z0-9-]+)*\.svc(\.cluster\.local)?:26379$/, `${h}: a Service name in the cluster, Sentinel port 26379`);
    assert.ok((state.redis?.waitReplicas ?? 0) >= 1, 'a write waits for a replica, so that a failover does not lose it');
  });

  test(`${mode.name}: Services select the pods and target their ports; the ServiceMonitor scrapes the http port`, () => {
    const v = podView(mode);
    const services = byKind<ServiceObject>(v.objects, 'Service');
    const ports = v.gs.ports ?? [];
    for (const s of services) {
      assert.ok(s.spec.selector && Object.keys(s.spec.selector).length > 0, `${s.metadata.name}: has a selector`);
      assert.ok(selects({ matchLabels: s.spec.selector }, v.labels), `${s.metadata.name}: selects the ${mode.workloadKind}'s pods`);
      for (const p of s.spec.ports) {
        const target = p.targetPort ?? p.port;
        const cp = ports.find((x) => (typeof target === 'string' ? x.name === target : x.containerPort === target) && (x.protocol ?? 'TCP') === (p.protocol ?? 'TCP'));
        assert.ok(cp, `${s.metadata.name}: port ${p.name} targets ${target}/${p.protocol ?? 'TCP'}, a port of the gridsteer container`);
      }
    }
    const api = one<ServiceObject>(v.objects, 'Service', 'gridsteer-api');
    assert.equal(api.spec.type ?? 'ClusterIP', 'ClusterIP', 'the API stays inside the cluster');
    assert.deepEqual(api.spec.ports.map((p) => [p.name, p.port, p.targetPort]), [['http', portOf(v.httpListen), 'http']]);

    const sm = one(v.objects, 'ServiceMonitor');
    const smSpec = sm.spec as { selector: Selector; namespaceSelector?: { matchNames?: string[]; any?: boolean }; endpoints: { port?: string; path?: string; scheme?: string }[] };
    const selected = services.filter((s) => selects(smSpec.selector, s.metadata.labels ?? {}));
    assert.deepEqual(selected.map((s) => s.metadata.name), ['gridsteer-api'], 'the ServiceMonitor selects the API Service alone');
    assert.ok(!smSpec.namespaceSelector || smSpec.namespaceSelector.any || (smSpec.namespaceSelector.matchNames ?? []).includes(api.metadata.namespace!), 'in the Service\'s namespace');
    assert.ok(smSpec.endpoints.length > 0);
    for (const e of smSpec.endpoints) {
      assert.ok(api.spec.ports.some((p) => p.name === e.port), `the endpoint port ${e.port} is a port name of gridsteer-api`);
      assert.equal(e.path ?? '/metrics', '/metrics');
      assert.equal(e.scheme ?? 'http', 'http');
    }

    if (mode.workloadKind === 'Deployment') {
      const dns = one<ServiceObject>(v.objects, 'Service', 'gridsteer-dns');
      assert.equal(dns.spec.type, 'LoadBalancer');
      assert.equal(dns.spec.externalTrafficPolicy, 'Local', 'the pods see the clients\' own addresses (GridSteer places clients by them)');
      assert.deepEqual(dns.spec.ports.map((p) => `${p.port}/${p.protocol}`).sort(), ['53/TCP', '53/UDP'], 'UDP and TCP 53 on one address');
      assert.equal(v.workload.spec.replicas, 3);
      const pdb = one(v.objects, 'PodDisruptionBudget');
      const pdbSpec = pdb.spec as { minAvailable?: number; selector: Selector };
      assert.equal(pdbSpec.minAvailable, 2);
      assert.ok(pdbSpec.minAvailable! < v.workload.spec.replicas!, 'a drain can still evict one pod');
      assert.ok(selects(pdbSpec.selector, v.labels), 'the PodDisruptionBudget selects the pods');
      const spread = v.pod.topologySpreadConstraints ?? [];
      assert.ok(spread.some((c) => c.topologyKey === 'kubernetes.io/hostname'), 'spread over nodes');
      for (const c of spread) assert.ok(c.labelSelector && selects(c.labelSelector, v.labels), `the spread over ${c.topologyKey} counts these pods`);
    } else {
      assert.equal(v.pod.hostNetwork, true, 'the node\'s network');
      assert.equal(v.pod.dnsPolicy, 'ClusterFirstWithHostNet', 'the Sentinels\' names still resolve');
      assert.ok(v.pod.nodeSelector && Object.keys(v.pod.nodeSelector).length > 0, 'only on the nodes that announce the anycast address');
      assert.deepEqual(byKind<ServiceObject>(v.objects, 'Service').filter((s) => s.spec.type === 'LoadBalancer'), [], 'no load balancer');
      assert.deepEqual(byKind(v.objects, 'PodDisruptionBudget'), []);
      // The anycast address is what the zone's NS glue points at.
      const zones = v.config.zones as { nameservers: { addresses?: string[] }[] }[];
      const glue = zones.flatMap((z) => z.nameservers.flatMap((n) => n.addresses ?? []));
      for (const l of v.dnsListen) assert.ok(glue.includes(l.replace(/:\d+$/, '').replace(/^\[|\]$/g, '')), `${l}: a glue address of the zone`);
    }
  });
}

test('both ways of running use the same image and the same configuration', () => {
  const [a, b] = MODES.map(podView) as [PodView, PodView];
  assert.equal(a.gs.image, b.gs.image);
  assert.deepEqual(a.config, b.config);
  assert.deepEqual(a.gs.volumeMounts, b.gs.volumeMounts);
});

// ================================================================== secret.example.yaml

test('secret.example.yaml: Secrets with placeholders only; its tokens file has the format of docs/api.md and parses with the server\'s token loader once filled in', (t) => {
  const docs = readManifest(SECRET_EXAMPLE);
  for (const d of docs) assertValid(d, 'secret.example.yaml');
  assert.deepEqual(docs.map((d) => `${d.kind} ${d.metadata.name}`), ['Secret gridsteer-tokens', 'Secret gridsteer-geoipupdate']);
  const text = readFileSync(SECRET_EXAMPLE, 'utf8');
  assert.doesNotMatch(text, /\b[0-9a-fA-F]{64}\b/, 'no hash in the example: every token is a placeholder');

  const tokensYaml = (docs[0]!.stringData as Record<string, string>)['tokens.yaml']!;
  const dir = tempDir(t, 'gridsteer-k8s-tokens-');
  // As it is: the loader refuses exactly the placeholders, nothing else.
  writeFileSync(join(dir, 'as-is.yaml'), tokensYaml);
  const entries = (parseYaml(tokensYaml) as { tokens: { name: string; role: string }[] }).tokens;
  assert.throws(
    () => loadTokens({ file: join(dir, 'as-is.yaml') }),
    (e: Error) =>
      e instanceof TokenLoadError &&
      e.problems.length === entries.length &&
      e.problems.every((p, i) => p.includes(`tokens[${i}].sha256: must be 64 hex digits`)),
  );
  // Filled in (what exampleSecrets does for the other tests): every holder's token verifies with its role.
  const { secrets, tokens } = exampleSecrets();
  writeFileSync(join(dir, 'filled.yaml'), secrets.get('gridsteer-tokens')!['tokens.yaml']!);
  const store = loadTokens({ file: join(dir, 'filled.yaml') });
  assert.deepEqual(store.list().map((x) => `${x.role}:${x.name}`), entries.map((x) => `${x.role}:${x.name}`));
  assert.deepEqual(new Set(entries.map((x) => x.role)), new Set(['operator', 'viewer', 'ingest']), 'one token of each role');
  const placeholders = [...tokensYaml.matchAll(/REPLACE_WITH_SHA256_[A-Z0-9_]+/g)].map((m) => m[0]);
  placeholders.forEach((p, i) => assert.equal(store.verify(tokens.get(p)!)?.name, entries[i]!.name));

  const geo = docs[1]!.stringData as Record<string, string>;
  assert.deepEqual(Object.keys(geo).sort(), ['account-id', 'license-key']);
  for (const v of Object.values(geo)) assert.match(v, /^REPLACE_WITH_[A-Z0-9_]+$/);
});

// ================================================================== README.md

test('README.md: how to apply, and every file of infra/kubernetes', () => {
  const text = readFileSync(README, 'utf8');
  for (const cmd of ['kubectl apply -k infra/kubernetes', 'kubectl apply -k infra/kubernetes/overlays/anycast']) assert.ok(text.includes(cmd), `README.md says ${cmd}`);
  for (const f of walk(K8S)) {
    const rel = relative(K8S, f);
    if (f === README || rel.startsWith('base/regions/')) continue;
    assert.ok(text.includes(rel), `README.md names ${rel}`);
  }
  assert.ok(text.includes('base/regions/'), 'README.md names base/regions/');
});
