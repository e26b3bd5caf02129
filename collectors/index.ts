/**
 * The collector registry: one import and one line per collector. A collector runs when its
 * name has a section under `collectors:` in gridsteer.yaml (its README says what goes there).
 */
import type { Collector } from './types.js';
import { health } from './health/index.js';
import { prometheus } from './prometheus/index.js';
import { carbon } from './carbon/index.js';
import { openadr3 } from './openadr3/index.js';
import { gridAlerts } from './grid-alerts/index.js';
import { mqttCollector } from './mqtt/index.js';
import { prometheusRemoteWrite } from './prometheus-remote-write/index.js';

export const collectors: readonly Collector[] = [health as Collector, prometheus as Collector, carbon as Collector, openadr3 as Collector, gridAlerts as Collector, mqttCollector as Collector, prometheusRemoteWrite as Collector];
