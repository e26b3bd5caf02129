/**
 * Where things are. Tests run compiled from dist/test/..., so the repository root is
 * found by walking up to the package.json (bounded), not by counting folders.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'gslb'))) return dir;
    dir = dirname(dir);
  }
  throw new Error('paths: cannot find the repository root (package.json beside gslb/)');
}

/** The repository root. */
export const repoRoot = findRoot();
/** The compiled CLI entry point. */
export const cliPath = join(repoRoot, 'dist', 'gslb', 'cli', 'main.js');
/** The compiled in-process entry point. */
export const mainModulePath = join(repoRoot, 'dist', 'gslb', 'main.js');
/** The example configuration and its regions folder. */
export const exampleConfig = join(repoRoot, 'gridsteer.yaml');
export const exampleRegions = join(repoRoot, 'regions');
