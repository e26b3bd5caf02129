// Builds the web dashboard's static files into dist/dashboards/web/ (after `tsc -p
// dashboards/web/tsconfig.json` has compiled its scripts to dist/dashboards/web/js/):
// - copies index.html, style.css and favicon.svg;
// - writes land.json: the world's land outline as one SVG path in an equirectangular
//   projection (x = lon + 180, y = 90 − lat, so the map is 360 × 180), decoded from the
//   TopoJSON of the npm package world-atlas (Natural Earth 1:110m land, public domain; the
//   package is ISC). The dashboard loads nothing from the internet.
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'dashboards', 'web');
const out = join(root, 'dist', 'dashboards', 'web');
mkdirSync(out, { recursive: true });
for (const f of ['index.html', 'style.css', 'favicon.svg']) copyFileSync(join(src, f), join(out, f));

const require = createRequire(import.meta.url);
const topo = JSON.parse(readFileSync(require.resolve('world-atlas/land-110m.json'), 'utf8'));

/** TopoJSON arcs → absolute [lon, lat] rings (quantized arcs are delta-encoded). */
const { scale, translate } = topo.transform;
const arcs = topo.arcs.map((arc) => {
  let x = 0;
  let y = 0;
  return arc.map(([dx, dy]) => {
    x += dx;
    y += dy;
    return [x * scale[0] + translate[0], y * scale[1] + translate[1]];
  });
});
const arcPoints = (i) => (i >= 0 ? arcs[i] : arcs[~i].slice().reverse());
const ring = (indices) => {
  const pts = [];
  for (const i of indices) {
    const a = arcPoints(i);
    pts.push(...(pts.length ? a.slice(1) : a));
  }
  return pts;
};
const fmt = (n) => String(Math.round(n * 10) / 10);
let d = '';
for (const g of topo.objects.land.geometries) {
  const polygons = g.type === 'Polygon' ? [g.arcs] : g.type === 'MultiPolygon' ? g.arcs : [];
  for (const poly of polygons) {
    for (const r of poly) {
      // A ring cut at the antimeridian (Fiji, Chukotka, Antarctica) jumps from +180 to −180:
      // each piece between jumps starts and ends on the map's edge, so it is closed on its own
      // (a straight line across the whole map otherwise).
      // (A ring's first and last points are the same point: slice(1) drops the repeat.)
      let prev = '';
      let seg = '';
      let lastLon;
      // Start the ring just after a jump, so no piece is split in two at the ring's start.
      let pts = ring(r);
      const jump = pts.findIndex((q, i) => i > 0 && Math.abs(q[0] - pts[i - 1][0]) > 180);
      if (jump > 0) pts = [...pts.slice(jump), ...pts.slice(1, jump)];
      for (const [lon, lat] of pts) {
        if (lastLon !== undefined && Math.abs(lon - lastLon) > 180) {
          if (seg !== '') d += `${seg}Z`;
          seg = '';
          prev = '';
        }
        lastLon = lon;
        const p = `${fmt(lon + 180)} ${fmt(90 - lat)}`;
        if (p === prev) continue;
        seg += `${seg === '' ? 'M' : 'L'}${p}`;
        prev = p;
      }
      if (seg !== '') d += `${seg}Z`;
    }
  }
}
writeFileSync(join(out, 'land.json'), JSON.stringify({ source: 'world-atlas land-110m (Natural Earth, public domain)', width: 360, height: 180, d }));
console.log(`dashboard: ${out} (land outline ${Math.round(d.length / 1024)} KiB)`);
