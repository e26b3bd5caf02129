/**
 * parseExposition(): case tables of valid texts (what each sample reads as) and malformed
 * ones (which line fails, and why), plus the bounds on hostile input.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ExpositionError, parseExposition, parseValue, VALUE_MAX, type Sample } from './parse.js';
import { countStringWork } from '../../test/helpers/work.js';

// dist/collectors/prometheus → the source fixtures three levels up.
const FIXTURES = fileURLToPath(new URL('../../../collectors/prometheus/fixtures/', import.meta.url));

/** A sample as a plain object (labels with an ordinary prototype) for deepEqual. */
function plain(s: Sample): { name: string; labels: Record<string, string>; value: number; timestamp?: number } {
  const o: { name: string; labels: Record<string, string>; value: number; timestamp?: number } = { name: s.name, labels: { ...s.labels }, value: s.value };
  if (s.timestamp !== undefined) o.timestamp = s.timestamp;
  return o;
}

const S = (name: string, value: number, labels: Record<string, string> = {}, timestamp?: number) => (timestamp === undefined ? { name, labels, value } : { name, labels, value, timestamp });

interface Valid {
  name: string;
  text: string;
  samples: ReturnType<typeof S>[];
}

const valid: Valid[] = [
  { name: 'empty text', text: '', samples: [] },
  { name: 'only blank lines and comments', text: '\n\n# just a comment\n   \n#\n', samples: [] },
  { name: 'name and value', text: 'up 1\n', samples: [S('up', 1)] },
  { name: 'no final newline', text: 'up 1', samples: [S('up', 1)] },
  { name: 'CRLF line endings', text: 'a 1\r\nb 2\r\n', samples: [S('a', 1), S('b', 2)] },
  { name: 'leading BOM', text: '\uFEFFup 1\n', samples: [S('up', 1)] },
  { name: 'colons in names', text: 'vllm:num_requests_waiting{model_name="m"} 3.0\n', samples: [S('vllm:num_requests_waiting', 3, { model_name: 'm' })] },
  { name: 'empty label set', text: 'up{} 1\n', samples: [S('up', 1)] },
  { name: 'trailing comma in labels', text: 'up{a="1",} 1\n', samples: [S('up', 1, { a: '1' })] },
  { name: 'blanks and tabs between tokens', text: '  up \t{ a = "1" , b="2" }\t 1 \t 42 \n', samples: [S('up', 1, { a: '1', b: '2' }, 42)] },
  { name: 'escaped quote, backslash, newline in a label value', text: 'm{path="C:\\\\x",q="say \\"hi\\"",n="a\\nb"} 1\n', samples: [S('m', 1, { path: 'C:\\x', q: 'say "hi"', n: 'a\nb' })] },
  { name: 'braces, commas and = inside a label value', text: 'm{a="{x=1,y}"} 1\n', samples: [S('m', 1, { a: '{x=1,y}' })] },
  { name: 'unicode in a label value', text: 'm{city="São Paulo",emoji="🔥"} 1\n', samples: [S('m', 1, { city: 'São Paulo', emoji: '🔥' })] },
  { name: 'empty label value', text: 'm{a=""} 1\n', samples: [S('m', 1, { a: '' })] },
  { name: 'timestamp', text: 'm 1 1700000000000\n', samples: [S('m', 1, {}, 1700000000000)] },
  { name: 'negative timestamp', text: 'm 1 -5\n', samples: [S('m', 1, {}, -5)] },
  { name: 'scientific and signed values', text: 'a 1.5e3\nb -2\nc +0.25\nd .5\ne 7.\nf 1E-2\n', samples: [S('a', 1500), S('b', -2), S('c', 0.25), S('d', 0.5), S('e', 7), S('f', 0.01)] },
  { name: 'NaN and infinities', text: 'a NaN\nb +Inf\nc -Inf\nd Inf\ne nan\nf -infinity\n', samples: [S('a', NaN), S('b', Infinity), S('c', -Infinity), S('d', Infinity), S('e', NaN), S('f', -Infinity)] },
  { name: '+Inf as a label value (histogram bucket)', text: 'h_bucket{le="+Inf"} 10\n', samples: [S('h_bucket', 10, { le: '+Inf' })] },
  {
    name: 'HELP and TYPE lines',
    text: '# HELP m The thing \\\\ with\\nnewline.\n# TYPE m gauge\nm 1\n# TYPE h histogram\nh_bucket{le="1"} 1\nh_count 1\nh_sum 0.5\n',
    samples: [S('m', 1), S('h_bucket', 1, { le: '1' }), S('h_count', 1), S('h_sum', 0.5)],
  },
  { name: 'duplicate series: the last wins, label order does not matter', text: 'm{a="1",b="2"} 1\nm{b="2",a="1"} 5\nm{a="1"} 7\n', samples: [S('m', 5, { a: '1', b: '2' }), S('m', 7, { a: '1' })] },
  { name: 'a label named __proto__ is an ordinary label', text: 'm{__proto__="x",constructor="y"} 1\n', samples: [S('m', 1, { __proto__: 'x', constructor: 'y' } as unknown as Record<string, string>)] },
  { name: 'a second TYPE for a name is ignored', text: '# TYPE m gauge\n# TYPE m counter\nm 1\n', samples: [S('m', 1)] },
  { name: 'an unknown # word is a comment', text: '# EOF\n# UNIT m seconds\n#HELPX m\nm 1\n', samples: [S('m', 1)] },
];

for (const c of valid) {
  test(`parse: ${c.name}`, () => {
    const r = parseExposition(c.text);
    const got = r.samples.map(plain);
    const want = c.samples.map((s) => ({ ...s, labels: { ...s.labels } }));
    if (c.name.startsWith('a label named __proto__')) {
      // An object literal's __proto__ sets the prototype; compare the pairs instead.
      assert.equal(got.length, 1);
      assert.deepEqual(Object.entries(r.samples[0]!.labels).sort(), [
        ['__proto__', 'x'],
        ['constructor', 'y'],
      ]);
      assert.equal(Object.getPrototypeOf(r.samples[0]!.labels), null);
      return;
    }
    assert.equal(got.length, want.length);
    for (let i = 0; i < want.length; i++) {
      const g = got[i]!;
      const w = want[i]!;
      assert.equal(g.name, w.name);
      assert.deepEqual(g.labels, w.labels);
      if (Number.isNaN(w.value)) assert.ok(Number.isNaN(g.value), `${w.name} is NaN`);
      else assert.equal(g.value, w.value);
      assert.equal(g.timestamp, 'timestamp' in w ? w.timestamp : undefined);
    }
  });
}

test('parse: HELP and TYPE are recorded (unescaped), duplicates and lines counted', () => {
  const r = parseExposition('# HELP m a \\\\ b\\nc\n# TYPE m gauge\nm{a="1"} 1\nm{a="1"} 2\nx 3\n');
  assert.equal(r.help.get('m'), 'a \\ b\nc');
  assert.equal(r.types.get('m'), 'gauge');
  assert.equal(r.lines, 3);
  assert.equal(r.duplicates, 1);
});

test('parse: keep() stores only the names asked for but checks and counts every line', () => {
  const text = '# TYPE a gauge\n# TYPE b gauge\na 1\nb 2\nb 3\n';
  const r = parseExposition(text, { keep: (n) => n === 'a' });
  assert.deepEqual(r.samples.map((s) => s.name), ['a']);
  assert.deepEqual([...r.types.keys()], ['a']);
  assert.equal(r.lines, 3);
  assert.equal(r.duplicates, 0);
  assert.throws(() => parseExposition('a 1\nb oops\n', { keep: (n) => n === 'a' }), (e: unknown) => e instanceof ExpositionError && e.line === 2);
});

interface Invalid {
  name: string;
  text: string;
  line: number;
  reason: RegExp;
}

const invalid: Invalid[] = [
  { name: 'value missing', text: 'up\n', line: 1, reason: /expected "\{" or a blank after the name/ },
  { name: 'value missing after labels', text: 'up{a="1"}\n', line: 1, reason: /expected a blank then the value/ },
  { name: 'value missing after a blank', text: 'ok 1\nup \n', line: 2, reason: /the value is missing/ },
  { name: 'value not a number', text: 'up abc\n', line: 1, reason: /the value "abc" is not a number/ },
  { name: 'hexadecimal value', text: 'up 0x10\n', line: 1, reason: /not a number/ },
  { name: 'underscore in a value', text: 'up 1_000\n', line: 1, reason: /not a number/ },
  { name: 'empty-ish value "+"', text: 'up +\n', line: 1, reason: /not a number/ },
  { name: 'fractional timestamp', text: 'up 1 1.5\n', line: 1, reason: /timestamp "1.5" is not an integer/ },
  { name: 'text after the timestamp', text: 'up 1 2 3\n', line: 1, reason: /unexpected "3" after the timestamp/ },
  { name: 'name starting with a digit', text: '1up 1\n', line: 1, reason: /expected a metric name/ },
  { name: 'name with a dash', text: 'up-time 1\n', line: 1, reason: /expected "\{" or a blank after the name/ },
  { name: 'unterminated label value', text: 'up{a="1} 1\n', line: 1, reason: /label a: the value has no closing quote/ },
  { name: 'raw newline inside a label value', text: 'up{a="x\ny"} 1\n', line: 1, reason: /no closing quote/ },
  { name: 'unknown escape', text: 'up{a="\\t"} 1\n', line: 1, reason: /invalid escape "\\\\t"/ },
  { name: 'backslash at the end of the line', text: 'up{a="\\', line: 1, reason: /invalid escape at the end of the line/ },
  { name: 'unquoted label value', text: 'up{a=1} 1\n', line: 1, reason: /expected a quoted value for label a/ },
  { name: 'label without =', text: 'up{a} 1\n', line: 1, reason: /expected "=" after label a/ },
  { name: 'label name with a colon', text: 'up{a:b="1"} 1\n', line: 1, reason: /expected "=" after label a/ },
  { name: 'label name starting with a digit', text: 'up{1a="1"} 1\n', line: 1, reason: /expected a label name or "\}"/ },
  { name: 'missing comma between labels', text: 'up{a="1" b="2"} 1\n', line: 1, reason: /expected "," or "\}" after label a/ },
  { name: 'unclosed label set', text: 'up{a="1"\n', line: 1, reason: /expected "," or "\}"/ },
  { name: 'the same label twice', text: 'up{a="1",a="2"} 1\n', line: 1, reason: /label a appears twice/ },
  { name: 'TYPE with an unknown type', text: '# TYPE up gaugey\n', line: 1, reason: /expected counter, gauge, histogram, summary or untyped, got "gaugey"/ },
  { name: 'TYPE without a type', text: '# TYPE up\n', line: 1, reason: /got ""/ },
  { name: 'TYPE with extra words', text: '# TYPE up gauge extra\n', line: 1, reason: /unexpected "extra" after the type/ },
  { name: 'TYPE without a name', text: '# TYPE\n', line: 1, reason: /# TYPE: expected a metric name/ },
  { name: 'HELP with a bad name', text: '# HELP 9x text\n', line: 1, reason: /# HELP: expected a metric name/ },
  { name: 'an HTML page', text: '<html><body>502 Bad Gateway</body></html>\n', line: 1, reason: /expected a metric name/ },
  { name: 'JSON', text: '{"queue": 3}\n', line: 1, reason: /expected a metric name/ },
  { name: 'binary garbage', text: '\u0000\u0001\u0002\u00ff', line: 1, reason: /expected a metric name/ },
  { name: 'a truncated last line', text: 'a 1\nvllm:num_requests_waiting{model_name="lla', line: 2, reason: /no closing quote/ },
  { name: 'OpenMetrics exemplar', text: 'c_total 1 # {trace_id="x"} 1\n', line: 1, reason: /timestamp "#" is not an integer/ },
];

for (const c of invalid) {
  test(`parse refuses: ${c.name}`, () => {
    assert.throws(
      () => parseExposition(c.text),
      (e: unknown) => {
        assert.ok(e instanceof ExpositionError, `an ExpositionError, got ${String(e)}`);
        assert.equal(e.line, c.line);
        assert.match(e.reason, c.reason);
        assert.match(e.message, new RegExp(`^line ${c.line}: `));
        return true;
      },
    );
  });
}

test('parseValue: the float forms Go accepts, nothing else', () => {
  const cases: [string, number | null][] = [
    ['0', 0],
    ['-0', -0],
    ['3.25', 3.25],
    ['1e308', 1e308],
    ['1e309', Infinity],
    ['+INF', Infinity],
    ['-Infinity', -Infinity],
    ['', null],
    [' 1', null],
    ['1 ', null],
    ['0x1p3', null],
    ['1e', null],
    ['e1', null],
    ['--1', null],
    ['Infinit', null],
    ['NaNa', null],
  ];
  for (const [tok, want] of cases) assert.equal(parseValue(tok), want, JSON.stringify(tok));
  assert.ok(Number.isNaN(parseValue('NaN')));
});

test('bounds: more than maxSeries sample lines fails at the first line beyond, reading nothing after it', () => {
  const lines = 150_000;
  const text = Array.from({ length: lines }, (_, i) => `m{i="${i}"} 1`).join('\n');
  // Counted, not timed: keep() is asked once per sample line read, so it says where reading stopped.
  let asked = 0;
  const w = countStringWork(() => parseExposition(text, { maxSeries: 100_000, keep: () => (asked++, false) }));
  assert.ok(w.error instanceof ExpositionError && w.error.line === 100_001 && /more than 100000 series/.test(w.error.reason), String(w.error));
  assert.equal(asked, 100_000, 'no line past the bound is read');
  const upTo = text.indexOf('\n', text.indexOf('m{i="100000"}'));
  assert.ok(w.chars <= 8 * upTo, `${w.chars} characters of work for ${upTo} characters up to the bound`);
  // The same with the default bound, keeping everything.
  assert.throws(() => parseExposition(text), /more than 100000 series/);
  // Exactly the bound is fine; duplicates count as lines.
  assert.equal(parseExposition('m 1\nm 2\nm 3\n', { maxSeries: 3 }).lines, 3);
  assert.throws(() => parseExposition('m 1\nm 2\nm 3\nm 4\n', { maxSeries: 3 }), /line 4: more than 3 series/);
});

test('bounds: a long line, many comment lines and many escapes cost work linear in the text (counted)', () => {
  // What each costs is counted in characters of string work (countStringWork), at n and 2n:
  // twice the text must cost at most about twice the work, and a few characters per character.
  const shapes: [string, (n: number) => string][] = [
    ['one long label value', (n) => `m{a="${'x'.repeat(n)}"} 1\n`],
    ['comment lines', (n) => '# just a comment that goes on for a while\n'.repeat(Math.ceil(n / 42))],
    ['escapes in one value', (n) => `m{a="${'\\"'.repeat(n / 2)}"} 1`],
    ['many labels', (n) => `m{${Array.from({ length: n / 8 }, (_, i) => `l${i}="v"`).join(',')}} 1\n`],
    ['many short lines', (n) => 'm{a="b"} 1 2\n'.repeat(Math.ceil(n / 13))],
    ['a long run of digits that is no number', (n) => `m ${'1'.repeat(n)}x\n`],
  ];
  const n = 200_000;
  for (const [what, make] of shapes) {
    const [a, b] = [make(n), make(2 * n)];
    const [wa, wb] = [countStringWork(() => parseExposition(a)), countStringWork(() => parseExposition(b))];
    assert.ok(wa.chars <= 6 * a.length + 100, `${what}: ${wa.chars} characters of work for ${a.length}`);
    assert.ok(wb.chars <= 2.1 * wa.chars + 100, `${what}: ${wb.chars} characters of work at 2n against ${wa.chars} at n: not linear`);
    assert.ok(wb.longestRegexInput <= VALUE_MAX, `${what}: a regex ran over ${wb.longestRegexInput} characters`);
  }
  // What the big inputs parse to.
  const big = 'x'.repeat(4 * 1024 * 1024);
  assert.equal(parseExposition(`m{a="${big}"} 1\n`).samples[0]!.labels.a!.length, big.length);
  assert.equal(parseExposition('# just a comment that goes on for a while\n'.repeat(100_000)).samples.length, 0);
  assert.equal(parseExposition(`m{a="${'\\"'.repeat(500_000)}"} 1`).samples[0]!.labels.a!.length, 500_000);
  // A value token is matched only when short, so a pattern's backtracking is bounded whatever it is.
  assert.equal(parseValue('1'.repeat(VALUE_MAX)), Number('1'.repeat(VALUE_MAX)));
  assert.equal(parseValue('1'.repeat(VALUE_MAX + 1)), null);
  assert.throws(() => parseExposition(`m ${'1'.repeat(1_000_000)}x`), /line 1: m: the value "1111.*" is not a number/);
});

test('every fixture parses, with no duplicate series', () => {
  const files = readdirSync(FIXTURES).filter((f) => f.endsWith('.prom'));
  assert.ok(files.length >= 6, `fixtures: ${files.join(', ')}`);
  for (const f of files) {
    const text = readFileSync(FIXTURES + f, 'utf8');
    assert.match(text, /^# Fixture: /, `${f} starts with its provenance`);
    const r = parseExposition(text);
    assert.ok(r.samples.length > 0, f);
    assert.equal(r.duplicates, 0, f);
  }
});
