/**
 * validateSignal(): a case table of valid and invalid signals for every kind. Each invalid
 * signal must be refused with a SignalError naming the exact field at fault, and a message
 * that says what is expected there (not TypeBox's raw text).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Signal, SignalKind } from '../model/types.js';
import { SignalError, signalId, validateSignal } from './signals.js';
import { MAX_FUTURE_MS, SIGNAL_KINDS } from '../model/signals.js';
import { KIND_LIST } from '../model/kinds/index.js';
import { INSTANT_MAX, INSTANT_MIN } from '../model/domains.js';

const NOW = 1_700_000_000_000;
const REGIONS: ReadonlySet<string> = new Set(['us-east', 'eu-west', 'ap-south']);

/** A valid signal of `kind` with `value`; `over` replaces or adds envelope fields. */
function sig(kind: SignalKind, value: unknown, over: Record<string, unknown> = {}): Record<string, unknown> {
  const key = kind === 'grid.event' && value && typeof value === 'object' && 'id' in value ? (value as { id: unknown }).id : 'ep-1';
  return { region: 'eu-west', kind, source: 'test/node-a', key, observedAt: NOW - 1000, expiresAt: NOW + 60_000, value, ...over };
}

/** The signal without `field`. */
function without(s: Record<string, unknown>, field: string): Record<string, unknown> {
  const o = { ...s };
  delete o[field];
  return o;
}

const EVENT = { id: 'ev-1', start: NOW + 3600_000, end: NOW + 7200_000, type: 'drain' };
const LONG = (n: number) => 'x'.repeat(n);

interface Valid {
  name: string;
  input: Record<string, unknown>;
  /** The instant validation runs at (default NOW). */
  now?: number;
}

const valid: Valid[] = [
  // health.probe
  { name: 'health.probe up', input: sig('health.probe', { up: true }) },
  { name: 'health.probe down with latency and detail', input: sig('health.probe', { up: false, latencyMs: 0, detail: 'connect: connection refused' }) },
  { name: 'health.probe detail of 500 characters', input: sig('health.probe', { up: false, detail: LONG(500) }) },
  // load.metrics
  { name: 'load.metrics one field', input: sig('load.metrics', { queueDepth: 0 }) },
  { name: 'load.metrics every field, shares at 0 and 1', input: sig('load.metrics', { queueDepth: 12, runningRequests: 40, kvCacheUse: 1, gpuMemoryUse: 0, throttledShare: 0.25 }) },
  // capacity
  { name: 'capacity fraction', input: sig('capacity', { fraction: 1 }) },
  { name: 'capacity units 0', input: sig('capacity', { units: 0 }) },
  { name: 'capacity fraction and units', input: sig('capacity', { fraction: 0.5, units: 64 }) },
  // power.budget
  { name: 'power.budget import limit', input: sig('power.budget', { importLimitW: 12e6 }) },
  { name: 'power.budget every field at 0', input: sig('power.budget', { importLimitW: 0, generationW: 0, storageWh: 0, storageMaxW: 0, drawW: 0 }) },
  // grid.event
  { name: 'grid.event drain', input: sig('grid.event', EVENT) },
  { name: 'grid.event cap with cap', input: sig('grid.event', { ...EVENT, type: 'cap', cap: 0.75 }) },
  { name: 'grid.event cap 0', input: sig('grid.event', { ...EVENT, type: 'cap', cap: 0 }) },
  { name: 'grid.event OpenADR SIMPLE 3', input: sig('grid.event', { ...EVENT, type: 'simple', level: 3 }) },
  { name: 'grid.event import capacity limit', input: sig('grid.event', { ...EVENT, type: 'import-capacity-limit', limitW: 8e6 }) },
  { name: 'grid.event grid emergency', input: sig('grid.event', { ...EVENT, type: 'grid-emergency' }) },
  { name: 'grid.alert EEA 2 with its zone and notice', input: sig('grid.alert', { level: 2, type: 'eea', zone: 'ERCOT', message: 'EEA2 declared', issued: NOW }) },
  { name: 'grid.alert flex alert with a window', input: sig('grid.alert', { level: 0, type: 'flex-alert', start: NOW, end: NOW + 3600_000 }) },
  { name: 'grid.event every field', input: sig('grid.event', { ...EVENT, priority: 100, cancelled: true, program: 'OpenADR SIMPLE' }) },
  { name: 'grid.event end one ms after start', input: sig('grid.event', { ...EVENT, end: EVENT.start + 1 }) },
  // grid.alert
  ...[0, 1, 2, 3].map((level) => ({ name: `grid.alert level ${level}`, input: sig('grid.alert', { level }) })),
  { name: 'grid.alert with program', input: sig('grid.alert', { level: 2, program: 'ERCOT EEA' }) },
  // carbon
  { name: 'carbon intensity', input: sig('carbon', { gPerKWh: 0 }) },
  { name: 'carbon percentile 100', input: sig('carbon', { percentile: 100 }) },
  // demand
  { name: 'demand bucket at the first instant accepted (2000-01-01)', input: sig('demand', { name: 'api.example.com', bucket: INSTANT_MIN, queries: 0 }, { observedAt: INSTANT_MIN, expiresAt: INSTANT_MIN + 1 }) },
  { name: 'demand bucket a multiple of 10000', input: sig('demand', { name: 'api.example.com', bucket: NOW - 10_000, queries: 1234 }) },
  // the envelope
  { name: 'observedAt exactly 5 s in the future', input: sig('grid.alert', { level: 1 }, { observedAt: NOW + 5000, expiresAt: NOW + 6000 }) },
  { name: 'observedAt long ago (already expired: the planner decides)', input: sig('grid.alert', { level: 1 }, { observedAt: INSTANT_MIN, expiresAt: INSTANT_MIN + 1000 }) },
  { name: 'expiresAt one ms after observedAt', input: sig('grid.alert', { level: 1 }, { expiresAt: NOW - 999 }) },
  { name: 'every region of the fleet', input: sig('carbon', { gPerKWh: 300 }, { region: 'ap-south' }) },
  { name: 'source with every allowed punctuation', input: sig('carbon', { gPerKWh: 300 }, { source: 'openadr3/vtn_1@site-a:8080.b' }) },
  { name: 'key of 200 characters', input: sig('health.probe', { up: true }, { key: LONG(200) }) },
];

interface Invalid {
  name: string;
  input: unknown;
  field: string;
  /** Each must match the message (after `field: `). */
  says: RegExp[];
  /** The instant validation runs at (default NOW). */
  now?: number;
}

const invalid: Invalid[] = [
  // not a signal at all
  { name: 'null', input: null, field: '(signal)', says: [/must be a JSON object/, /got null/] },
  { name: 'an array', input: [sig('grid.alert', { level: 1 })], field: '(signal)', says: [/must be a JSON object/, /got an array/] },
  { name: 'a string (JSON text not parsed)', input: JSON.stringify(sig('grid.alert', { level: 1 })), field: '(signal)', says: [/must be a JSON object/, /\(a string\)/] },
  { name: 'a number', input: 42, field: '(signal)', says: [/must be a JSON object/, /got 42/] },
  { name: 'undefined', input: undefined, field: '(signal)', says: [/must be a JSON object/] },
  { name: 'an empty object: the first required field', input: {}, field: 'region', says: [/is required/, /region id/] },

  // region
  { name: 'region unknown to the fleet', input: sig('carbon', { gPerKWh: 1 }, { region: 'mars-1' }), field: 'region', says: [/"mars-1" is not a region of this fleet/, /known: ap-south, eu-west, us-east/] },
  { name: 'region not a region id', input: sig('carbon', { gPerKWh: 1 }, { region: 'EU West' }), field: 'region', says: [/must be a string matching/, /lowercase letters, digits and -/, /got "EU West"/] },
  { name: 'region a number', input: sig('carbon', { gPerKWh: 1 }, { region: 7 }), field: 'region', says: [/must be a string/, /got 7/] },
  { name: 'region missing', input: without(sig('carbon', { gPerKWh: 1 }), 'region'), field: 'region', says: [/is required: a string/] },

  // kind
  { name: 'kind unknown', input: sig('carbon', { gPerKWh: 1 }, { kind: 'load.queue' }), field: 'kind', says: [new RegExp(`must be one of ${SIGNAL_KINDS.map((k) => `"${k.replace('.', '\\.')}"`).join(', ')}`), /got "load.queue"/] },
  { name: 'kind missing', input: without(sig('carbon', { gPerKWh: 1 }), 'kind'), field: 'kind', says: [/is required: one of "health.probe"/] },
  { name: 'kind null', input: sig('carbon', { gPerKWh: 1 }, { kind: null }), field: 'kind', says: [/must be one of/, /got null/] },

  // source and key
  { name: 'source empty', input: sig('carbon', { gPerKWh: 1 }, { source: '' }), field: 'source', says: [/a string of 1 to 200 characters/, /collector and instance/] },
  { name: 'source with a space', input: sig('carbon', { gPerKWh: 1 }, { source: 'health node-a' }), field: 'source', says: [/matching \^\[A-Za-z0-9\._:\/@-\]\+\$/, /got "health node-a"/] },
  { name: 'source with a |', input: sig('carbon', { gPerKWh: 1 }, { source: 'a|b' }), field: 'source', says: [/matching/] },
  { name: 'key of 201 characters', input: sig('carbon', { gPerKWh: 1 }, { key: LONG(201) }), field: 'key', says: [/a string of at most 200 characters/] },
  { name: 'key a number', input: sig('carbon', { gPerKWh: 1 }, { key: 3 }), field: 'key', says: [/must be a string/, /got 3/] },

  // observedAt and expiresAt
  { name: 'observedAt 5.001 s in the future', input: sig('grid.alert', { level: 1 }, { observedAt: NOW + 5001, expiresAt: NOW + 60_000 }), field: 'observedAt', says: [/is 5001 ms in the future/, /at most 5000 ms is accepted/, /check the source's clock/] },
  { name: 'observedAt an hour in the future', input: sig('grid.alert', { level: 1 }, { observedAt: NOW + 3600_000, expiresAt: NOW + 7200_000 }), field: 'observedAt', says: [/3600000 ms in the future/] },
  { name: 'observedAt a string', input: sig('grid.alert', { level: 1 }, { observedAt: String(NOW) }), field: 'observedAt', says: [/must be an instant: integer ms since the epoch, from 946684800000 \(2000-01-01\) to 7258118400000 \(2200-01-01\)/, /when the fact was true/, /got "1700000000000" \(a string\)/] },
  { name: 'observedAt an ISO date', input: sig('grid.alert', { level: 1 }, { observedAt: '2023-11-14T22:13:20Z' }), field: 'observedAt', says: [/must be an instant/] },
  { name: 'observedAt not whole ms', input: sig('grid.alert', { level: 1 }, { observedAt: NOW + 0.5 }), field: 'observedAt', says: [/must be an instant: integer ms/, /got 1700000000000\.5/] },
  { name: 'observedAt negative', input: sig('grid.alert', { level: 1 }, { observedAt: -1 }), field: 'observedAt', says: [/from 946684800000 \(2000-01-01\)/, /got -1/] },
  { name: 'observedAt missing', input: without(sig('grid.alert', { level: 1 }), 'observedAt'), field: 'observedAt', says: [/is required: an instant/] },
  { name: 'expiresAt equal to observedAt', input: sig('grid.alert', { level: 1 }, { expiresAt: NOW - 1000 }), field: 'expiresAt', says: [/must be after observedAt \(1699999999000\)/] },
  { name: 'expiresAt before observedAt', input: sig('grid.alert', { level: 1 }, { expiresAt: NOW - 2000 }), field: 'expiresAt', says: [/must be after observedAt/, /got 1699999998000/] },
  { name: 'expiresAt missing', input: without(sig('grid.alert', { level: 1 }), 'expiresAt'), field: 'expiresAt', says: [/is required: an instant/, /when the fact stops being known/] },
  { name: 'expiresAt a string', input: sig('grid.alert', { level: 1 }, { expiresAt: 'never' }), field: 'expiresAt', says: [/must be an instant/, /got "never"/] },

  // the envelope's other fields
  { name: 'an unknown envelope field', input: sig('grid.alert', { level: 1 }, { ttl: 60 }), field: 'ttl', says: [/is not a known field/, /known: region, kind, source, key, observedAt, expiresAt, value/, /remove it/] },
  { name: 'value missing', input: without(sig('grid.alert', { level: 1 }), 'value'), field: 'value', says: [/is required/, /kind-specific payload/] },
  { name: 'value null', input: sig('grid.alert', null), field: 'value', says: [/must be a JSON object/, /got null/] },
  { name: 'value an array', input: sig('capacity', [{ fraction: 1 }]), field: 'value', says: [/must be a JSON object/, /got an array/] },
  { name: 'value a number', input: sig('capacity', 0.5), field: 'value', says: [/must be a JSON object/, /got 0\.5/] },

  // health.probe
  { name: 'health.probe without up', input: sig('health.probe', {}), field: 'value.up', says: [/is required: true or false/, /the probe succeeded/] },
  { name: 'health.probe up a string', input: sig('health.probe', { up: 'true' }), field: 'value.up', says: [/must be true or false/, /got "true"/] },
  { name: 'health.probe up 1', input: sig('health.probe', { up: 1 }), field: 'value.up', says: [/must be true or false/, /got 1/] },
  { name: 'health.probe negative latency', input: sig('health.probe', { up: true, latencyMs: -3 }), field: 'value.latencyMs', says: [/must be a number from 0 to 86400000/, /round-trip time/] },
  { name: 'health.probe detail of 501 characters', input: sig('health.probe', { up: false, detail: LONG(501) }), field: 'value.detail', says: [/a string of at most 500 characters/] },
  { name: 'health.probe unknown field', input: sig('health.probe', { up: true, status: 'ok' }), field: 'value.status', says: [/is not a known field/, /known: up, latencyMs, detail/] },

  // load.metrics
  { name: 'load.metrics empty', input: sig('load.metrics', {}), field: 'value', says: [/must have at least one of queueDepth, runningRequests, kvCacheUse, gpuMemoryUse, throttledShare/] },
  { name: 'load.metrics share 1.5', input: sig('load.metrics', { kvCacheUse: 1.5 }), field: 'value.kvCacheUse', says: [/must be a number from 0 to 1/, /KV-cache utilisation/, /got 1\.5/] },
  { name: 'load.metrics negative share', input: sig('load.metrics', { throttledShare: -0.1 }), field: 'value.throttledShare', says: [/from 0 to 1/, /got -0\.1/] },
  { name: 'load.metrics a string for a number', input: sig('load.metrics', { queueDepth: '12' }), field: 'value.queueDepth', says: [/must be a number from 0 to 2147483647/, /got "12" \(a string\)/] },
  { name: 'load.metrics a percentage', input: sig('load.metrics', { gpuMemoryUse: 87 }), field: 'value.gpuMemoryUse', says: [/from 0 to 1/, /got 87/] },
  { name: 'load.metrics unknown field', input: sig('load.metrics', { queueDepth: 1, extra: true }), field: 'value.extra', says: [/is not a known field/, /remove it/] },

  // capacity
  { name: 'capacity empty', input: sig('capacity', {}), field: 'value', says: [/must have at least one of fraction, units/] },
  { name: 'capacity fraction above 1', input: sig('capacity', { fraction: 1.01 }), field: 'value.fraction', says: [/must be a number from 0 to 1/, /usable share/] },
  { name: 'capacity negative units', input: sig('capacity', { units: -8 }), field: 'value.units', says: [/must be a number from 0 to 2147483647/, /got -8/] },
  { name: 'capacity fraction a string', input: sig('capacity', { fraction: '0.5' }), field: 'value.fraction', says: [/must be a number from 0 to 1/, /got "0\.5"/] },
  { name: 'capacity unknown field', input: sig('capacity', { gpus: 8 }), field: 'value.gpus', says: [/is not a known field/, /known: fraction, units/] },

  // power.budget
  { name: 'power.budget negative W', input: sig('power.budget', { importLimitW: -1 }), field: 'value.importLimitW', says: [/must be a number from 0 to 10000000000000/, /grid import limit now, W/, /got -1/] },
  { name: 'power.budget negative storage', input: sig('power.budget', { storageWh: -5 }), field: 'value.storageWh', says: [/from 0 to 10000000000000/, /Wh/] },
  { name: 'power.budget a string with a unit', input: sig('power.budget', { drawW: '5 MW' }), field: 'value.drawW', says: [/must be a number from 0 to 10000000000000/, /got "5 MW"/] },
  { name: 'power.budget empty', input: sig('power.budget', {}), field: 'value', says: [/must have at least one of importLimitW, generationW, storageWh, storageMaxW, drawW/] },
  { name: 'power.budget field in the wrong unit', input: sig('power.budget', { importLimitKW: 12000 }), field: 'value.importLimitKW', says: [/is not a known field/, /importLimitW/] },

  // grid.event
  { name: 'grid.event end equal to start', input: sig('grid.event', { ...EVENT, end: EVENT.start }), field: 'value.end', says: [/must be after value\.start \(1700003600000\)/] },
  { name: 'grid.event end before start', input: sig('grid.event', { ...EVENT, end: EVENT.start - 60_000 }), field: 'value.end', says: [/must be after value\.start/, /got 1700003540000/] },
  { name: 'grid.event cap without cap', input: sig('grid.event', { ...EVENT, type: 'cap' }), field: 'value.cap', says: [/is required when value\.type is cap/] },
  { name: 'grid.event simple without level', input: sig('grid.event', { ...EVENT, type: 'simple' }), field: 'value.level', says: [/is required when value\.type is simple/] },
  { name: 'grid.event limit without limitW', input: sig('grid.event', { ...EVENT, type: 'import-capacity-limit' }), field: 'value.limitW', says: [/is required when value\.type is import-capacity-limit/] },
  { name: 'grid.alert unknown type', input: sig('grid.alert', { level: 1, type: 'panic' }), field: 'value.type', says: [/must be one of/, /got "panic"/] },
  { name: 'grid.event key not the event id', input: sig('grid.event', EVENT, { key: 'ev-2' }), field: 'key', says: [/must equal value\.id \("ev-1"\)/, /one record per event/] },
  { name: 'grid.event unknown type', input: sig('grid.event', { ...EVENT, type: 'shed' }), field: 'value.type', says: [/must be one of "simple", "import-capacity-limit"/, /got "shed"/] },
  { name: 'grid.event cap above 1', input: sig('grid.event', { ...EVENT, type: 'cap', cap: 75 }), field: 'value.cap', says: [/must be a number from 0 to 1/, /share of capacity/] },
  // Value domains (issue 27, gslb/model/domains.ts): instants 2000–2200, bounded validity, durations, watts, counts.
  { name: 'grid.event end past the Date range', input: sig('grid.event', { ...EVENT, end: 9e15 }), field: 'value.end', says: [/must be an instant/, /got 9000000000000000/] },
  { name: 'grid.event end 1e300', input: sig('grid.event', { ...EVENT, end: 1e300 }), field: 'value.end', says: [/must be an instant/] },
  { name: 'grid.event end 2^53 − 1', input: sig('grid.event', { ...EVENT, end: Number.MAX_SAFE_INTEGER }), field: 'value.end', says: [/must be an instant/] },
  { name: 'grid.event end one ms past 2200', input: sig('grid.event', { ...EVENT, end: INSTANT_MAX + 1 }), field: 'value.end', says: [/to 7258118400000 \(2200-01-01\)/] },
  { name: 'grid.event start in 1970', input: sig('grid.event', { ...EVENT, start: 1 }), field: 'value.start', says: [/from 946684800000 \(2000-01-01\)/, /got 1$/] },
  { name: 'grid.event lasting more than a year and a day', input: sig('grid.event', { ...EVENT, end: EVENT.start + 367 * 86_400_000 }, { expiresAt: NOW + 300 * 86_400_000 }), field: 'value.end', says: [/makes the event last 367 days; at most 366 days/] },
  { name: 'observedAt 1 (1970)', input: sig('grid.alert', { level: 1 }, { observedAt: 1, expiresAt: NOW }), field: 'observedAt', says: [/must be an instant/, /got 1$/] },
  { name: 'expiresAt 170 years on', input: sig('grid.alert', { level: 1 }, { expiresAt: NOW + 170 * 365 * 86_400_000 }), field: 'expiresAt', says: [/claims \d+ h of validity; a grid.alert fact holds for at most 744 h/] },
  { name: 'health.probe valid for a day and a ms', input: sig('health.probe', { up: true }, { expiresAt: NOW - 1000 + 86_400_001 }), field: 'expiresAt', says: [/a health.probe fact holds for at most 24 h/] },
  { name: 'power.budget 1e308 W', input: sig('power.budget', { generationW: 1e308 }), field: 'value.generationW', says: [/must be a number from 0 to 10000000000000/] },
  { name: 'grid.event limitW past 10 TW', input: sig('grid.event', { ...EVENT, type: 'import-capacity-limit', limitW: 2e13 }), field: 'value.limitW', says: [/from 0 to 10000000000000/] },
  { name: 'grid.alert end before start', input: sig('grid.alert', { level: 2, start: NOW + 60_000, end: NOW }), field: 'value.end', says: [/must be after value\.start/] },
  { name: 'demand queries past 2^31', input: sig('demand', { name: 'api.example.com', bucket: NOW - 10_000, queries: 2 ** 31 }), field: 'value.queries', says: [/from 0 to 2147483647/] },
  { name: 'grid.event without id', input: sig('grid.event', without(EVENT, 'id'), { key: 'ev-1' }), field: 'value.id', says: [/is required: a string of 1 to 200 characters/] },
  { name: 'grid.event empty id', input: sig('grid.event', { ...EVENT, id: '' }), field: 'value.id', says: [/a string of 1 to 200 characters/, /got ""/] },
  { name: 'grid.event start a date string', input: sig('grid.event', { ...EVENT, start: '2023-11-15T00:00:00Z' }), field: 'value.start', says: [/must be an instant/, /when the event starts/] },
  { name: 'grid.event priority above 1000', input: sig('grid.event', { ...EVENT, priority: 1001 }), field: 'value.priority', says: [/an integer from 0 to 1000/, /lower number wins/] },
  { name: 'grid.event cancelled a string', input: sig('grid.event', { ...EVENT, cancelled: 'yes' }), field: 'value.cancelled', says: [/must be true or false/] },
  { name: 'grid.event unknown field', input: sig('grid.event', { ...EVENT, severity: 'high' }), field: 'value.severity', says: [/is not a known field/, /known: id, start, end, type, level, limitW, cap, priority, cancelled, program/] },

  // grid.alert
  { name: 'grid.alert level 4', input: sig('grid.alert', { level: 4 }), field: 'value.level', says: [/must be an integer from 0 to 3/, /severity 0 normal/, /got 4/] },
  { name: 'grid.alert level -1', input: sig('grid.alert', { level: -1 }), field: 'value.level', says: [/an integer from 0 to 3/, /got -1/] },
  { name: 'grid.alert level 1.5', input: sig('grid.alert', { level: 1.5 }), field: 'value.level', says: [/an integer from 0 to 3/, /got 1\.5/] },
  { name: 'grid.alert level a string', input: sig('grid.alert', { level: 'EEA2' }), field: 'value.level', says: [/an integer from 0 to 3/, /got "EEA2" \(a string\)/] },
  { name: 'grid.alert without level', input: sig('grid.alert', { program: 'ERCOT' }), field: 'value.level', says: [/is required: an integer from 0 to 3/] },
  { name: 'grid.alert unknown field', input: sig('grid.alert', { level: 1, extra: 1 }), field: 'value.extra', says: [/is not a known field/, /known: level, type, zone, message, issued, start, end, program/] },

  // carbon
  { name: 'carbon empty', input: sig('carbon', {}), field: 'value', says: [/must have at least one of gPerKWh, percentile/] },
  { name: 'carbon percentile above 100', input: sig('carbon', { percentile: 101 }), field: 'value.percentile', says: [/must be a number from 0 to 100/] },
  { name: 'carbon negative intensity', input: sig('carbon', { gPerKWh: -5 }), field: 'value.gPerKWh', says: [/must be a number from 0 to 10000/, /carbon intensity/] },
  { name: 'carbon unknown field', input: sig('carbon', { gPerKWh: 5, source: 'x' }), field: 'value.source', says: [/is not a known field/] },

  // demand
  { name: 'demand bucket not a multiple of 10000', input: sig('demand', { name: 'api.example.com', bucket: NOW + 5000, queries: 1 }), field: 'value.bucket', says: [/must be a multiple of 10000/, /10-second buckets/, /got 1700000005000/] },
  { name: 'demand bucket 1 ms off', input: sig('demand', { name: 'api.example.com', bucket: 10_001, queries: 1 }), field: 'value.bucket', says: [/multiple of 10000/] },
  { name: 'demand negative queries', input: sig('demand', { name: 'api.example.com', bucket: NOW - 10_000, queries: -1 }), field: 'value.queries', says: [/must be a number from 0 to 2147483647/] },
  { name: 'demand empty name', input: sig('demand', { name: '', bucket: 0, queries: 1 }), field: 'value.name', says: [/a string of 1 to 254 characters/, /the steered name/] },
  { name: 'demand without name', input: sig('demand', { bucket: 0, queries: 1 }), field: 'value.name', says: [/is required: a string/] },
  { name: 'demand unknown field', input: sig('demand', { name: 'a', bucket: 0, queries: 1, home: 'eu-west' }), field: 'value.home', says: [/is not a known field/, /known: name, bucket, queries/] },
];

/**
 * Every kind's own examples (its kind file, gslb/model/kinds/<kind>.ts) join the tables above, so
 * a new kind is covered here with no edit: its valid values pass untouched, its invalid ones are
 * refused naming their field, in words rather than TypeBox's. They are dated 2030 (the kinds'
 * examples' instants), so they are validated an hour before.
 */
const EXAMPLES_NOW = 1_893_452_400_000;
function exampleSig(kind: SignalKind, value: unknown): Record<string, unknown> {
  const id = (value as { id?: unknown } | null)?.id;
  return { region: 'eu-west', kind, source: 'test/examples', key: typeof id === 'string' ? id : 'ep-1', observedAt: EXAMPLES_NOW, expiresAt: EXAMPLES_NOW + 60_000, value };
}
for (const k of KIND_LIST) {
  k.examples.valid.forEach((v, i) => valid.push({ name: `${k.name} example ${i + 1} (its kind file)`, input: exampleSig(k.name, structuredClone(v)), now: EXAMPLES_NOW }));
  k.examples.invalid.forEach((x, i) => invalid.push({ name: `${k.name} example ${i + 1} (its kind file)`, input: exampleSig(k.name, structuredClone(x.value)), field: x.field, says: [], now: EXAMPLES_NOW }));
}

for (const c of valid) {
  test(`valid: ${c.name}`, () => {
    // Deep-frozen: validation must not touch its input.
    const input = structuredClone(c.input);
    deepFreeze(input);
    assert.equal(validateSignal(input, c.now ?? NOW, REGIONS), input, 'returns the same object');
  });
}

for (const c of invalid) {
  test(`invalid: ${c.name} → ${c.field}`, () => {
    let err: unknown;
    try {
      validateSignal(c.input, c.now ?? NOW, REGIONS);
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof SignalError, `refused with a SignalError (got ${String(err)})`);
    assert.equal(err.name, 'SignalError');
    assert.equal(err.field, c.field);
    assert.ok(err.message.startsWith(`${c.field}: `), `the message starts with the field: ${err.message}`);
    const said = err.message.slice(c.field.length + 2);
    for (const re of c.says) assert.match(said, re);
    // Not TypeBox's raw wording ("expected integer", "expected union value", …).
    assert.doesNotMatch(said, /\bexpected\b|union value|required property/, said);
  });
}

test('every kind has valid and invalid cases (its kind file\'s examples count: a new kind needs no edit here)', () => {
  const kindOf = (x: unknown) => (x && typeof x === 'object' ? (x as { kind?: unknown }).kind : undefined);
  for (const k of SIGNAL_KINDS) {
    assert.ok(valid.some((c) => kindOf(c.input) === k), `a valid case for ${k}`);
    assert.ok(invalid.some((c) => kindOf(c.input) === k && c.field.startsWith('value')), `an invalid value case for ${k}`);
  }
});

test('the future bound is 5 s and is measured from now', () => {
  assert.equal(MAX_FUTURE_MS, 5000);
  const at = (observedAt: number) => sig('grid.alert', { level: 0 }, { observedAt, expiresAt: observedAt + 1 });
  for (const now of [INSTANT_MIN, NOW]) {
    assert.doesNotThrow(() => validateSignal(at(now + 5000), now, REGIONS));
    assert.throws(() => validateSignal(at(now + 5001), now, REGIONS), (e: unknown) => e instanceof SignalError && e.field === 'observedAt');
  }
});

test('unknown region: an empty fleet says so', () => {
  assert.throws(
    () => validateSignal(sig('carbon', { gPerKWh: 1 }), NOW, new Set()),
    (e: unknown) => e instanceof SignalError && e.field === 'region' && /known: none/.test(e.message),
  );
});

test('a valid signal of each kind keeps its value untouched (nothing coerced or defaulted)', () => {
  for (const c of valid) {
    const copy = structuredClone(c.input);
    const out = validateSignal(copy, c.now ?? NOW, REGIONS) as Signal;
    assert.deepEqual(out, c.input, c.name);
  }
});

test('signalId: region|kind|source|key, independent of time and value', () => {
  const a = { region: 'eu-west', kind: 'capacity' as const, source: 'prom/a', key: 'pool-1' };
  assert.equal(signalId(a), 'eu-west|capacity|prom/a|pool-1');
  const later: Signal = { ...a, observedAt: 5, expiresAt: 9, value: { fraction: 0 } };
  assert.equal(signalId(later), signalId(a));
  // Any one part changing gives another id; a key containing | cannot be confused with a
  // source because region, kind and source never contain |.
  const variants = [
    { ...a, region: 'us-east' },
    { ...a, kind: 'power.budget' as const },
    { ...a, source: 'prom/b' },
    { ...a, key: 'pool-2' },
    { ...a, key: '' },
    { ...a, key: 'pool-1|x' },
  ];
  const ids = new Set([signalId(a), ...variants.map(signalId)]);
  assert.equal(ids.size, variants.length + 1);
});

function deepFreeze(o: unknown): void {
  if (o && typeof o === 'object' && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
}
