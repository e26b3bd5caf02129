/**
 * The GridSteer dashboard (docs/dashboard.md): the fleet on a world map, a timeline of grid
 * events and scheduled drain steps, a region's detail with its signals and reasons, an explain
 * box, drain/undrain and fail over (force down/up, clear) with a preview before confirming, and
 * the automation freeze switch in the header. Everything comes from the API the CLI uses; live
 * through GET /v1/stream (and GET /v1/status on each of its updates, for the freeze).
 */
import { ApiFailure, call, setToken, stream, token } from './api.js';
import { fill, h, pct, span, utc, utcFull, watts, withTimes } from './dom.js';
import { placeLabels } from './labels.js';
import type { Explain, Fleet, GridEventView, Override, Plan, Preview, RegionView, Status, WindowOccurrence } from './types.js';

interface Me {
  name: string | null;
  role: string | null;
}

const state: {
  me: Me | null;
  fleet: Fleet | null;
  plan: Plan | null;
  frozen: Status['frozen'];
  /** Whether GET /v1/status has answered since signing in (until then the freeze is unknown). */
  statusKnown: boolean;
  selected: string | null;
  land: string | null;
  /** The server's clock rate against ours and its last reading, so countdowns follow it (a test clock may run fast). */
  rate: number;
  lastServer: { server: number; local: number } | null;
} = { me: null, fleet: null, plan: null, frozen: null, statusKnown: false, selected: null, land: null, rate: 1, lastServer: null };

const serverNow = () => (state.lastServer ? state.lastServer.server + (Date.now() - state.lastServer.local) * state.rate : Date.now());

function message(text: string, kind: 'ok' | 'error' | 'info' = 'info'): void {
  fill('messages', h('div', { class: `msg msg-${kind}`, role: kind === 'error' ? 'alert' : 'status' }, text));
}

function failureText(e: unknown): string {
  if (e instanceof ApiFailure) return `${e.status} ${e.code}: ${e.message}`;
  return e instanceof Error ? e.message : String(e);
}

// ---------- header ----------

function renderHeader(): void {
  const f = state.fleet;
  const who = state.me
    ? state.me.role === null
      ? 'no tokens configured: read only'
      : `${state.me.name} · ${state.me.role}`
    : token()
      ? 'checking token…'
      : 'not signed in';
  fill('who', who);
  // Signed out, the header offers only signing in.
  (document.getElementById('token-clear') as HTMLButtonElement).hidden = !token();
  const spill = Object.values(state.plan?.unplaced ?? {}).reduce((n, q) => n + q, 0);
  fill('plan-version', f ? `plan ${f.planVersion.slice(0, 12)} · store rev ${f.revision}` : '');
  fill(
    'banner',
    f?.storeLoss
      ? h(
          'span',
          { class: 'badge badge-unplaced', id: 'store-loss', title: `${f.storeLoss.why}. Put back what was lost, then: gridsteer store confirm-loss --reason "…"` },
          `STATE STORE LOST DATA (seen ${utc(f.storeLoss.detectedAt)}): this node serves its plan of revision ${f.storeLoss.seenRevision} until an operator confirms`,
        )
      : null,
    f && f.unplaced > 0.0005 ? h('span', { class: 'badge badge-unplaced', id: 'unplaced', title: 'no region admits it: whenAllDown answers it' }, `${pct(f.unplaced)} of demand unplaced`) : null,
    spill > 0
      ? h(
          'span',
          { class: 'badge badge-unplaced', id: 'unplaced-qps', title: 'measured demand that no region with headroom can take (the plan\u2019s unplaced demand)' },
          `${spill.toFixed(1)} q/s without headroom (from ${Object.keys(state.plan?.unplaced ?? {}).sort().join(', ')})`,
        )
      : null,
  );
  document.body.dataset.role = state.me?.role ?? '';
  renderAutomation();
  renderAlerts();
}

/** Words for how far off an instant is, e.g. "in 23 min" or "12 min ago" (server clock). */
function fromNow(t: number): string {
  const min = Math.round((t - serverNow()) / 60_000);
  if (Math.abs(min) < 1) return 'now';
  const span = Math.abs(min) >= 120 ? `${Math.round(Math.abs(min) / 60)} h` : `${Math.abs(min)} min`;
  return min > 0 ? `in ${span}` : `${span} ago`;
}

/**
 * The plan's alerts (ADR 0014), critical first, under the header: a loss waiting for a second
 * source or an operator, a trusted loss planned beyond the safety limits, a cap the limits
 * hold; each says when the event starts and until when an operator can still act. Records
 * held out of planning (ADR 0020) say when they were found and which they are.
 */
let alertsDrawn = '';
function renderAlerts(): void {
  const el = document.getElementById('plan-alerts')!;
  const alerts = [...(state.plan?.alerts ?? [])].sort((a, b) => (a.severity === b.severity ? a.at - b.at : a.severity === 'critical' ? -1 : 1));
  // Redrawn only when what it says changes (the header is redrawn on every status read; a
  // strip replaced under the pointer would swallow clicks further down the page).
  const key = JSON.stringify(alerts.map((a) => [a.id, a.message, fromNow(a.at), a.actBy !== undefined && a.actBy > serverNow() ? fromNow(a.actBy) : '']));
  if (key === alertsDrawn) return;
  alertsDrawn = key;
  el.hidden = alerts.length === 0;
  fill(
    'plan-alerts',
    ...alerts.map((a) =>
      h(
        'div',
        { class: `plan-alert plan-alert-${a.severity}`, 'data-kind': a.kind, 'data-regions': a.regions.join(' ') },
        h('strong', {}, `${a.severity === 'critical' ? 'CRITICAL' : 'WARNING'} \u00b7 ${a.kind} \u00b7 ${a.regions.join(', ')}`),
        ' ',
        a.message,
        h(
          'span',
          { class: 'muted' },
          // Records held out of planning (ADR 0020): when they were found and which they are; else when the event starts.
          a.kind === 'records-quarantined'
            ? ` \u00b7 found ${utcFull(a.at)} (${fromNow(a.at)}): ${a.events.join('; ')}`
            : ` \u00b7 starts ${utcFull(a.at)} (${fromNow(a.at)})${a.actBy !== undefined && a.actBy > serverNow() ? ` \u00b7 act by ${utcFull(a.actBy)} (${fromNow(a.actBy)}) for a full proactive drain` : ''}`,
        ),
      ),
    ),
  );
}

// ---------- automation freeze ----------

function freezeWords(o: Override): string {
  return `automation frozen by ${o.actor} (${o.reason}) ${o.end !== undefined ? `until ${utcFull(o.end)}` : 'until unfrozen'}`;
}

/**
 * The automation state: a compact badge and the freeze switch in the header and, while frozen,
 * a full-width strip under it saying who froze it, why and until when (the header keeps its
 * one line). The panel is redrawn only when the freeze itself changes.
 */
function renderAutomation(): void {
  const el = document.getElementById('automation')!;
  const strip = document.getElementById('frozen-banner')!;
  const toggle = document.getElementById('freeze-toggle') as HTMLButtonElement;
  const known = state.me !== null && state.statusKnown;
  const o = state.frozen;
  el.hidden = !known;
  toggle.hidden = !known;
  strip.hidden = !known || o === null;
  el.className = `automation ${o ? 'automation-frozen' : 'automation-running'}`;
  el.dataset.frozen = o ? 'true' : 'false';
  el.textContent = o ? 'automation frozen' : 'automation running';
  el.title = o ? freezeWords(o) : 'the grid policy acts on new grid facts';
  strip.dataset.frozen = o ? 'true' : 'false';
  fill(
    'frozen-banner',
    o ? h('strong', { id: 'frozen-words' }, freezeWords(o)) : null,
    o ? h('span', { class: 'muted' }, ` \u00b7 since ${utcFull(o.start)} \u00b7 ramps stop and new grid facts change nothing; overrides and health still act`) : null,
  );
  toggle.textContent = o ? 'Unfreeze\u2026' : 'Freeze\u2026';
  const panel = document.getElementById('freeze-panel')!;
  if (!known) panel.hidden = true;
  toggle.setAttribute('aria-expanded', String(!panel.hidden));
  if (!panel.hidden && panelFor !== (o?.id ?? '')) renderFreezePanel();
}

/** The freeze the open panel was drawn for ('' = none); the last previewed freeze and its end. */
let panelFor: string | null = null;
let previewedFreeze: { key: string; until: number | undefined } | null = null;

function toggleFreezePanel(): void {
  const panel = document.getElementById('freeze-panel')!;
  panel.hidden = !panel.hidden;
  if (panel.hidden) panelFor = null;
  else renderFreezePanel();
  renderAutomation();
  if (!panel.hidden) document.getElementById('freeze-reason')?.focus();
}

function renderFreezePanel(): void {
  const o = state.frozen;
  panelFor = o?.id ?? '';
  previewedFreeze = null;
  const untilKey = () => (document.getElementById('freeze-until') as HTMLInputElement | null)?.value.trim() ?? '';
  fill(
    'freeze-panel',
    h('h3', {}, o ? 'Unfreeze automation' : 'Freeze automation'),
    h(
      'p',
      { class: 'hint small' },
      o
        ? `${freezeWords(o)}, since ${utcFull(o.start)}. Unfreezing lets the grid policy act on the grid facts again (ramps resume).`
        : 'Freezing holds the grid policy\u2019s share of every region where it stands now: ramps stop and new grid facts change nothing until you unfreeze (or the end given). Operator overrides, health and measured power still act.',
    ),
    writeHint(o ? 'unfreeze' : 'freeze'),
    o
      ? h(
          'form',
          { id: 'freeze-form', class: 'drain', onsubmit: (e: Event) => e.preventDefault() },
          h('label', { class: 'wide' }, 'reason ', h('input', { id: 'freeze-reason', type: 'text', maxlength: 500, placeholder: 'why (audited)', required: true })),
          h('button', { id: 'unfreeze', type: 'button', onclick: () => void setFrozen(false) }, 'Unfreeze'),
          h('button', { type: 'button', class: 'link', onclick: toggleFreezePanel }, 'Close'),
        )
      : h(
          'form',
          { id: 'freeze-form', class: 'drain', onsubmit: (e: Event) => e.preventDefault() },
          h('label', {}, 'until (min) ', h('input', { id: 'freeze-until', type: 'number', min: 1, max: 10080, step: 1, placeholder: 'no end', oninput: () => guardConfirm('freeze-confirm', previewedFreeze?.key ?? null, untilKey()) })),
          h('label', { class: 'wide' }, 'reason ', h('input', { id: 'freeze-reason', type: 'text', maxlength: 500, placeholder: 'why (audited)', required: true })),
          h('button', { id: 'freeze-preview', type: 'button', onclick: () => void previewFreeze() }, 'Preview freeze'),
          h('button', { id: 'freeze-confirm', type: 'button', class: 'danger', disabled: true, onclick: () => void setFrozen(true) }, 'Confirm freeze'),
          h('button', { type: 'button', class: 'link', onclick: toggleFreezePanel }, 'Close'),
        ),
    h('div', { id: 'freeze-preview-result' }),
  );
}

function freezeUntilInput(): { key: string; minutes: number | null } {
  const raw = (document.getElementById('freeze-until') as HTMLInputElement | null)?.value.trim() ?? '';
  return { key: raw, minutes: raw === '' ? null : Number(raw) };
}

async function previewFreeze(): Promise<void> {
  const { key, minutes } = freezeUntilInput();
  previewedFreeze = null;
  guardConfirm('freeze-confirm', null, key);
  if (minutes !== null && !(Number.isFinite(minutes) && minutes > 0)) {
    message('"until" is a number of minutes from now (empty: no end).', 'error');
    return;
  }
  const until = minutes === null ? undefined : Math.round(serverNow() + minutes * 60_000);
  const ok = await showPreview('freeze-preview-result', { freeze: true }, null, 'freeze-preview-summary', () => `Freezing automation now ${until === undefined ? 'until unfrozen' : `until ${utcFull(until)}`}`);
  if (!ok) return;
  previewedFreeze = { key, until };
  guardConfirm('freeze-confirm', key, freezeUntilInput().key);
}

async function setFrozen(frozen: boolean): Promise<void> {
  const reason = (document.getElementById('freeze-reason') as HTMLInputElement).value.trim();
  const p = previewedFreeze;
  if (frozen && (p === null || p.key !== freezeUntilInput().key)) {
    message('The freeze changed since its preview: preview it again before confirming.', 'error');
    guardConfirm('freeze-confirm', null, '');
    return;
  }
  if (!hasReason(reason, frozen ? 'A freeze' : 'An unfreeze', 'freeze-reason')) return;
  try {
    const r = await call<{ frozen: Override | null; ended: Override[] }>('POST', '/v1/automation/freeze', { frozen, reason, ...(frozen && p?.until !== undefined ? { until: p.until } : {}) });
    message(r.frozen ? `Automation frozen (override ${r.frozen.id}).` : `Automation unfrozen: ${r.ended.length} freeze(s) ended.`, 'ok');
    state.frozen = r.frozen;
    state.statusKnown = true;
    const panel = document.getElementById('freeze-panel')!;
    panel.hidden = true;
    panelFor = null;
    previewedFreeze = null;
    renderAutomation();
    void refreshPlan();
  } catch (e) {
    message(`${frozen ? 'Freeze' : 'Unfreeze'} refused: ${failureText(e)}`, 'error');
  }
}

function setLive(text: string, ok: boolean): void {
  const el = fill('live', text);
  el.className = ok ? 'live live-ok' : 'live live-bad';
}

// ---------- map ----------

const MAP = { x0: 0, y0: 6, w: 360, h: 146 };

function renderMap(): void {
  const f = state.fleet;
  const svg = h('svg', { viewBox: `${MAP.x0} ${MAP.y0} ${MAP.w} ${MAP.h}`, class: 'map', role: 'img', 'aria-label': 'regions on a world map' });
  svg.append(h('rect', { x: MAP.x0, y: MAP.y0, width: MAP.w, height: MAP.h, class: 'sea' }));
  if (state.land) svg.append(h('path', { d: state.land, class: 'land' }));
  const dotOf = (r: RegionView) => ({ id: r.id, x: r.location!.lon + 180, y: 90 - r.location!.lat, r: 1.6 + 5 * Math.sqrt(Math.max(0, r.traffic)) + 1.2, text: `${r.id} ${pct(r.share)}` });
  const located = (f?.regions ?? []).filter((r) => r.location);
  const labels = placeLabels(located.map(dotOf));
  for (const r of located) {
    const { x, y, r: halo, text } = dotOf(r);
    const rad = halo - 1.2;
    const st = r.state;
    const at = labels.get(r.id)!;
    const g = h(
      'g',
      { class: `region region-${st}${state.selected === r.id ? ' selected' : ''}${r.refuse ? ' refuse' : ''}`, 'data-region': r.id, 'data-state': st, tabindex: 0, onclick: () => select(r.id) },
      h('title', {}, `${r.name}: ${st}, share ${pct(r.share)}, traffic ${pct(r.traffic)}${r.power.headroomW !== undefined ? `, power headroom ${watts(r.power.headroomW)}` : ''}`),
      h('circle', { cx: x, cy: y, r: halo, class: 'halo' }),
      h('circle', { cx: x, cy: y, r: rad, class: 'dot' }),
      h('text', { x: at.x, y: at.y, 'text-anchor': at.anchor, class: 'label' }, text),
    );
    svg.append(g);
  }
  fill('map', svg);
}

// ---------- region table ----------

function nextWords(r: RegionView): string | HTMLElement {
  if (!r.next) return '—';
  const to = r.next.down ? 'down' : pct(r.next.share);
  const iso = new Date(r.next.at).toISOString();
  if (r.next.ifNotRefreshed) return h('time', { datetime: iso, title: `${iso}: only if a fact it depends on is not reported again by then (it goes stale); a collector still reporting moves this on` }, `→ ${to} in ${span(r.next.at - serverNow())} if stale`);
  return h('time', { datetime: iso, title: iso }, `→ ${to} in ${span(r.next.at - serverNow())}`);
}

/** A share bar; its width is set through the CSSOM (the page's CSP refuses style attributes). */
function bar(share: number): HTMLElement {
  const fillEl = h('div', { class: 'fill' });
  fillEl.style.width = `${Math.round(Math.max(0, Math.min(1, share)) * 100)}%`;
  return h('div', { class: 'bar' }, fillEl);
}

const NUMERIC_COLUMNS = new Set(['admission share', 'traffic', 'power headroom', 'probes up', 'rank', 'km', 'weight', 'age']);

function renderTable(): void {
  const f = state.fleet;
  const rows = (f?.regions ?? []).map((r) => {
    const st = r.state;
    return h(
      'tr',
      { 'data-region': r.id, 'data-state': st, class: state.selected === r.id ? 'selected' : '', onclick: () => select(r.id) },
      h('td', {}, h('span', { class: `chip chip-${st}` }, st)),
      h('td', { class: 'id' }, r.id, h('div', { class: 'sub' }, r.name)),
      h('td', { class: 'num share' }, bar(r.share), pct(r.share)),
      h('td', { class: 'num traffic' }, pct(r.traffic)),
      h('td', { class: 'num' }, watts(r.power.headroomW)),
      h('td', { class: 'num' }, r.health ? `${r.health.up}/${r.health.total}` : '—'),
      h('td', { class: 'next' }, nextWords(r)),
      h('td', { class: 'reason' }, ...withTimes(r.reasons[0] ?? '', serverNow())),
    );
  });
  fill(
    'regions',
    h(
      'table',
      { class: 'grid' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          // Numeric columns' headers align right, over their right-aligned numbers.
          ...(['state', 'region', 'admission share', 'traffic', 'power headroom', 'probes up', 'next change', 'why'] as const).map((t) =>
            h('th', NUMERIC_COLUMNS.has(t) ? { class: 'num' } : {}, t),
          ),
        ),
      ),
      h('tbody', {}, ...rows),
    ),
  );
}

/** A change needs a reason (it is audited): false, with a message and the field focused, when there is none. */
function hasReason(reason: string, what: string, field: string): boolean {
  if (reason !== '') return true;
  message(`${what} needs a reason (it is audited).`, 'error');
  document.getElementById(field)?.focus();
  return false;
}

// ---------- region detail, drain and undrain ----------

/** The drain settings last previewed (`region|cap|rampMs`): Confirm needs a preview of exactly these. */
let previewed: string | null = null;

function select(id: string): void {
  state.selected = id;
  renderAll();
  document.getElementById('detail')?.scrollIntoView({ block: 'nearest' });
}

function renderDetail(): void {
  const r = state.fleet?.regions.find((x) => x.id === state.selected);
  if (!r) {
    fill('detail', h('p', { class: 'hint' }, 'Select a region on the map or in the table to see its signals and reasons, and to drain it.'));
    return;
  }
  fill('detail', h('div', { id: 'detail-info' }), h('div', { id: 'detail-actions' }));
  renderDetailInfo(r);
  renderDetailActions(r);
}

/** The region's facts, reasons and signals: redrawn on every live update. */
function renderDetailInfo(r: RegionView): void {
  const st = r.state;
  const power = r.power;
  fill(
    'detail-info',
    h('h2', {}, `${r.name} `, h('span', { class: 'muted' }, r.id), ' ', h('span', { class: `chip chip-${st}` }, st)),
    h(
      'dl',
      { class: 'facts' },
      h('dt', {}, 'admission share'),
      h('dd', { id: 'detail-share' }, pct(r.share)),
      h('dt', {}, 'traffic'),
      h('dd', {}, pct(r.traffic)),
      h('dt', {}, 'next change'),
      h('dd', {}, ...(r.next ? [nextWords(r), ` (${utcFull(r.next.at)})`] : ['none scheduled'])),
      h('dt', {}, 'Answer TTL now'),
      h('dd', { title: 'the TTL an answer naming it carries now, at most: its names\' TTL, bounded by its TTL cap and its next change (it shrinks ahead of each step of a drain)' }, r.ttl !== undefined ? `${r.ttl} s` : '—'),
      h('dt', {}, 'TTL cap'),
      h('dd', {}, r.ttlCap !== undefined ? `${r.ttlCap} s` : '—'),
      h('dt', {}, 'place'),
      h('dd', {}, r.location ? `${r.location.city ?? ''} ${r.location.country ?? ''} (${r.location.lat}, ${r.location.lon})` : '—'),
      h('dt', {}, 'power'),
      h(
        'dd',
        {},
        `${power.site ?? 'unknown site'}${power.balancingAuthority ? `, ${power.balancingAuthority}` : ''}; available ${watts(power.availableW)}, draw ${watts(power.drawW)}, headroom ${watts(power.headroomW)}${power.source ? ` (${power.source}, ${span(power.ageMs ?? 0)} old)` : ''}`,
      ),
    ),
    h('h3', {}, 'Why'),
    r.reasons.length ? h('ul', { class: 'reasons' }, ...r.reasons.map((x) => h('li', {}, ...withTimes(x, serverNow())))) : h('p', { class: 'muted' }, 'nothing limits it'),
    h('h3', {}, 'Signals'),
    r.signals.length
      ? h(
          'table',
          { class: 'grid signals' },
          h('thead', {}, h('tr', {}, ...['kind', 'source', 'written by', 'key', 'value', 'age'].map((t) => h('th', NUMERIC_COLUMNS.has(t) ? { class: 'num' } : {}, t)))),
          h(
            'tbody',
            {},
            ...r.signals.map((s) =>
              h('tr', { class: s.expired ? 'expired' : '' }, h('td', {}, s.kind), h('td', {}, s.source), h('td', { title: s.principal === undefined ? 'not recorded (an earlier build wrote it)' : s.grant !== undefined ? `under the grant ${s.grant}` : 'without a grant: never trusted for a physical loss' }, s.principal === undefined ? '—' : `${s.principal}${s.grant === undefined ? ' (no grant)' : ''}`), h('td', {}, s.key), h('td', {}, ...withTimes(s.summary, serverNow())), h('td', { class: 'num' }, `${span(s.ageMs)}${s.expired ? ' (expired)' : ''}`)),
            ),
          ),
        )
      : h('p', { class: 'muted' }, 'no signals in the store'),
  );
}

/** The hint a viewer (or a server with no tokens) sees above every change control. */
function writeHint(what: string): HTMLElement | null {
  if (state.me?.role === 'operator') return null;
  return h(
    'p',
    { class: 'hint' },
    state.me?.role === null ? 'No tokens are configured on this server: changes are refused. ' : 'Your token is not an operator\u2019s: the server will refuse changes. ',
    `Sign in with an operator token to ${what}.`,
  );
}

/** The drain and fail-over forms: drawn when a region is selected, kept across live updates (a half-typed reason survives). */
function renderDetailActions(r: RegionView): void {
  previewed = null;
  previewedForce = null;
  const drainGuard = () => guardConfirm('drain-confirm', previewed, drainKey(r.id));
  const forceGuard = () => {
    guardConfirm('force-confirm', previewedForce?.key ?? null, forceKey(r.id));
    const b = document.getElementById('force-confirm');
    if (b) b.textContent = `Confirm force ${forceInputs().state}`;
  };
  fill(
    'detail-actions',
    h('h3', {}, 'Drain'),
    writeHint('drain'),
    h(
      'form',
      { id: 'drain-form', class: 'drain', 'data-region': r.id, onsubmit: (e: Event) => e.preventDefault() },
      h('label', {}, 'keep share ', h('input', { id: 'drain-cap', type: 'number', min: 0, max: 1, step: 0.05, value: 0, oninput: drainGuard })),
      h('label', {}, 'ramp (min) ', h('input', { id: 'drain-ramp', type: 'number', min: 0, max: 1440, step: 1, value: 5, oninput: drainGuard })),
      h('label', { class: 'wide' }, 'reason ', h('input', { id: 'drain-reason', type: 'text', maxlength: 500, placeholder: 'why (audited)', required: true })),
      h('button', { id: 'drain-preview', type: 'button', onclick: () => void previewDrain(r.id) }, 'Preview drain'),
      h('button', { id: 'drain-confirm', type: 'button', class: 'danger', disabled: true, onclick: () => void confirmDrain(r.id) }, 'Confirm drain'),
      h('button', { id: 'undrain', type: 'button', onclick: () => void undrain(r.id) }, 'Undrain'),
    ),
    h('div', { id: 'preview-result' }),
    h('h3', {}, 'Fail over'),
    writeHint('fail over'),
    h(
      'p',
      { class: 'hint small' },
      'Force down takes the region out of every answer at once, whatever its health (until the time given, or until cleared). Force up keeps it in service though its probes fail, and needs an end. Clear force lets its health decide again.',
    ),
    h(
      'form',
      { id: 'force-form', class: 'drain', 'data-region': r.id, onsubmit: (e: Event) => e.preventDefault() },
      h(
        'label',
        {},
        'force ',
        h('select', { id: 'force-state', onchange: forceGuard }, h('option', { value: 'down' }, 'down'), h('option', { value: 'up' }, 'up')),
      ),
      h('label', {}, 'until (min) ', h('input', { id: 'force-until', type: 'number', min: 1, max: 10080, step: 1, placeholder: 'no end', oninput: forceGuard })),
      h('label', { class: 'wide' }, 'reason ', h('input', { id: 'force-reason', type: 'text', maxlength: 500, placeholder: 'why (audited)', required: true })),
      h('button', { id: 'force-preview', type: 'button', onclick: () => void previewForce(r.id) }, 'Preview force'),
      h('button', { id: 'force-confirm', type: 'button', class: 'danger', disabled: true, onclick: () => void confirmForce(r.id) }, 'Confirm force down'),
      h('button', { id: 'force-clear', type: 'button', onclick: () => void clearForce(r.id) }, 'Clear force'),
    ),
    h('div', { id: 'force-preview-result' }),
  );
}

function drainInputs(): { cap: number; rampMs: number; reason: string } {
  const v = (id: string) => (document.getElementById(id) as HTMLInputElement).value;
  return { cap: Number(v('drain-cap')), rampMs: Math.round(Number(v('drain-ramp')) * 60_000), reason: v('drain-reason').trim() };
}

/**
 * A dry run's answer as a table: the summary line, then at each instant of the new schedule the
 * share of all demand `focus` (when given) and every region whose expected traffic moves would
 * take, and what would be unplaced. Shared by the drain, force and freeze previews.
 */
function previewNodes(p: Preview, focus: string | null, summaryId: string, lead: (moved: string[]) => string): Node[] {
  const now = new Map((state.fleet?.regions ?? []).map((x) => [x.id, x.traffic]));
  const moved = [...now.keys()].filter((r) => r !== focus && p.shares.some((s) => Math.abs((s.regions[r] ?? 0) - (now.get(r) ?? 0)) > 0.0005));
  const regions = focus === null ? moved : [focus, ...moved];
  const summary = h(
    'p',
    { id: summaryId, class: 'preview-summary' },
    `${lead(moved)} changes the schedule of ${p.changed.length ? p.changed.join(', ') : 'no region'}${moved.length ? `; ${focus === null ? 'traffic moves at' : 'its traffic moves to'} ${moved.join(', ')}` : ''}.${regions.length ? ' Expected traffic (share of all demand):' : ''}`,
  );
  if (regions.length === 0) return [summary];
  const rows = p.shares.slice(0, 12).map((s) => h('tr', {}, h('td', {}, utc(s.at)), ...regions.map((r) => h('td', { class: 'num', 'data-region': r }, pct(s.regions[r] ?? 0))), h('td', { class: 'num' }, pct(s.unplaced))));
  return [summary, h('table', { class: 'grid preview' }, h('thead', {}, h('tr', {}, h('th', {}, 'UTC'), ...regions.map((r) => h('th', { class: 'num' }, r)), h('th', { class: 'num' }, 'unplaced'))), h('tbody', {}, ...rows))];
}

/** Asks the server for a dry run and shows it in `#outId`; true when it answered. */
async function showPreview(outId: string, body: unknown, focus: string | null, summaryId: string, lead: (moved: string[]) => string): Promise<boolean> {
  const out = document.getElementById(outId)!;
  out.replaceChildren(h('p', { class: 'muted' }, 'previewing…'));
  try {
    const p = await call<Preview>('POST', '/v1/plan/preview', body);
    fill('messages');
    out.replaceChildren(...previewNodes(p, focus, summaryId, lead));
    return true;
  } catch (e) {
    out.replaceChildren();
    message(`Preview refused: ${failureText(e)}`, 'error');
    return false;
  }
}

/** Enables `buttonId` only while `current()` equals what was previewed. */
function guardConfirm(buttonId: string, previewedKey: string | null, current: string): void {
  const b = document.getElementById(buttonId) as HTMLButtonElement | null;
  if (b) b.disabled = previewedKey === null || previewedKey !== current;
}

const drainKey = (id: string) => {
  const { cap, rampMs } = drainInputs();
  return `${id}|${cap}|${rampMs}`;
};

async function previewDrain(id: string): Promise<void> {
  const { cap, rampMs } = drainInputs();
  const key = drainKey(id);
  previewed = null;
  guardConfirm('drain-confirm', previewed, key);
  const ok = await showPreview('preview-result', { override: { region: id, action: 'drain', value: cap, ramp: rampMs } }, id, 'preview-summary', () => `Draining ${id} to ${pct(cap)} ${rampMs > 0 ? `over ${span(rampMs)}` : 'at once'}`);
  if (!ok) return;
  previewed = key;
  guardConfirm('drain-confirm', previewed, drainKey(id));
}

async function confirmDrain(id: string): Promise<void> {
  const { cap, rampMs, reason } = drainInputs();
  if (previewed !== drainKey(id)) {
    message('The drain changed since its preview: preview it again before confirming.', 'error');
    guardConfirm('drain-confirm', null, '');
    return;
  }
  if (!hasReason(reason, 'A drain', 'drain-reason')) return;
  try {
    const o = await call<{ id: string }>('POST', `/v1/regions/${encodeURIComponent(id)}/drain`, { reason, cap, ...(rampMs > 0 ? { ramp: rampMs } : {}) });
    message(`Drain of ${id} started (override ${o.id}).`, 'ok');
    previewed = null;
    (document.getElementById('drain-confirm') as HTMLButtonElement).disabled = true;
    void refreshPlan();
  } catch (e) {
    message(`Drain refused: ${failureText(e)}`, 'error');
  }
}

async function undrain(id: string): Promise<void> {
  const { reason } = drainInputs();
  if (!hasReason(reason, 'An undrain', 'drain-reason')) return;
  try {
    const r = await call<{ ended: unknown[] }>('DELETE', `/v1/regions/${encodeURIComponent(id)}/drain?reason=${encodeURIComponent(reason)}`);
    message(`Undrain of ${id}: ${r.ended.length} drain(s) ended; traffic ramps back.`, 'ok');
    void refreshPlan();
  } catch (e) {
    message(`Undrain refused: ${failureText(e)}`, 'error');
  }
}

// ---------- fail over: force down / force up / clear ----------

/** The force last previewed: its settings' key and the end it was previewed with (sent as is on Confirm). */
let previewedForce: { key: string; until: number | undefined } | null = null;

function forceInputs(): { state: 'down' | 'up'; minutes: number | null; reason: string } {
  const v = (id: string) => (document.getElementById(id) as HTMLInputElement | HTMLSelectElement).value;
  const raw = v('force-until').trim();
  return { state: v('force-state') === 'up' ? 'up' : 'down', minutes: raw === '' ? null : Number(raw), reason: v('force-reason').trim() };
}

const forceKey = (id: string) => {
  const { state: st, minutes } = forceInputs();
  return `${id}|${st}|${minutes ?? ''}`;
};

function untilWords(until: number | undefined): string {
  return until === undefined ? 'until cleared' : `until ${utcFull(until)}`;
}

async function previewForce(id: string): Promise<void> {
  const { state: st, minutes } = forceInputs();
  const key = forceKey(id);
  previewedForce = null;
  guardConfirm('force-confirm', null, key);
  if (minutes !== null && !(Number.isFinite(minutes) && minutes > 0)) {
    message('"until" is a number of minutes from now (empty: no end).', 'error');
    return;
  }
  if (st === 'up' && minutes === null) {
    message('A force up needs "until": a forgotten force up keeps a dead region in service.', 'error');
    document.getElementById('force-until')?.focus();
    return;
  }
  const until = minutes === null ? undefined : Math.round(serverNow() + minutes * 60_000);
  const ok = await showPreview(
    'force-preview-result',
    { override: { region: id, action: st === 'down' ? 'force-down' : 'force-up', ...(until !== undefined ? { end: until } : {}) } },
    id,
    'force-preview-summary',
    () => `Forcing ${id} ${st} ${untilWords(until)}`,
  );
  if (!ok) return;
  previewedForce = { key, until };
  guardConfirm('force-confirm', key, forceKey(id));
}

async function confirmForce(id: string): Promise<void> {
  const { state: st, reason } = forceInputs();
  const p = previewedForce;
  if (p === null || p.key !== forceKey(id)) {
    message('The force changed since its preview: preview it again before confirming.', 'error');
    guardConfirm('force-confirm', null, '');
    return;
  }
  if (!hasReason(reason, 'A force', 'force-reason')) return;
  try {
    const r = await call<{ force: Override; ended: Override[] }>('POST', `/v1/regions/${encodeURIComponent(id)}/force`, { state: st, reason, ...(p.until !== undefined ? { until: p.until } : {}) });
    message(`Force ${st} of ${id} in force ${untilWords(r.force.end)} (override ${r.force.id}${r.ended.length ? `; replaced ${r.ended.map((o) => o.id).join(', ')}` : ''}).`, 'ok');
    previewedForce = null;
    guardConfirm('force-confirm', null, '');
    document.getElementById('force-preview-result')?.replaceChildren();
    void refreshPlan();
  } catch (e) {
    message(`Force refused: ${failureText(e)}`, 'error');
  }
}

async function clearForce(id: string): Promise<void> {
  const { reason } = forceInputs();
  if (!hasReason(reason, 'Clearing a force', 'force-reason')) return;
  try {
    const r = await call<{ ended: Override[] }>('DELETE', `/v1/regions/${encodeURIComponent(id)}/force?reason=${encodeURIComponent(reason)}`);
    message(`Force of ${id} cleared: ${r.ended.map((o) => `${o.action} by ${o.actor}`).join(', ')} ended; its health decides again.`, 'ok');
    void refreshPlan();
  } catch (e) {
    message(`Clear force refused: ${failureText(e)}`, 'error');
  }
}

// ---------- timeline ----------

/** What a plan step's reason says when a fact gone stale caused it (the API's words, gslb/policy/rules/rule.ts STALE_MARK). */
const STALE_MARK = 'is stale (policy: ';

function renderTimeline(): void {
  const f = state.fleet;
  if (!f) return;
  const now = serverNow();
  const steps = state.plan?.regions ?? {};
  let end = now + 3 * 3_600_000;
  for (const e of f.events) if (e.end !== undefined && e.end > end) end = e.end + 1_800_000;
  for (const list of Object.values(steps)) for (const s of list) if (s.at > end && s.at < now + 48 * 3_600_000) end = s.at + 1_800_000;
  // Upcoming recurring windows are drawn ahead (the plan holds the next two days of them).
  const windows = (state.plan?.windows ?? []).filter((w) => w.end > now);
  for (const w of windows) if (w.end > end && w.start < now + 48 * 3_600_000) end = w.end + 1_800_000;
  end = Math.min(end, now + 48 * 3_600_000);
  const start = now - 1_800_000;
  const W = 1000;
  const L = 90;
  const R = 10;
  const ROW = 26;
  const top = 18;
  const x = (t: number) => L + ((Math.min(Math.max(t, start), end) - start) / (end - start)) * (W - L - R);
  const regions = f.regions;
  const Hh = top + regions.length * ROW + 6;
  const svg = h('svg', { viewBox: `0 0 ${W} ${Hh}`, class: 'timeline', role: 'img', 'aria-label': 'timeline of grid events and drain steps' });
  const hour = 3_600_000;
  const stepH = end - start > 12 * hour ? 6 * hour : end - start > 4 * hour ? 2 * hour : hour;
  for (let t = Math.ceil(start / stepH) * stepH; t <= end; t += stepH) {
    svg.append(h('line', { x1: x(t), x2: x(t), y1: top - 4, y2: Hh, class: 'tick' }), h('text', { x: x(t), y: 11, class: 'tick-label' }, `${utc(t)}`));
  }
  regions.forEach((r, i) => {
    const y0 = top + i * ROW;
    svg.append(h('text', { x: 4, y: y0 + ROW / 2 + 4, class: 'row-label' }, r.id));
    svg.append(h('rect', { x: L, y: y0 + 2, width: W - L - R, height: ROW - 4, class: 'row-bg' }));
    for (const e of f.events.filter((ev) => ev.region === r.id)) {
      const s = e.start ?? now;
      const en = e.end ?? end;
      if (en < start || s > end) continue;
      svg.append(
        h(
          'rect',
          { x: x(s), y: y0 + 3, width: Math.max(2, x(en) - x(s)), height: ROW - 6, class: `event event-${e.kind.replace('.', '-')}${e.cancelled ? ' cancelled' : ''}${e.phase === 'over' ? ' history' : ''}`, 'data-event': e.key },
          h('title', {}, eventWords(e)),
        ),
      );
      if (e.learnedAt >= start) svg.append(h('line', { x1: x(e.learnedAt), x2: x(e.learnedAt), y1: y0 + 2, y2: y0 + ROW - 2, class: 'learned' }, h('title', {}, `learned ${utcFull(e.learnedAt)}`)));
    }
    for (const w of windows.filter((o) => o.regions.includes(r.id))) {
      if (w.start > end) continue;
      svg.append(
        h(
          'rect',
          { x: x(w.start), y: y0 + 3, width: Math.max(2, x(w.aborted?.at ?? w.end) - x(w.start)), height: ROW - 6, class: `window window-${w.kind}${w.skipped ? ' skipped' : ''}`, 'data-window': w.window },
          h('title', {}, windowWords(w)),
        ),
      );
    }
    // The admission share from now on, from the plan's schedule (a step line, 1 at the top of
    // the row). The plan holds no history: nothing is drawn before now.
    // From a step that a fact going stale causes (a reason with the stale mark, new at that
    // step) on, the line is dashed: it happens only if no collector reports the fact again
    // (the region list says "if stale"), and a collector still reporting moves it on.
    const list = steps[r.id] ?? [];
    const yOf = (share: number) => y0 + 3 + (1 - share) * (ROW - 6);
    let prev = 1;
    const before = [...list].filter((s) => s.at <= now).pop();
    if (before) prev = before.down ? 0 : before.share;
    let d = `M${x(now)} ${yOf(prev)}`;
    let dStale = '';
    let prevReasons = before?.reasons ?? [];
    for (const s of list) {
      if (s.at <= now || s.at > end) continue;
      const v = s.down ? 0 : s.share;
      const stale = dStale !== '' || s.reasons.some((w) => w.includes(STALE_MARK) && !prevReasons.includes(w));
      if (stale && dStale === '') {
        d += `L${x(s.at)} ${yOf(prev)}`;
        dStale = `M${x(s.at)} ${yOf(prev)}`;
      }
      const seg = `L${x(s.at)} ${yOf(prev)}L${x(s.at)} ${yOf(v)}`;
      if (stale) dStale += seg;
      else d += seg;
      prev = v;
      prevReasons = s.reasons;
      const words = `${utcFull(s.at)}: ${s.down ? 'down' : pct(s.share)}${s.reasons[0] ? ` — ${s.reasons[0]}` : ''}`;
      svg.append(h('circle', { cx: x(s.at), cy: yOf(v), r: 1.8, class: stale ? 'step if-stale' : 'step' }, h('title', {}, stale ? `only if not reported again: ${words}` : words)));
    }
    if (dStale) dStale += `L${x(end)} ${yOf(prev)}`;
    else d += `L${x(end)} ${yOf(prev)}`;
    svg.append(h('path', { d, class: 'share-line', 'data-region': r.id }));
    if (dStale) svg.append(h('path', { d: dStale, class: 'share-line if-stale', 'data-region': r.id }, h('title', {}, 'only if a fact it depends on is not reported again (it goes stale)')));
  });
  svg.append(h('line', { x1: x(now), x2: x(now), y1: top - 6, y2: Hh, class: 'now' }), h('text', { x: x(now) + 3, y: Hh - 4, class: 'now-label' }, 'now'));
  // The server's phase decides: an event whose end has passed is history, never listed as current.
  const upcoming = f.events.filter((e) => e.phase !== 'over');
  const history = f.events.filter((e) => e.phase === 'over');
  fill(
    'timeline',
    svg,
    h('ul', { class: 'events' }, ...(upcoming.length ? upcoming.map((e) => h('li', { 'data-event': e.key }, eventWords(e))) : [h('li', { class: 'muted' }, 'no grid events or alerts in force or announced')])),
    ...(history.length
      ? [h('p', { class: 'muted history-title' }, 'history (ended; acted on no more):'), h('ul', { class: 'events history' }, ...history.map((e) => h('li', { 'data-event': e.key }, eventWords(e))))]
      : []),
    ...(windows.length ? [h('ul', { class: 'events windows' }, ...windows.map((w) => h('li', { 'data-window': w.window }, windowWords(w))))] : []),
  );
}

function windowWords(w: WindowOccurrence): string {
  const what = w.kind === 'practice' ? 'practice run' : `${w.kind} window`;
  const cap = w.cap > 0 ? `capped at ${pct(w.cap)}` : 'drained';
  const state = w.skipped ? ` — skipped: ${w.skipped}` : w.aborted ? ` — aborted at ${utc(w.aborted.at)}: ${w.aborted.why}` : '';
  return `${w.regions.join(', ')}: ${what} ${w.window} (${w.reason}), ${utcFull(w.start)} – ${utc(w.end)}, ${cap}${state}`;
}

function eventWords(e: GridEventView): string {
  const when = e.start !== undefined ? `${utcFull(e.start)}${e.end !== undefined ? ` – ${utc(e.end)}` : ''}` : 'now';
  const lvl = e.level !== undefined ? ` level ${e.level}` : '';
  const phase = e.replay ? 'over — a replay: learned after its end, never acted on' : e.phase;
  return `${e.region}: ${e.kind === 'grid.alert' ? 'alert' : 'event'} ${e.type}${lvl}, ${when}, from ${e.source}${e.principal ? ` by ${e.principal}` : ''}${e.program ? ` (${e.program})` : ''}; learned ${span(serverNow() - e.learnedAt)} ago — ${phase}`;
}

// ---------- explain ----------

async function explain(ev: Event): Promise<void> {
  ev.preventDefault();
  const v = (id: string) => (document.getElementById(id) as HTMLInputElement | HTMLSelectElement).value.trim();
  const q = new URLSearchParams({ client: v('explain-client'), name: v('explain-name'), type: v('explain-type') });
  if (v('explain-subnet') !== '') q.set('subnet', v('explain-subnet'));
  const out = document.getElementById('explain-result')!;
  out.replaceChildren(h('p', { class: 'muted' }, 'asking…'));
  try {
    const x = await call<Explain>('GET', `/v1/explain?${q.toString()}`);
    out.replaceChildren(
      h(
        'p',
        { class: 'answer', 'data-answer-region': x.answer.region ?? '' },
        x.answer.region ? `→ ${x.answer.region}: ${x.answer.addresses.join(', ')} (TTL ${x.answer.ttl} s${x.answer.ecsScope !== null ? `, ECS scope /${x.answer.ecsScope}` : ''})` : `→ ${x.answer.rcode}`,
      ),
      h('p', { class: 'muted' }, `${x.located ? `located at ${x.located.city ?? ''} ${x.located.country ?? ''} (${x.located.lat.toFixed(2)}, ${x.located.lon.toFixed(2)})` : 'not located'}; ${x.cell.description}; subnet ${x.subnetKey}${x.usedEcs ? ' (ECS)' : ''}`),
      h('ul', { class: 'reasons' }, ...x.reasons.map((r) => h('li', {}, ...withTimes(r, serverNow())))),
      h(
        'table',
        { class: 'grid' },
        h('thead', {}, h('tr', {}, ...['rank', 'region', 'km', 'weight', 'admitted', 'why'].map((t) => h('th', NUMERIC_COLUMNS.has(t) ? { class: 'num' } : {}, t)))),
        h(
          'tbody',
          {},
          ...x.candidates
            .filter((c) => c.rank !== null)
            .map((c) =>
              h(
                'tr',
                { class: c.answered ? 'selected' : '' },
                h('td', { class: 'num' }, c.rank ?? ''),
                h('td', {}, c.region),
                h('td', { class: 'num' }, c.distanceKm === null ? '—' : Math.round(c.distanceKm)),
                h('td', { class: 'num' }, c.down ? 'down' : pct(c.weight)),
                h('td', {}, c.admitted === null ? '—' : c.admitted ? 'yes' : 'no'),
                h('td', {}, c.why),
              ),
            ),
        ),
      ),
      ...(x.notes.length ? [h('ul', { class: 'notes muted' }, ...x.notes.map((n) => h('li', {}, n)))] : []),
    );
  } catch (e) {
    out.replaceChildren(h('p', { class: 'msg msg-error', role: 'alert' }, failureText(e)));
  }
}

// ---------- data ----------

function renderAll(): void {
  renderHeader();
  renderMap();
  renderTable();
  renderDetail();
  renderTimeline();
}

/** Re-renders all but the drain form of the region already open (a half-typed reason survives a live update). */
function renderLive(): void {
  renderHeader();
  renderMap();
  renderTable();
  const r = state.fleet?.regions.find((x) => x.id === state.selected);
  if (r && document.getElementById('drain-form')?.dataset.region === r.id) renderDetailInfo(r);
  else renderDetail();
  renderTimeline();
}

/** A housekeeping job as GET /v1/jobs gives it (the parts shown). */
interface JobRow {
  name: string;
  cron: string;
  what: string;
  nextRun: number | null;
  lastRun: { node: string; startedAt: number; outcome: string; detail: string } | null;
}

/** A practice run as GET /v1/practice-runs gives it (the parts shown). */
interface PracticeRow {
  window: string;
  regions: string[];
  start: number;
  end: number;
  outcome: 'skipped' | 'started' | 'aborted' | 'finished';
  why?: string;
  share?: number;
  restored?: boolean;
  restoredAt?: number;
  traffic?: { acting: { queries: number; moved: number } };
  probeErrors?: unknown[];
}

/** What a recorded practice run did, in words. */
function practiceWords(r: PracticeRow): string {
  if (r.outcome === 'skipped' || r.outcome === 'aborted') return r.why ?? '';
  if (r.outcome === 'started') return `under way${r.share !== undefined ? `, down to ${pct(r.share)}` : ''}`;
  const parts = [r.share !== undefined ? `down to ${pct(r.share)}` : '', r.restored ? `restored${r.restoredAt ? ` at ${utc(r.restoredAt)}` : ''}` : 'not restored'];
  if (r.traffic) parts.push(`moved ${Math.round(r.traffic.acting.moved)} of ${Math.round(r.traffic.acting.queries)} queries`);
  parts.push(`${r.probeErrors?.length ?? 0} probe errors`);
  return parts.filter((x) => x).join(', ');
}

/** GET /v1/jobs at most every 30 s (it reads the audit log); the panel says when it could not. */
let jobsAt = 0;
async function refreshJobs(force = false): Promise<void> {
  if (!force && Date.now() - jobsAt < 30_000) return;
  jobsAt = Date.now();
  try {
    const r = await call<{ jobs: JobRow[] }>('GET', '/v1/jobs');
    const rows = r.jobs.map((j) =>
      h(
        'tr',
        { 'data-job': j.name, 'data-outcome': j.lastRun?.outcome ?? 'never' },
        h('td', {}, j.name),
        h('td', {}, j.cron),
        h('td', {}, j.nextRun === null ? '—' : `${utc(j.nextRun)} (${fromNow(j.nextRun)})`),
        h('td', {}, j.lastRun ? `${utc(j.lastRun.startedAt)} on ${j.lastRun.node}` : 'never'),
        h('td', { class: `outcome outcome-${j.lastRun?.outcome ?? 'never'}` }, j.lastRun?.outcome ?? '—'),
        h('td', {}, j.lastRun?.detail || j.what),
      ),
    );
    fill(
      'jobs',
      r.jobs.length === 0
        ? h('p', { class: 'muted' }, 'no housekeeping jobs on this node')
        : h('table', { class: 'grid jobs' }, h('thead', {}, h('tr', {}, ...['job', 'cron (UTC)', 'next on this node', 'last run', 'outcome', 'what it did'].map((x) => h('th', {}, x)))), h('tbody', {}, ...rows)),
    );
  } catch (e) {
    fill('jobs', h('p', { class: 'muted' }, `jobs not available: ${failureText(e)}`));
  }
  try {
    // Newest first (the API lists them oldest first); the latest 10.
    const runs = (await call<{ runs: PracticeRow[] }>('GET', '/v1/practice-runs')).runs.slice(-10).reverse();
    fill(
      'practice',
      runs.length === 0
        ? h('p', { class: 'muted' }, 'no practice run recorded')
        : h(
            'table',
            { class: 'grid practice' },
            h('thead', {}, h('tr', {}, ...['window', 'regions', 'when', 'outcome', 'what happened'].map((x) => h('th', {}, x)))),
            h(
              'tbody',
              {},
              ...runs.map((r) =>
                h(
                  'tr',
                  { 'data-window': r.window, 'data-outcome': r.outcome },
                  h('td', {}, r.window),
                  h('td', {}, r.regions.join(', ')),
                  h('td', {}, `${utc(r.start)} – ${utc(r.end)}`),
                  h('td', { class: `outcome outcome-${r.outcome}` }, r.outcome),
                  h('td', {}, practiceWords(r)),
                ),
              ),
            ),
          ),
    );
  } catch (e) {
    fill('practice', h('p', { class: 'muted' }, `practice runs not available: ${failureText(e)}`));
  }
}

async function refreshPlan(): Promise<void> {
  try {
    state.plan = await call<Plan>('GET', '/v1/plan');
  } catch {
    /* the stream says when the server is away */
  }
  renderTimeline();
  renderHeader();
  void refreshStatus();
}

/**
 * Reads GET /v1/status for the freeze. The stream's fleet events do not carry it, so every
 * fleet event (a store write such as a freeze made elsewhere, a plan change, and at least every
 * 10 s) asks again; calls made while one is in flight coalesce into one more.
 */
let statusBusy = false;
let statusAgain = false;
async function refreshStatus(): Promise<void> {
  if (statusBusy) {
    statusAgain = true;
    return;
  }
  statusBusy = true;
  try {
    do {
      statusAgain = false;
      try {
        const st = await call<Status>('GET', '/v1/status');
        state.frozen = st.frozen;
        state.statusKnown = true;
      } catch {
        /* the stream says when the server is away */
      }
    } while (statusAgain);
  } finally {
    statusBusy = false;
  }
  renderHeader();
}

function onFleet(f: Fleet): void {
  const local = Date.now();
  if (state.lastServer && local - state.lastServer.local > 500) {
    // The server's clock may run at another rate (a test clock); follow it for countdowns.
    const r = (f.now - state.lastServer.server) / (local - state.lastServer.local);
    state.rate = r > 0.5 && r < 1000 ? r : 1;
  }
  state.lastServer = { server: f.now, local };
  const planChanged = state.fleet?.planVersion !== f.planVersion;
  state.fleet = f;
  if (planChanged) void refreshPlan();
  else void refreshStatus();
  void refreshJobs();
  renderLive();
}

let controller: AbortController | null = null;

async function connect(): Promise<void> {
  controller?.abort();
  const c = new AbortController();
  controller = c;
  let wait = 1000;
  while (!c.signal.aborted) {
    try {
      state.me = await call<Me>('GET', '/v1/whoami');
      renderHeader();
      setLive('connecting…', false);
      await stream(c.signal, (event, data) => {
        if (event === 'fleet') {
          setLive('live', true);
          wait = 1000;
          onFleet(JSON.parse(data) as Fleet);
        } else if (event === 'error') {
          setLive('store not answering', false);
        }
      });
      setLive('reconnecting…', false);
    } catch (e) {
      if (c.signal.aborted) return;
      if (e instanceof ApiFailure && (e.status === 401 || e.status === 403)) {
        state.me = null;
        // The sign-in state is said once, by #who; the live chip says only the connection.
        setLive('not connected', false);
        renderHeader();
        message(`${e.message} — enter a token above.`, 'error');
        return;
      }
      setLive('reconnecting…', false);
    }
    await new Promise((r) => setTimeout(r, wait));
    wait = Math.min(wait * 2, 15_000);
  }
}

async function loadNames(): Promise<void> {
  try {
    const cfg = await call<{ names: string[]; banner?: string }>('GET', '/v1/config');
    // http.banner (e.g. npm run demo's): said in the header on every page.
    const b = document.getElementById('site-banner')!;
    b.textContent = cfg.banner ?? '';
    b.hidden = cfg.banner === undefined;
    const sel = document.getElementById('explain-name') as HTMLSelectElement;
    sel.replaceChildren(...cfg.names.map((n) => h('option', { value: n }, n)));
  } catch {
    /* signed out: connect() says so */
  }
}

async function init(): Promise<void> {
  document.getElementById('token-form')!.addEventListener('submit', (e) => {
    e.preventDefault();
    const input = document.getElementById('token') as HTMLInputElement;
    setToken(input.value);
    input.value = '';
    state.statusKnown = false;
    message(token() ? 'Token set for this tab.' : 'Token cleared.', 'info');
    void loadNames();
    void connect();
  });
  document.getElementById('token-clear')!.addEventListener('click', () => {
    setToken(null);
    state.me = null;
    state.statusKnown = false;
    message('Token cleared.', 'info');
    void connect();
  });
  document.getElementById('explain-form')!.addEventListener('submit', (e) => void explain(e));
  document.getElementById('freeze-toggle')!.addEventListener('click', toggleFreezePanel);
  try {
    const res = await fetch('/ui/land.json');
    state.land = ((await res.json()) as { d: string }).d;
  } catch {
    state.land = null;
  }
  renderAll();
  setInterval(() => {
    if (state.fleet) {
      renderTable();
      renderTimeline();
    }
  }, 5000);
  void loadNames();
  void connect();
}

void init();
