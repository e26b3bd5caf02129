/**
 * Recurring windows through the API and the CLI (docs/schedules.md): list them (the
 * configuration's and those added through the API, each with its next occurrences), add one
 * (checked like the config loader checks `windows:`, with node-cron), remove one added through
 * the API, skip the next occurrence of any. Windows added through the API and skips are stored
 * like overrides (fleet-wide overrides `window` and `window-skip`: durable, audited, on every
 * node through the store) and read by the planner from the snapshot.
 */
import { FLEET, type Override, type Plan } from '../model/types.js';
import type { PlannerWindow, SafetyFacts, WindowOccurrence, WindowSpec } from '../model/windows.js';
import { checkWindow, fieldOf } from '../config/windows.js';
import { HORIZON_MS, horizonRange, nextOccurrences, type WindowSkip } from '../policy/rules/windows.js';
import { OverrideError, type StateService } from './service.js';

export interface WindowListing {
  now: number;
  /** The plan's horizon: occurrences starting in [from, to) are planned (rules/windows.ts). */
  horizon: { epoch: number; from: number; to: number } | null;
  windows: (Omit<PlannerWindow, 'fields' | 'learnedAt'> & {
    /** The override that stores it (API windows): `gridsteer windows remove` ends it. */
    overrideId?: string;
    addedBy?: string;
    /** Its next occurrences (one in progress included), skipped ones with why. */
    next: WindowOccurrence[];
  })[];
  /** Live skips (gridsteer windows skip-next), newest last. */
  skips: { id: string; window: string; at: number; actor: string; reason: string }[];
}

export interface WindowsDeps {
  svc: StateService;
  regions: () => ReadonlySet<string>;
  /** The configuration's safety facts (policy.drain limits, capacity units, names). */
  safety: () => SafetyFacts;
  plan: () => Plan | null;
  clock: () => number;
}

/** How many occurrences a listing shows per window. */
const NEXT = 3;

function skipsOf(overrides: readonly Override[]): { skips: WindowSkip[]; live: WindowListing['skips'] } {
  const skips: WindowSkip[] = [];
  const live: WindowListing['skips'] = [];
  for (const o of overrides) {
    if (o.region !== FLEET || o.action !== 'window-skip' || !o.skip) continue;
    skips.push({ window: o.skip.window, at: o.skip.at, why: `skipped by ${o.actor} (${o.reason}) [${o.id}]` });
    live.push({ id: o.id, window: o.skip.window, at: o.skip.at, actor: o.actor, reason: o.reason });
  }
  return { skips, live };
}

export class WindowsService {
  constructor(private readonly d: WindowsDeps) {}

  /** Every window (configuration first, then the API's by id) with its next occurrences. */
  async list(): Promise<WindowListing> {
    const now = this.d.clock();
    const snap = await this.d.svc.snapshot();
    const { settings } = this.d.svc.planInputs();
    const { skips, live } = skipsOf(snap.overrides);
    const stored = snap.overrides.filter((o) => o.region === FLEET && o.action === 'window' && o.window).sort((a, b) => (a.window!.id < b.window!.id ? -1 : 1));
    const all: { w: PlannerWindow; o?: Override }[] = [...(settings.windows ?? []).map((w) => ({ w })), ...stored.map((o) => ({ w: o.window!, o }))];
    const epoch = Math.floor(now / HORIZON_MS);
    return {
      now,
      horizon: all.length > 0 ? { epoch, ...horizonRange(epoch, all.map((x) => x.w), settings) } : null,
      windows: all.map(({ w, o }) => {
        const { fields: _f, learnedAt: _l, ...rest } = w;
        return { ...rest, ...(o ? { overrideId: o.id, addedBy: o.actor } : {}), next: nextOccurrences(w, skips, now, NEXT) };
      }),
      skips: live,
    };
  }

  /** The windows in force by id: the configuration's and the API's (with the override storing each). */
  private async known(): Promise<{ config: PlannerWindow[]; stored: Override[]; overrides: Override[] }> {
    const snap = await this.d.svc.snapshot();
    const stored = snap.overrides.filter((o) => o.region === FLEET && o.action === 'window' && o.window);
    return { config: this.d.svc.planInputs().settings.windows ?? [], stored, overrides: snap.overrides };
  }

  /**
   * Adds a window (body valid against WindowSpecSchema, defaults filled). Checked as the
   * config loader checks `windows:` (OverrideError naming `body.<field>`); its id must be new.
   * Stored as a fleet-wide `window` override (audited; `force` is kept in it).
   */
  async add(spec: WindowSpec, actor: string): Promise<Override> {
    const now = this.d.clock();
    const { window, problems } = checkWindow(spec, this.d.regions(), this.d.safety(), 'api', now);
    if (problems.length > 0 || !window) {
      const p = problems[0]!;
      throw new OverrideError(`body.${fieldOf(p.path)}`, p.message);
    }
    const { config, stored } = await this.known();
    if (config.some((w) => w.id === spec.id)) throw new OverrideError('body.id', `"${spec.id}" is a window of the configuration file: choose another id, or change it there`);
    if (stored.some((o) => o.window!.id === spec.id)) throw new OverrideError('body.id', `"${spec.id}" is already a window (gridsteer windows list): remove it first, or choose another id`);
    const { override } = await this.d.svc.store.createOverride({ region: FLEET, action: 'window', ramp: 0, window, actor, reason: spec.reason, start: now }, now);
    this.d.svc.planSoon();
    return override;
  }

  /** Removes a window added through the API (ends its override; audited). Config windows are removed in the config file. */
  async remove(id: string, actor: string, reason: string): Promise<Override> {
    if (reason.trim() === '') throw new OverrideError('querystring.reason', 'must say why, in words');
    const { config, stored } = await this.known();
    const o = stored.find((x) => x.window!.id === id);
    if (!o) {
      if (config.some((w) => w.id === id)) throw new OverrideError('params.id', `"${id}" is a window of the configuration file: remove it there and reload (or skip its next occurrence: gridsteer windows skip-next ${id})`);
      throw new OverrideError('params.id', `no window "${id}" (gridsteer windows list shows them)`);
    }
    const { override } = await this.d.svc.store.endOverride(o.id, actor, reason, this.d.clock());
    this.d.svc.planSoon();
    return override;
  }

  /**
   * Skips the next occurrence of a window that has not started yet (one in progress is ended
   * by an operator's undrain or by removing the window, not by a skip): stores a fleet-wide
   * `window-skip` override ending with that occurrence (audited). The planner lists the
   * occurrence as skipped, with who and why, and does not act on it.
   */
  async skipNext(id: string, actor: string, reason: string): Promise<{ skip: Override; occurrence: WindowOccurrence }> {
    if (reason.trim() === '') throw new OverrideError('body.reason', 'must say why, in words');
    const now = this.d.clock();
    const { config, stored, overrides } = await this.known();
    const w = config.find((x) => x.id === id) ?? stored.find((o) => o.window!.id === id)?.window;
    if (!w) throw new OverrideError('params.id', `no window "${id}" (gridsteer windows list shows them)`);
    const { skips } = skipsOf(overrides);
    const next = nextOccurrences(w, skips, now, 16).find((o) => o.start > now && o.skipped === undefined);
    if (!next) throw new OverrideError('params.id', `window "${id}" has no occurrence to skip in the next 62 days`);
    const { override } = await this.d.svc.store.createOverride({ region: FLEET, action: 'window-skip', ramp: 0, skip: { window: id, at: next.start }, actor, reason, start: now, end: next.end }, now);
    this.d.svc.planSoon();
    return { skip: override, occurrence: { ...next, skipped: `skipped by ${actor} (${reason}) [${override.id}]` } };
  }
}

/** One change of the configuration's `windows:` between two loads. */
export interface ConfigWindowChange {
  action: 'window.config-add' | 'window.config-change' | 'window.config-remove';
  id: string;
  before: WindowSpec | null;
  after: WindowSpec | null;
}

/** The windows a configuration (re)load adds, changes or removes, by id (in id order); none when equal. */
export function configWindowChanges(before: readonly WindowSpec[], after: readonly WindowSpec[]): ConfigWindowChange[] {
  const a = new Map(before.map((w) => [w.id, w]));
  const b = new Map(after.map((w) => [w.id, w]));
  const out: ConfigWindowChange[] = [];
  for (const id of [...new Set([...a.keys(), ...b.keys()])].sort()) {
    const x = a.get(id) ?? null;
    const y = b.get(id) ?? null;
    if (x && y && JSON.stringify(x) === JSON.stringify(y)) continue;
    out.push({ action: x === null ? 'window.config-add' : y === null ? 'window.config-remove' : 'window.config-change', id, before: x, after: y });
  }
  return out;
}

/**
 * Audits what a configuration reload changed in `windows:` (like an override change: actor
 * `config/<node>`, before and after), one entry per window. Every node that reloads audits
 * its own reload. A store that refuses the write is reported to `warn`, never thrown: the
 * reload itself has happened.
 */
export async function auditConfigWindows(svc: StateService, node: string, file: string, before: readonly WindowSpec[], after: readonly WindowSpec[], at: number, warn: (msg: string) => void): Promise<number> {
  const changes = configWindowChanges(before, after);
  for (const c of changes) {
    try {
      await svc.store.appendAudit({ at, actor: `config/${node}`, action: c.action, target: `window:${c.id}`, reason: `configuration reloaded from ${file}`, before: c.before, after: c.after });
    } catch (e) {
      warn(`config: the change of window ${c.id} was not audited (${(e as Error).message})`);
    }
  }
  return changes.length;
}
