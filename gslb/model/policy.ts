/**
 * Policy shapes declared once as schemas with their static types: gridPolicy rules (what
 * grid facts mean for traffic) with the shipped defaults, and a name's whenAllDown. The
 * config schema (gslb/config/schema.ts) embeds them; the planner and decide read values of
 * these types. Declarations and data only.
 */
import { Type, type Static } from '@sinclair/typebox';

const strict = { additionalProperties: false } as const;

/**
 * One gridPolicy rule (DESIGN.md "Data flow"): which grid facts it matches and what they mean.
 * Rules are tried in order; the first that matches a fact decides for it.
 */
export const GridRuleSchema = Type.Object(
  {
    name: Type.String({ pattern: '^[A-Za-z0-9._-]{1,64}$', description: 'shown in the plan\'s reasons and in explain' }),
    kind: Type.Union([Type.Literal('grid.event'), Type.Literal('grid.alert')], { description: 'which kind of grid fact' }),
    types: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1, description: 'fact types it matches (grid.event: simple, import-capacity-limit, dispatch-setpoint, grid-emergency, load-shed, cap, drain; grid.alert: normal, watch, conservation, flex-alert, eea, grid-alert, load-shed, emergency); absent = any' })),
    minLevel: Type.Optional(Type.Integer({ minimum: 0, maximum: 3, description: 'the fact\'s level is at least this' })),
    maxLevel: Type.Optional(Type.Integer({ minimum: 0, maximum: 3, description: 'the fact\'s level is at most this' })),
    source: Type.Optional(Type.String({ minLength: 1, description: 'only facts whose source starts with this' })),
    then: Type.Object(
      {
        cap: Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: 'cap the region at this share' })),
        capFromFact: Type.Optional(Type.Boolean({ description: 'cap at the fact\'s own cap (grid.event type cap)' })),
        drain: Type.Optional(Type.Boolean({ description: 'drain the region' })),
        importLimit: Type.Optional(Type.Boolean({ description: 'the fact\'s limitW is the site\'s grid import limit while it holds (needs power.fullLoadW in the region file)' })),
        ttlCap: Type.Optional(Type.Integer({ minimum: 0, description: 'cap answers\' TTL at this many seconds (pre-arm)' })),
      },
      { ...strict, minProperties: 1, description: 'what a matching fact means' },
    ),
  },
  { ...strict, description: 'one gridPolicy rule' },
);

/** One gridPolicy rule: which grid facts it matches (first match per fact) and what they mean. */
export type GridRule = Static<typeof GridRuleSchema>;

/** The shipped gridPolicy (issue 5's defaults). Operators replace it with policy.grid.rules. */
export const DEFAULT_GRID_RULES: GridRule[] = [
  { name: 'openadr-simple-1', kind: 'grid.event', types: ['simple'], minLevel: 1, maxLevel: 1, then: { cap: 0.75 } },
  { name: 'openadr-simple-2', kind: 'grid.event', types: ['simple'], minLevel: 2, maxLevel: 2, then: { cap: 0.5 } },
  { name: 'openadr-simple-3', kind: 'grid.event', types: ['simple'], minLevel: 3, then: { drain: true } },
  { name: 'capacity-limit', kind: 'grid.event', types: ['import-capacity-limit', 'dispatch-setpoint'], then: { importLimit: true } },
  { name: 'grid-emergency', kind: 'grid.event', types: ['grid-emergency'], then: { drain: true } },
  { name: 'load-shed-order', kind: 'grid.event', types: ['load-shed'], then: { drain: true } },
  { name: 'direct-drain', kind: 'grid.event', types: ['drain'], then: { drain: true } },
  { name: 'direct-cap', kind: 'grid.event', types: ['cap'], then: { capFromFact: true } },
  { name: 'alert-watch', kind: 'grid.alert', types: ['watch', 'conservation', 'flex-alert'], then: { ttlCap: 30 } },
  { name: 'alert-eea1', kind: 'grid.alert', types: ['eea'], minLevel: 1, maxLevel: 1, then: { cap: 0.75, ttlCap: 30 } },
  { name: 'alert-eea2', kind: 'grid.alert', types: ['eea'], minLevel: 2, maxLevel: 2, then: { drain: true } },
  { name: 'alert-grid-alert', kind: 'grid.alert', types: ['grid-alert'], then: { drain: true } },
  { name: 'alert-eea3-load-shed', kind: 'grid.alert', types: ['eea', 'load-shed', 'emergency'], minLevel: 3, then: { drain: true } },
  { name: 'alert-load-shed', kind: 'grid.alert', types: ['load-shed', 'emergency'], then: { drain: true } },
];

export const WhenAllDown = Type.Union(
  [Type.Literal('nearest'), Type.Literal('all'), Type.Literal('empty'), Type.Literal('servfail')],
  { description: 'what to answer when no region admits the client: nearest (the nearest region up and not refusing new streams, else the nearest at all), all, empty (NODATA) or servfail' },
);

/** What a name answers when no region admits the client. */
export type WhenAllDownPolicy = Static<typeof WhenAllDown>;
