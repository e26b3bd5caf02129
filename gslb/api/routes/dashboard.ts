/**
 * The web dashboard's static files (dashboards/web, built into dist/dashboards/web by
 * `npm run build`): `GET /` is its page, `GET /ui/<file>` its scripts, styles and map.
 * They hold no data and need no token; the page reads the API with the token the operator
 * types in (docs/dashboard.md). Files are read once at start. Served with a strict
 * Content-Security-Policy: nothing but this origin, no inline script, so the page works
 * with no internet and cannot be made to load anything else.
 * Without a build, `GET /` answers 404 saying so.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { apiError } from '../errors.js';
import type { ApiPlugin } from '../schemas.js';

export interface DashboardRoutesOptions extends Record<string, unknown> {
  /** Folder of the built dashboard (default dist/dashboards/web beside this file's build). */
  dir?: string;
}

export const DEFAULT_DASHBOARD_DIR = fileURLToPath(new URL('../../../dashboards/web/', import.meta.url));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
};

const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

function load(dir: string): Map<string, { type: string; body: Buffer }> {
  const files = new Map<string, { type: string; body: Buffer }>();
  const walk = (d: string) => {
    let names: string[];
    try {
      names = readdirSync(d);
    } catch {
      return;
    }
    for (const n of names) {
      const p = join(d, n);
      if (statSync(p).isDirectory()) walk(p);
      else if (TYPES[extname(n)] !== undefined) files.set(relative(dir, p).split(sep).join('/'), { type: TYPES[extname(n)]!, body: readFileSync(p) });
    }
  };
  walk(dir);
  return files;
}

export const dashboardRoutes: ApiPlugin<DashboardRoutesOptions> = async (app, opts) => {
  const dir = opts.dir ?? DEFAULT_DASHBOARD_DIR;
  const files = load(dir);
  const send = (file: string, reply: import('fastify').FastifyReply) => {
    const f = files.get(file);
    if (!f) {
      const hint = files.size === 0 ? `the dashboard is not built (${dir} is empty): run npm run build` : 'the dashboard has no such file';
      throw apiError('GSLB_ERR_NOT_FOUND', { what: `/ui/${file}`, hint });
    }
    return reply.type(f.type).header('content-security-policy', CSP).header('referrer-policy', 'no-referrer').send(f.body);
  };
  app.get('/', { schema: { hide: true } }, async (_request, reply) => send('index.html', reply));
  app.get('/ui/*', { schema: { hide: true } }, async (request, reply) => send((request.params as { '*': string })['*'], reply));
};
