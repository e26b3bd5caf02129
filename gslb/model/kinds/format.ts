/** Words for values (the kinds' summaries): shares as percentages, power in W, kW or MW. */

/** The summary's parts, in order. */
export type Parts = string[];

/** `x` rounded to `d` decimals. */
export const round = (x: number, d = 3) => Math.round(x * 10 ** d) / 10 ** d;

export const pct = (x: number) => `${Math.round(x * 100)} %`;

export const watts = (x: number) => (Math.abs(x) >= 1e6 ? `${round(x / 1e6, 2)} MW` : Math.abs(x) >= 1e3 ? `${round(x / 1e3, 1)} kW` : `${round(x, 0)} W`);

/** A function that adds `<label> <f(value[k])>` to `parts` when `value[k]` is a number. */
export function num(v: Record<string, unknown>, parts: Parts): (k: string, label: string, f?: (x: number) => string) => void {
  return (k, label, f = String) => {
    if (typeof v[k] === 'number') parts.push(`${label} ${f(v[k])}`);
  };
}
