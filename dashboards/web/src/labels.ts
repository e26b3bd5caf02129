/**
 * Map labels placed so that none hides another or a dot: each label tries, in order, the right
 * of its dot, the left, below, above, then the four corners, and takes the first place that
 * overlaps no dot and no label placed before it (else the right, as before). Sizes are in map
 * units; a label's width is estimated from its length (the map's font is 4 units high).
 */

export interface Dot {
  id: string;
  x: number;
  y: number;
  r: number;
  text: string;
}

export interface Placed {
  x: number;
  y: number;
  anchor: 'start' | 'middle' | 'end';
}

interface Box {
  x0: number;
  y0: number;
  x1: number;
  y1: number;
}

const FONT = 4;
/** Average glyph width of the map font, in font sizes. */
const GLYPH = 0.56;
const GAP = 1.5;

const overlaps = (a: Box, b: Box) => a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;

function boxOf(p: Placed, width: number): Box {
  const x0 = p.anchor === 'start' ? p.x : p.anchor === 'end' ? p.x - width : p.x - width / 2;
  return { x0, y0: p.y - FONT * 0.8, x1: x0 + width, y1: p.y + FONT * 0.2 };
}

export function placeLabels(dots: Dot[]): Map<string, Placed> {
  const obstacles: Box[] = dots.map((d) => ({ x0: d.x - d.r, y0: d.y - d.r, x1: d.x + d.r, y1: d.y + d.r }));
  const out = new Map<string, Placed>();
  for (const d of dots) {
    const width = d.text.length * FONT * GLYPH;
    const base = d.y + FONT * 0.3;
    const candidates: Placed[] = [
      { x: d.x + d.r + GAP, y: base, anchor: 'start' },
      { x: d.x - d.r - GAP, y: base, anchor: 'end' },
      { x: d.x, y: d.y + d.r + GAP + FONT * 0.8, anchor: 'middle' },
      { x: d.x, y: d.y - d.r - GAP - FONT * 0.2, anchor: 'middle' },
      { x: d.x + d.r, y: d.y + d.r + GAP + FONT * 0.8, anchor: 'start' },
      { x: d.x - d.r, y: d.y + d.r + GAP + FONT * 0.8, anchor: 'end' },
      { x: d.x + d.r, y: d.y - d.r - GAP - FONT * 0.2, anchor: 'start' },
      { x: d.x - d.r, y: d.y - d.r - GAP - FONT * 0.2, anchor: 'end' },
    ];
    const own = obstacles[dots.indexOf(d)]!;
    const chosen = candidates.find((c) => {
      const b = boxOf(c, width);
      return !obstacles.some((o) => o !== own && overlaps(b, o)) && !overlaps(b, own);
    }) ?? candidates[0]!;
    out.set(d.id, chosen);
    obstacles.push(boxOf(chosen, width));
  }
  return out;
}
