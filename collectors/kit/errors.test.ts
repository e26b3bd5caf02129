/** defineErrors: one class per table, instances carry the code, its meaning and status. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { codesOf, defineErrors } from './errors.js';

test('defineErrors: codes, messages, instanceof, table', () => {
  const TableError = defineErrors('collectors/example', { EX_ERR_ONE: 'the first thing', EX_ERR_TWO: { meaning: 'the second', status: 413 } }, { name: 'TableError' });
  const Plain = defineErrors('collectors/plain', { PLAIN_ERR_X: 'x' }, { name: 'PlainError', prefixMessages: false });
  const e = new TableError('EX_ERR_TWO', 'too big');
  assert.ok(e instanceof TableError && e instanceof Error);
  assert.ok(!((e as unknown) instanceof Plain));
  assert.deepEqual([e.code, e.message, e.meaning, e.status, e.name], ['EX_ERR_TWO', 'collectors/example: too big', 'the second', 413, 'TableError']);
  assert.equal(new TableError('EX_ERR_ONE', 'a').status, undefined);
  assert.equal(new Plain('PLAIN_ERR_X', 'as written').message, 'as written');
  assert.match(String(new Plain('PLAIN_ERR_X', 'y').stack), /^PlainError: y/);
  assert.deepEqual(Object.keys(TableError.codes), ['EX_ERR_ONE', 'EX_ERR_TWO']);
  assert.equal(TableError.prefix, 'collectors/example');
  assert.deepEqual(Object.keys(codesOf([TableError, Plain])), ['EX_ERR_ONE', 'EX_ERR_TWO', 'PLAIN_ERR_X']);
  assert.throws(() => defineErrors('collectors/bad', { not_a_code: 'x' }, { name: 'Bad' }), /"not_a_code" is not an error code/);
});
