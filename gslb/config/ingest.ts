/**
 * The configuration's side of principals and grants (ADR 0021): which collector sections are
 * configured with their namespaces and region grants, the warnings their sections call for, and
 * the token table loaded against them (what both a start and check-config do, so that both
 * refuse the same overlaps).
 */
import { dirname, resolve } from 'node:path';
import { collectors } from '../../collectors/index.js';
import type { LoadedConfig } from './load.js';
import { loadTokens, reservedNamespaces, type TokenStore } from './tokens.js';

/** A configured collector section: its name, its source prefix and the regions granted to it (absent = every region). */
export interface ConfiguredCollector {
  name: string;
  sources: string;
  regions?: string[];
}

export function configuredCollectors(config: LoadedConfig['config']): ConfiguredCollector[] {
  const sections = config.collectors as Record<string, unknown>;
  return collectors
    .filter((c) => sections[c.name] !== undefined)
    .map((c) => {
      const g = config.ingest.collectors[c.name];
      return { name: c.name, sources: c.sources, ...(g ? { regions: [...g.regions] } : {}) };
    });
}

/** What a valid configuration should still be warned about (collectors' own warnings), one line each. */
export function configWarnings(config: LoadedConfig['config']): string[] {
  const sections = config.collectors as Record<string, unknown>;
  return collectors.flatMap((c) => {
    const section = sections[c.name];
    if (section === undefined || !c.warnings) return [];
    try {
      return (c.warnings as (cfg: unknown) => string[])(section);
    } catch {
      return [];
    }
  });
}

/**
 * The token table for `loaded`: http.tokensFile (relative to gridsteer.yaml) and the
 * GRIDSTEER_TOKENS value `env`, checked against the reserved namespaces of the configured
 * collectors and the fleet's regions. Throws TokenLoadError.
 */
export function loadConfigTokens(loaded: LoadedConfig, env: string | undefined): TokenStore {
  const cfg = loaded.config;
  const file = cfg.http.tokensFile === undefined ? undefined : resolve(dirname(loaded.file), cfg.http.tokensFile);
  return loadTokens({ file, env, reserved: reservedNamespaces(configuredCollectors(cfg)), regions: new Set(loaded.regions.map((r) => r.id)) });
}
