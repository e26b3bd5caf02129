/**
 * The collector registry: one import and one line per collector. A collector runs when its
 * name has a section under `collectors:` in gridsteer.yaml (its README says what goes there).
 */
import type { Collector } from './types.js';
import { mdCell, mdTable } from '../gslb/model/markdown.js';
import { health } from './health/index.js';
import { prometheus } from './prometheus/index.js';
import { carbon } from './carbon/index.js';
import { openadr3 } from './openadr3/index.js';
import { gridAlerts } from './grid-alerts/index.js';
import { mqttCollector } from './mqtt/index.js';
import { prometheusRemoteWrite } from './prometheus-remote-write/index.js';

export const collectors: readonly Collector[] = [health as Collector, prometheus as Collector, carbon as Collector, openadr3 as Collector, gridAlerts as Collector, mqttCollector as Collector, prometheusRemoteWrite as Collector];

/** How each mode runs, in the collector table's words. */
const MODE_WORDS: Record<Collector['mode'], string> = {
  poller: 'poller (one node, under the lease)',
  receiver: 'receiver (every node)',
};

/** The collector table as collectors/README.md holds it (Markdown, between its markers): one row per registered collector, in the registry's order. */
export function collectorTable(): string {
  return mdTable(
    ['collector', 'mode', 'sources', 'facts', 'README'],
    collectors.map((c) => [`\`${c.name}\``, MODE_WORDS[c.mode], `\`${c.sources}\``, mdCell(c.summary), `[${c.name}](${c.name}/README.md)`]),
  );
}
