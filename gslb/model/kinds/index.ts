/**
 * The signal kinds: one file each in this folder, one line each here. The order is the
 * order of the config reference's `policy.stale` and of the API's kind list.
 */
import type { Static } from '@sinclair/typebox';
import type { KindDef } from './kind.js';
import { mdCell, mdTable } from '../markdown.js';
import { healthProbe } from './health-probe.js';
import { loadMetrics } from './load-metrics.js';
import { capacity } from './capacity.js';
import { powerBudget } from './power-budget.js';
import { gridEvent } from './grid-event.js';
import { gridAlert } from './grid-alert.js';
import { carbon } from './carbon.js';
import { demand } from './demand.js';

export const KIND_LIST = [
  healthProbe,
  loadMetrics,
  capacity,
  powerBudget,
  gridEvent,
  gridAlert,
  carbon,
  demand,
] as const;

/** The kinds of fact a collector may emit (dotted names, see docs/conventions.md "Names"). */
export type SignalKind = (typeof KIND_LIST)[number]['name'];

/**
 * The value type of a kind, straight from its registry entry: a rule or a collector names
 * `KindValue<'grid.event'>`, so a new kind needs no re-export anywhere to be named.
 */
export type KindValue<K extends SignalKind> = Static<Extract<(typeof KIND_LIST)[number], { name: K }>['value']>;

/** Every kind by name. */
export const KINDS = Object.fromEntries(KIND_LIST.map((k) => [k.name, k])) as unknown as { readonly [K in SignalKind]: KindDef<K> };

/** The kind table as docs/api.md holds it under `POST /v1/signals` (Markdown, between its markers). */
export function kindTable(): string {
  return mdTable(
    ['kind', '`value`', 'notes'],
    KIND_LIST.map((k: KindDef) => [`\`${k.name}\``, `\`${mdCell(k.doc.value)}\``, mdCell(k.doc.notes)]),
  );
}
