/**
 * A small PromQL scanner for checking dashboards against what `/metrics` exports: it finds
 * the metric names an expression selects, not its meaning. Written for the expressions a
 * Grafana dashboard holds, Grafana variables included (`$var`, `${var}`, `[$__rate_interval]`,
 * the `label_values(selector, label)` templating form).
 *
 * A metric name is an identifier that is not a function, aggregation or keyword: followed by
 * `{` or `[`, used as a function argument, or standing alone. Skipped: strings, label
 * matchers `{…}` (label names are not metrics), ranges `[…]`, numbers and durations, the
 * label lists of by/without/on/ignoring/group_left/group_right, and the label argument of
 * `label_values`. A `{__name__="x"}` matcher names metric x.
 *
 * It throws (PromqlScanError) on what it cannot vouch for: unbalanced brackets, an unknown
 * function (`rat(x[5m])`), a metric name built from a variable (`foo_$bar`).
 */

export class PromqlScanError extends Error {
  constructor(expr: string, at: number, what: string) {
    super(`promql: ${what} at ${at} in ${JSON.stringify(expr)}`);
    this.name = 'PromqlScanError';
  }
}

/** PromQL functions (Prometheus 2.x and 3.x) and the Grafana templating functions. */
export const PROMQL_FUNCTIONS: ReadonlySet<string> = new Set([
  'abs', 'absent', 'absent_over_time', 'acos', 'acosh', 'asin', 'asinh', 'atan', 'atanh', 'avg_over_time', 'ceil', 'changes', 'clamp', 'clamp_max', 'clamp_min', 'cos', 'cosh',
  'count_over_time', 'day_of_month', 'day_of_week', 'day_of_year', 'days_in_month', 'deg', 'delta', 'deriv', 'double_exponential_smoothing', 'end', 'exp', 'floor',
  'histogram_avg', 'histogram_count', 'histogram_fraction', 'histogram_quantile', 'histogram_stddev', 'histogram_stdvar', 'histogram_sum', 'holt_winters', 'hour', 'idelta',
  'increase', 'info', 'irate', 'label_join', 'label_replace', 'last_over_time', 'ln', 'log10', 'log2', 'mad_over_time', 'max_over_time', 'min_over_time', 'minute', 'month', 'pi',
  'predict_linear', 'present_over_time', 'quantile_over_time', 'rad', 'rate', 'resets', 'round', 'scalar', 'sgn', 'sin', 'sinh', 'sort', 'sort_by_label', 'sort_by_label_desc',
  'sort_desc', 'sqrt', 'start', 'stddev_over_time', 'stdvar_over_time', 'sum_over_time', 'tan', 'tanh', 'time', 'timestamp', 'vector', 'year',
  // Grafana templating (variable queries)
  'label_values', 'label_names', 'query_result',
]);

/** Aggregation operators: followed by `(` or by a by/without clause. */
export const PROMQL_AGGREGATIONS: ReadonlySet<string> = new Set([
  'avg', 'bottomk', 'count', 'count_values', 'group', 'limit_ratio', 'limitk', 'max', 'min', 'quantile', 'stddev', 'stdvar', 'sum', 'topk',
]);

/** Keywords followed by a parenthesised list of label names. */
const GROUPING = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
/** Keywords that are operators or modifiers, never metrics. */
const OPERATOR_WORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'atan2']);

/** One metric selected by an expression. */
export interface MetricRef {
  name: string;
  /** The innermost function or aggregation whose arguments hold the selector, or null. */
  fn: string | null;
}

interface Frame {
  fn: string | null;
  /** Index of the argument being read (commas seen at this depth). */
  arg: number;
  refs: { ref: MetricRef; arg: number }[];
}

const isIdentStart = (c: string) => /[a-zA-Z_:]/.test(c);
const isIdent = (c: string) => /[a-zA-Z0-9_:]/.test(c);

/** Every metric selector in `expr`, in order (duplicates kept), each with its enclosing function. */
export function metricRefs(expr: string): MetricRef[] {
  const out: { ref: MetricRef; arg: number }[] = [];
  const stack: Frame[] = [];
  let pendingFn: string | null = null;
  let i = 0;
  const n = expr.length;
  const fail = (what: string, at = i): never => {
    throw new PromqlScanError(expr, at, what);
  };
  const nextNonSpace = (from: number): number => {
    let j = from;
    while (j < n && /\s/.test(expr[j]!)) j++;
    return j;
  };
  const skipString = (from: number): number => {
    const q = expr[from]!;
    let j = from + 1;
    while (j < n && expr[j] !== q) j += q !== '`' && expr[j] === '\\' ? 2 : 1;
    if (j >= n) fail('unterminated string', from);
    return j + 1;
  };
  /** From an opening bracket, past its matching `close` (strings honoured, no nesting). */
  const skipTo = (from: number, close: string): number => {
    let j = from + 1;
    while (j < n && expr[j] !== close) j = expr[j] === '"' || expr[j] === "'" || expr[j] === '`' ? skipString(j) : j + 1;
    if (j >= n) fail(`no closing ${close}`, from);
    return j + 1;
  };
  const innermost = (): string | null => {
    for (let k = stack.length - 1; k >= 0; k--) if (stack[k]!.fn !== null) return stack[k]!.fn;
    return null;
  };
  const record = (name: string) => {
    const entry = { ref: { name, fn: innermost() }, arg: stack.length ? stack[stack.length - 1]!.arg : 0 };
    (stack.length ? stack[stack.length - 1]!.refs : out).push(entry);
  };

  while (i < n) {
    const c = expr[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === '#') {
      while (i < n && expr[i] !== '\n') i++;
    } else if (c === '"' || c === "'" || c === '`') {
      i = skipString(i);
    } else if (c === '$') {
      // Grafana variable: ${name}, ${name:format}, $name, $__rate_interval
      if (expr[i + 1] === '{') i = skipTo(i + 1, '}');
      else {
        i++;
        while (i < n && /[a-zA-Z0-9_]/.test(expr[i]!)) i++;
      }
      if (i < n && isIdent(expr[i]!)) fail('a variable inside a metric name');
    } else if (c === '{') {
      // A matcher without a metric name before it: {__name__="x", …}
      const end = skipTo(i, '}');
      const m = expr.slice(i, end).match(/__name__\s*=\s*"([a-zA-Z_:][a-zA-Z0-9_:]*)"/);
      if (m) record(m[1]!);
      i = end;
    } else if (c === '[') {
      i = skipTo(i, ']');
    } else if (c === '(') {
      stack.push({ fn: pendingFn, arg: 0, refs: [] });
      pendingFn = null;
      i++;
    } else if (c === ')') {
      const f = stack.pop() ?? fail('unbalanced )');
      // label_values(selector, label) and label_values(label): the last argument is a label.
      const keep = f.fn === 'label_values' ? f.refs.filter((r) => r.arg !== f.arg) : f.refs;
      const parent = stack.length ? stack[stack.length - 1]!.refs : out;
      for (const r of keep) parent.push({ ref: r.ref, arg: stack.length ? stack[stack.length - 1]!.arg : 0 });
      i++;
    } else if (c === ',') {
      if (stack.length) stack[stack.length - 1]!.arg++;
      i++;
    } else if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(expr[i + 1] ?? ''))) {
      // numbers, hex, exponents, durations (5m, 1h30m)
      while (i < n && /[0-9a-zA-Z_.]/.test(expr[i]!)) i++;
    } else if (isIdentStart(c)) {
      const start = i;
      while (i < n && isIdent(expr[i]!)) i++;
      const word = expr.slice(start, i);
      if (expr[i] === '$') fail('a variable inside a metric name', start);
      const lower = word.toLowerCase();
      const j = nextNonSpace(i);
      const next = expr[j] ?? '';
      if (GROUPING.has(lower)) {
        if (next === '(') i = skipTo(j, ')');
      } else if (OPERATOR_WORDS.has(lower) || lower === 'inf' || lower === 'nan') {
        // operator, modifier or number
      } else if (PROMQL_AGGREGATIONS.has(lower)) {
        const after = expr.slice(j).match(/^[a-zA-Z_]+/)?.[0]?.toLowerCase();
        if (next !== '(' && after !== 'by' && after !== 'without') fail(`aggregation ${word} without arguments`, start);
        pendingFn = lower;
      } else if (next === '(') {
        if (!PROMQL_FUNCTIONS.has(word)) fail(`unknown function ${word}()`, start);
        pendingFn = word;
      } else {
        record(word);
      }
    } else {
      // operators and the rest: + - * / % ^ == != < > <= >= =~ !~ @ :
      i++;
    }
  }
  if (stack.length) fail('unbalanced (');
  return out.map((r) => r.ref);
}

/** The distinct metric names `expr` selects, sorted. */
export function metricNames(expr: string): string[] {
  return [...new Set(metricRefs(expr).map((r) => r.name))].sort();
}

/** Range functions meant for counters, and for gauges. */
export const COUNTER_FUNCTIONS: ReadonlySet<string> = new Set(['rate', 'irate', 'increase', 'resets']);
export const GAUGE_FUNCTIONS: ReadonlySet<string> = new Set(['delta', 'idelta', 'deriv', 'predict_linear', 'double_exponential_smoothing', 'holt_winters']);

/** Metric families from Prometheus text: name → type, from the `# TYPE` lines. */
export function metricFamilies(text: string): Map<string, string> {
  const families = new Map<string, string>();
  for (const line of text.split('\n')) {
    const m = line.match(/^#\s*TYPE\s+([a-zA-Z_:][a-zA-Z0-9_:]*)\s+(\w+)\s*$/);
    if (m) families.set(m[1]!, m[2]!);
  }
  return families;
}

/**
 * The type of the series `name` against exported families: the family's own type, or
 * `counter` for a histogram's `_bucket`/`_sum`/`_count` and a summary's `_sum`/`_count`;
 * undefined when no family exports it.
 */
export function seriesType(families: ReadonlyMap<string, string>, name: string): string | undefined {
  const own = families.get(name);
  if (own !== undefined) return own;
  const m = name.match(/^(.*)_(bucket|sum|count)$/);
  if (!m) return undefined;
  const base = families.get(m[1]!);
  if (base === 'histogram') return 'counter';
  if (base === 'summary' && m[2] !== 'bucket') return 'counter';
  return undefined;
}

/** What is wrong with the metrics `refs` select, against exported families (one line each; empty when fine). */
export function checkRefs(where: string, refs: MetricRef[], families: ReadonlyMap<string, string>): string[] {
  const problems: string[] = [];
  for (const r of refs) {
    const type = seriesType(families, r.name);
    if (type === undefined) problems.push(`${where}: ${r.name} is not exported by /metrics`);
    else if (r.fn !== null && COUNTER_FUNCTIONS.has(r.fn) && type !== 'counter') problems.push(`${where}: ${r.fn}() over ${r.name}, a ${type}, not a counter`);
    else if (r.fn !== null && GAUGE_FUNCTIONS.has(r.fn) && type !== 'gauge') problems.push(`${where}: ${r.fn}() over ${r.name}, a ${type}, not a gauge`);
  }
  return [...new Set(problems)];
}
