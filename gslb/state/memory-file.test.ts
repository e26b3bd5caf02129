/**
 * MemoryStore with its append-only file: what survives a restart (overrides, audit, ids,
 * the revision), what a torn last line and a corrupt line do at start, and that refused
 * writes leave the file alone. Each test works in its own temporary directory.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Override, Signal } from '../model/types.js';
import { MemoryStore } from './memory-store.js';
import { StoreError } from './store.js';

const T0 = 1_700_000_000_000;

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'gridsteer-memfile-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A started store on `file`, closed after the test; `warnings` collects its warnings. */
async function open(t: TestContext, file: string | null, warnings: string[] = []): Promise<MemoryStore> {
  const s = new MemoryStore({ file, warn: (m) => warnings.push(m) });
  t.after(() => s.close());
  await s.start();
  return s;
}

function ov(region: string, reason: string, extra: Partial<Override> = {}): Omit<Override, 'id'> {
  return { region, action: 'drain', value: 0, ramp: 600_000, actor: 'alice', reason, start: T0, ...extra };
}

function signal(i: number): Signal {
  return { region: 'eu-west', kind: 'capacity', source: 'test/a', key: 'pool', observedAt: T0 + i, expiresAt: T0 + i + 60_000, value: { fraction: 1 } };
}

/** The complete lines of the file, parsed (throws if one is not JSON). */
function lines(file: string): Record<string, unknown>[] {
  const text = readFileSync(file, 'utf8');
  assert.ok(text === '' || text.endsWith('\n'), 'the file ends with a newline');
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

async function rejectsWith(p: Promise<unknown>, code: StoreError['code'], ...says: RegExp[]): Promise<StoreError> {
  let err: unknown;
  try {
    await p;
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof StoreError, `rejects with a StoreError (got ${String(err)})`);
  assert.equal(err.code, code, err.message);
  for (const re of says) assert.match(err.message, re);
  return err;
}

test('overrides and audit survive close + a new store + start; ids continue, the revision does not go back', async (t) => {
  const file = join(tempDir(t), 'state', 'gridsteer.jsonl'); // the directory is created
  const a = await open(t, file);
  const c1 = await a.createOverride(ov('eu-west', 'maintenance'), T0 + 1);
  const c2 = await a.createOverride(ov('us-east', 'grid test', { action: 'weight', value: 0.5 }), T0 + 2);
  const c3 = await a.createOverride(ov('ap-south', 'cooling', { action: 'force-up', end: T0 + 3600_000 }), T0 + 3);
  await a.endOverride(c2.override.id, 'bob', 'test over', T0 + 4);
  for (let i = 0; i < 5; i++) assert.equal((await a.putSignal(signal(i))).stored, true);
  const revBefore = await a.revision();
  const auditBefore = await a.audit(100);
  const overridesBefore = (await a.snapshot()).overrides;
  assert.deepEqual(overridesBefore.map((o) => o.id), [c1.override.id, c3.override.id]);
  assert.deepEqual(auditBefore.map((e) => [e.seq, e.action, e.target]), [
    [4, 'override.end', c2.override.id],
    [3, 'override.create', c3.override.id],
    [2, 'override.create', c2.override.id],
    [1, 'override.create', c1.override.id],
  ]);
  await a.close();

  const b = await open(t, file);
  const snap = await b.snapshot();
  assert.deepEqual(snap.overrides, overridesBefore, 'the live overrides, field for field');
  assert.deepEqual(snap.records, [], 'signals are not kept: collectors send them again');
  assert.deepEqual(await b.audit(100), auditBefore, 'the audit, newest first, with before and after');
  assert.deepEqual(await b.audit(2), auditBefore.slice(0, 2));
  assert.ok((await b.revision()) >= revBefore, `revision ${await b.revision()} ≥ ${revBefore} before the restart`);

  const c4 = await b.createOverride(ov('eu-west', 'again'), T0 + 5);
  assert.equal(c4.override.id, 'ov-4', 'ids continue after the highest ever created (ended ones included)');
  assert.ok(c4.revision > revBefore, 'a write after the restart gets a revision never handed out before');
  const top = (await b.audit(1))[0];
  assert.equal(top?.seq, 5, 'audit seq continues');
  const ended = await b.endOverride(c1.override.id, 'carol', 'done', T0 + 6);
  assert.deepEqual(ended.override, c1.override);
  assert.ok(ended.revision > c4.revision);
});

test('the revision does not go back after a crash, even when only signals were written', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'state.jsonl');
  const crashed = join(dir, 'crashed.jsonl');
  const a = await open(t, file);
  await a.createOverride(ov('eu-west', 'maintenance'), T0);
  let last = 0;
  for (let i = 0; i < 25; i++) last = (await a.putSignal(signal(i))).revision;
  // The file as a crash (no close) would leave it.
  copyFileSync(file, crashed);
  const b = await open(t, crashed);
  assert.ok((await b.revision()) >= last, `revision ${await b.revision()} ≥ ${last}`);
  const next = await b.putSignal(signal(0));
  assert.ok(next.revision > last);
  assert.equal((await b.snapshot()).overrides.length, 1);
});

test('a torn last line is cut off with a warning; the next write lands on its own line', async (t) => {
  const file = join(tempDir(t), 'state.jsonl');
  const a = await open(t, file);
  await a.createOverride(ov('eu-west', 'one'), T0);
  await a.createOverride(ov('us-east', 'two'), T0 + 1);
  await a.close();
  const complete = readFileSync(file, 'utf8');
  const n = lines(file).length;
  // A crash in the middle of writing a third line: half a JSON object, no newline.
  const third = JSON.stringify({ op: 'create', rev: 99, override: { id: 'ov-3', region: 'ap-south', action: 'drain' } });
  appendFileSync(file, third.slice(0, third.length >> 1));

  const warnings: string[] = [];
  const b = await open(t, file, warnings);
  assert.equal(warnings.length, 1, warnings.join('\n'));
  assert.ok(warnings[0]!.includes(`${file}:${n + 1}: torn last line cut off`), warnings[0]);
  assert.equal(readFileSync(file, 'utf8'), complete, 'the file is back to its complete lines');
  assert.deepEqual((await b.snapshot()).overrides.map((o) => o.reason), ['one', 'two']);

  const c3 = await b.createOverride(ov('ap-south', 'three'), T0 + 2);
  assert.equal(c3.override.id, 'ov-3');
  await b.close();

  const after = lines(file); // every line parses: nothing glued to the fragment
  assert.deepEqual(after.filter((l) => l.op === 'create').map((l) => (l.override as Override).reason), ['one', 'two', 'three']);
  const again: string[] = [];
  const c = await open(t, file, again);
  assert.deepEqual(again, [], 'no warning: the file is whole');
  assert.deepEqual((await c.snapshot()).overrides.map((o) => o.id), ['ov-1', 'ov-2', 'ov-3']);
});

test('a torn line that is the only one: the store starts empty', async (t) => {
  const file = join(tempDir(t), 'state.jsonl');
  writeFileSync(file, '{"op":"cre');
  const warnings: string[] = [];
  const s = await open(t, file, warnings);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0]!, /:1: torn last line/);
  assert.equal(readFileSync(file, 'utf8'), '');
  assert.deepEqual((await s.snapshot()).overrides, []);
  assert.equal((await s.createOverride(ov('eu-west', 'first'), T0)).override.id, 'ov-1');
});

/** A file of three lines whose middle one is `bad`; each case must start, apply the good lines and hand the bad one on (ADR 0020). */
const corrupt: { name: string; bad: string; says: RegExp }[] = [
  { name: 'not JSON', bad: '{"op":"create","rev":2,', says: /unreadable line \(.*JSON/ },
  { name: 'an unknown op', bad: '{"op":"delete","rev":2,"id":"ov-1","audit":{"seq":2}}', says: /unknown op "delete" \(known: create, end, rev, audit, trim, base, override\)/ },
  { name: 'no op', bad: '{"rev":2,"id":"ov-1"}', says: /unknown op undefined/ },
  { name: 'JSON but not an object', bad: '[1,2]', says: /not a JSON object/ },
  { name: 'null', bad: 'null', says: /not a JSON object/ },
  { name: 'a create without its override', bad: '{"op":"create","rev":2,"audit":{"seq":2}}', says: /override must be an object/ },
  { name: 'an end without an id', bad: '{"op":"end","rev":2,"audit":{"seq":2}}', says: /id must be a string/ },
  { name: 'an entry without audit', bad: '{"op":"end","rev":2,"id":"ov-1"}', says: /audit must be an object/ },
  { name: 'a rev that is not a positive integer', bad: '{"op":"rev","rev":"7"}', says: /rev must be a positive integer/ },
];

for (const c of corrupt) {
  test(`a corrupt line in the middle (${c.name}) does not stop the start: the other lines apply, the line is handed on as unreadable, named file:line`, async (t) => {
    const dir = tempDir(t);
    const good = join(dir, 'good.jsonl');
    const a = await open(t, good);
    await a.createOverride(ov('eu-west', 'one'), T0);
    await a.createOverride(ov('us-east', 'two'), T0 + 1);
    await a.close();
    const [first, second] = readFileSync(good, 'utf8').split('\n');
    const file = join(dir, 'bad.jsonl');
    const text = `${first}\n${c.bad}\n${second}\n`;
    writeFileSync(file, text);

    const warnings: string[] = [];
    const s = new MemoryStore({ file, warn: (m) => warnings.push(m) });
    t.after(() => s.close());
    await s.start();
    assert.equal(warnings.length, 1, warnings.join('\n'));
    assert.match(warnings[0]!, c.says);
    assert.ok(warnings[0]!.includes(`${file}:2:`), `names ${file}:2 — ${warnings[0]}`);
    assert.match(warnings[0]!, /not applied, and quarantined \(gridsteer quarantine lists it\)/);
    assert.equal(readFileSync(file, 'utf8'), text, 'the file is left as it was');
    const snap = await s.snapshot();
    assert.deepEqual(snap.overrides.map((o) => o.reason), ['one', 'two'], 'the good lines apply');
    assert.deepEqual(snap.unreadable?.map((u) => [u.target, u.raw]), [['file:2', c.bad]]);
    assert.match(snap.unreadable![0]!.why, c.says);
  });
}

test('an unreadable line dropped by an operator (audited with its text) stays dropped after a restart; one not dropped comes back', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'state.jsonl');
  const a = await open(t, file);
  await a.createOverride(ov('eu-west', 'one'), T0);
  await a.close();
  writeFileSync(file, `${readFileSync(file, 'utf8')}{oops}\n[1]\n`);
  const b = new MemoryStore({ file, warn: () => undefined });
  await b.start();
  assert.deepEqual((await b.snapshot()).unreadable?.map((u) => u.target), ['file:2', 'file:3']);
  await b.quarantine([{ target: 'file:2', fingerprint: 'f', why: 'could not be read', at: T0, by: 'node-a' }]);
  await b.dropQuarantined('file:2', 'ops/alice', 'a hand edit gone wrong', T0 + 1);
  assert.deepEqual((await b.snapshot()).unreadable?.map((u) => u.target), ['file:3']);
  const drop = (await b.audit(5)).find((e) => e.action === 'quarantine.drop');
  assert.equal((drop?.before as { record: string }).record, '{oops}');
  await b.close();
  const c = new MemoryStore({ file, warn: () => undefined });
  t.after(() => c.close());
  await c.start();
  assert.deepEqual((await c.snapshot()).unreadable?.map((u) => u.target), ['file:3'], 'the dropped line stays dropped');
  assert.deepEqual((await c.snapshot()).overrides.map((o) => o.reason), ['one']);
});

test('a corrupt complete last line is not taken for a torn one', async (t) => {
  const file = join(tempDir(t), 'state.jsonl');
  writeFileSync(file, '{"op":"create","rev":1\n');
  const warnings: string[] = [];
  const s = new MemoryStore({ file, warn: (m) => warnings.push(m) });
  t.after(() => s.close());
  await s.start();
  assert.equal(readFileSync(file, 'utf8'), '{"op":"create","rev":1\n', 'not cut off');
  assert.ok(warnings[0]?.includes(`${file}:1:`), warnings.join('\n'));
  assert.deepEqual((await s.snapshot()).unreadable?.map((u) => u.target), ['file:1']);
});

test('blank lines are skipped and do not shift line numbers', async (t) => {
  const dir = tempDir(t);
  const good = join(dir, 'good.jsonl');
  const a = await open(t, good);
  await a.createOverride(ov('eu-west', 'one'), T0);
  await a.close();
  const file = join(dir, 'state.jsonl');
  writeFileSync(file, `\n${readFileSync(good, 'utf8')}\n{oops}\n`);
  const s = new MemoryStore({ file, warn: () => undefined });
  t.after(() => s.close());
  await s.start();
  assert.deepEqual((await s.snapshot()).unreadable?.map((u) => u.target), ['file:4']);
});

test('endOverride of an unknown or already ended id: not_found, nothing appended', async (t) => {
  const file = join(tempDir(t), 'state.jsonl');
  const s = await open(t, file);
  const c = await s.createOverride(ov('eu-west', 'one'), T0);
  await s.endOverride(c.override.id, 'bob', 'done', T0 + 1);
  const bytes = readFileSync(file);
  const rev = await s.revision();
  const audit = await s.audit(10);
  let notified = 0;
  s.onRevision(() => notified++);
  for (const id of ['ov-99', c.override.id, '']) {
    await rejectsWith(s.endOverride(id, 'bob', 'again', T0 + 2), 'not_found', new RegExp(`no live override ${id}`));
  }
  assert.deepEqual(readFileSync(file), bytes, 'the file is unchanged');
  assert.equal(await s.revision(), rev);
  assert.deepEqual(await s.audit(10), audit);
  assert.equal(notified, 0);
});

test('a store with file: null keeps nothing across restarts and writes no file', async (t) => {
  const dir = tempDir(t);
  const a = await open(t, null);
  await a.createOverride(ov('eu-west', 'one'), T0);
  await a.putSignal(signal(1));
  assert.equal((await a.snapshot()).overrides.length, 1, 'kept while it runs');
  await a.close();
  const b = await open(t, null);
  const snap = await b.snapshot();
  assert.deepEqual([snap.revision, snap.overrides, snap.records, await b.audit(10)], [0, [], [], []]);
  assert.equal((await b.createOverride(ov('eu-west', 'again'), T0)).override.id, 'ov-1');
  assert.deepEqual(readdirSync(dir), []);
  assert.match(b.status().detail, /nothing kept across restarts/);
});

test('a store with a file refuses writes before start() and after close(), and appends nothing', async (t) => {
  const file = join(tempDir(t), 'state.jsonl');
  const s = new MemoryStore({ file });
  t.after(() => s.close());
  await rejectsWith(s.createOverride(ov('eu-west', 'early'), T0), 'unavailable', /not open/, /start\(\) has not run/);
  await rejectsWith(s.putSignal(signal(1)), 'unavailable', /not open/);
  assert.equal(existsSync(file), false);
  await s.start();
  const c = await s.createOverride(ov('eu-west', 'one'), T0);
  await s.close();
  const bytes = readFileSync(file);
  await rejectsWith(s.createOverride(ov('eu-west', 'late'), T0), 'unavailable', /the store is closed/);
  await rejectsWith(s.endOverride(c.override.id, 'bob', 'late', T0), 'unavailable', /the store is closed/);
  await rejectsWith(s.putSignal(signal(2)), 'unavailable', /the store is closed/);
  assert.deepEqual(readFileSync(file), bytes);
  await rejectsWith(s.start(), 'invalid', /make a new one/);
});

test('the store assigns the id: an id inside the request is ignored', async (t) => {
  const file = join(tempDir(t), 'state.jsonl');
  const s = await open(t, file);
  const smuggled = { ...ov('eu-west', 'one'), id: 'ov-1000' } as Omit<Override, 'id'>;
  const c = await s.createOverride(smuggled, T0);
  assert.equal(c.override.id, 'ov-1');
  assert.deepEqual((await s.snapshot()).overrides.map((o) => o.id), ['ov-1']);
  assert.equal((await s.createOverride(ov('eu-west', 'two'), T0)).override.id, 'ov-2');
});

test('audit(limit): newest first, at most limit, none for 0 or less', async (t) => {
  const s = await open(t, null);
  for (let i = 1; i <= 3; i++) await s.createOverride(ov('eu-west', `r${i}`), T0 + i);
  const cases: [number, number[]][] = [
    [0, []],
    [-1, []],
    [1, [3]],
    [2, [3, 2]],
    [3, [3, 2, 1]],
    [10, [3, 2, 1]],
  ];
  for (const [limit, seqs] of cases) assert.deepEqual((await s.audit(limit)).map((e) => e.seq), seqs, `audit(${limit})`);
});

test('audit entries of housekeeping jobs survive a restart, in order with the overrides\' (a store never written to as well)', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'state.jsonl');
  const a = await open(t, file);
  // Before any revision: an audit line at revision 0.
  await a.appendAudit({ at: T0, actor: 'n1', action: 'job.start', target: 'job:gc-signals@x', reason: 'scheduled', before: null, after: { job: 'gc-signals' } });
  await a.createOverride(ov('eu-west', 'one'), T0);
  await a.appendAudit({ at: T0 + 1, actor: 'n1', action: 'job.finish', target: 'job:gc-signals@x', reason: 'ok: removed 0', before: null, after: { outcome: 'ok' } });
  const rev = await a.revision();
  await a.close();
  const b = await open(t, file);
  assert.deepEqual((await b.audit(10)).map((e) => [e.seq, e.action]), [[3, 'job.finish'], [2, 'override.create'], [1, 'job.start']]);
  assert.equal(await b.revision(), rev, 'audit lines do not move the revision');
  const c = await b.appendAudit({ at: T0 + 2, actor: 'n1', action: 'job.start', target: 'job:gc-signals@y', reason: 'scheduled', before: null, after: null });
  assert.equal(c.seq, 4, 'seqs go on after a restart');
});

test('an audit trim survives a restart (the trimmed entries stay gone); overrides are untouched', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'state.jsonl');
  const a = await open(t, file);
  await a.createOverride(ov('eu-west', 'old one'), T0);
  await a.appendAudit({ at: T0 + 10, actor: 'n1', action: 'job.start', target: 'job:x@1', reason: 'r', before: null, after: null });
  await a.appendAudit({ at: T0 + 20, actor: 'n1', action: 'job.start', target: 'job:x@2', reason: 'r', before: null, after: null });
  assert.deepEqual(await a.trimAudit(T0 + 15), { removed: 2 });
  await a.close();
  const b = await open(t, file);
  assert.deepEqual((await b.audit(10)).map((e) => e.target), ['job:x@2']);
  assert.deepEqual((await b.snapshot()).overrides.map((o) => o.reason), ['old one']);
});

test('an audit trim compacts the file: the trimmed entries are gone from it, not only from memory; a restart reads the same state, ids and seqs go on', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'state.jsonl');
  const a = await open(t, file);
  const live = (await a.createOverride(ov('eu-west', 'kept drain'), T0)).override;
  const gone = (await a.createOverride(ov('us-east', 'short work'), T0 + 1)).override;
  await a.endOverride(gone.id, 'bob', 'work done', T0 + 2);
  await a.appendAudit({ at: T0 + 3, actor: 'n1', action: 'job.start', target: 'job:x@old', reason: 'r', before: null, after: null });
  await a.putSignal(signal(1));
  await a.appendAudit({ at: T0 + 20, actor: 'n1', action: 'job.start', target: 'job:x@new', reason: 'r', before: null, after: null });
  const rev = await a.revision();
  assert.deepEqual(await a.trimAudit(T0 + 10), { removed: 4 });
  const text = readFileSync(file, 'utf8');
  for (const trimmed of ['short work', 'work done', 'job:x@old']) assert.ok(!text.includes(trimmed), `${trimmed} is gone from the file:\n${text}`);
  assert.deepEqual(lines(file).map((l) => l.op), ['base', 'override', 'audit']);
  assert.deepEqual(readdirSync(dir).sort(), ['state.jsonl'], 'no temporary file left');
  // Appends after the compaction land in the new file.
  await a.appendAudit({ at: T0 + 30, actor: 'n1', action: 'job.finish', target: 'job:x@new', reason: 'ok', before: null, after: null });
  await a.close();
  const b = await open(t, file);
  assert.deepEqual((await b.snapshot()).overrides, [live]);
  assert.deepEqual((await b.audit(10)).map((e) => [e.seq, e.target]), [[6, 'job:x@new'], [5, 'job:x@new']]);
  assert.ok((await b.revision()) >= rev, 'the revision does not go back');
  assert.equal((await b.createOverride(ov('eu-west', 'next'), T0 + 40)).override.id, 'ov-3', 'an id of a trimmed override is not handed out again');
  assert.equal((await b.appendAudit({ at: T0 + 41, actor: 'n1', action: 'job.start', target: 'job:y', reason: 'r', before: null, after: null })).seq, 8, 'seqs go on (7 was the create just made)');
});

test('a compaction that cannot be written changes nothing (warned; the trim stands), and a crash mid-compaction (a stray .compact) leaves the old file in force', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'state.jsonl');
  const warnings: string[] = [];
  const a = await open(t, file, warnings);
  await a.createOverride(ov('eu-west', 'kept drain'), T0);
  await a.appendAudit({ at: T0 + 3, actor: 'n1', action: 'job.start', target: 'job:x@old', reason: 'r', before: null, after: null });
  await a.appendAudit({ at: T0 + 20, actor: 'n1', action: 'job.start', target: 'job:x@new', reason: 'r', before: null, after: null });
  // The temporary file cannot be created (a directory holds its name): the compaction fails.
  const { mkdirSync } = await import('node:fs');
  mkdirSync(`${file}.compact`);
  assert.deepEqual(await a.trimAudit(T0 + 10), { removed: 2 });
  assert.match(warnings.join('\n'), /compaction after an audit trim failed .*the file keeps the trimmed entries/);
  assert.ok(readFileSync(file, 'utf8').includes('job:x@old'), 'the old file, with its trim line');
  await a.appendAudit({ at: T0 + 30, actor: 'n1', action: 'job.finish', target: 'job:x@new', reason: 'ok', before: null, after: null });
  await a.close();
  rmSync(`${file}.compact`, { recursive: true });
  // A crash after writing part of the temporary file, before the rename: the old file is in force.
  writeFileSync(`${file}.compact`, '{"op":"base","rev":1,"nextOverride":1,"nextAu');
  const b = await open(t, file);
  assert.deepEqual((await b.audit(10)).map((e) => e.target), ['job:x@new', 'job:x@new'], 'trimmed entries stay trimmed');
  assert.deepEqual((await b.snapshot()).overrides.map((o) => o.reason), ['kept drain']);
  // The next trim compacts over the stray file.
  await b.appendAudit({ at: T0 + 50, actor: 'n1', action: 'job.start', target: 'job:x@later', reason: 'r', before: null, after: null });
  assert.deepEqual(await b.trimAudit(T0 + 25), { removed: 1 });
  assert.deepEqual(readdirSync(dir).sort(), ['state.jsonl']);
  assert.ok(!readFileSync(file, 'utf8').includes('job:x@old'));
});
