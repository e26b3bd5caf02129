/**
 * Markdown for the tables the docs hold generated from the registries (the kind table of
 * docs/api.md, the precedence table of docs/architecture.md, the collector table of
 * collectors/README.md). Pure: strings in, a string out; the files are written by the tests.
 */

/** A table cell: `|` escaped so it does not end the cell. */
export function mdCell(x: string): string {
  return x.replace(/\|/g, '\\|');
}

/** A table: header cells, the alignment row (e.g. `---:`; `---` by default) and the rows' cells, ending in a newline. */
export function mdTable(header: readonly string[], rows: ReadonlyArray<readonly string[]>, align?: readonly string[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), `|${(align ?? header.map(() => '---')).join('|')}|`, ...rows.map(line)].join('\n') + '\n';
}
