/**
 * Coded errors for collectors (docs/conventions.md "Errors carry codes", after fastify's `lib/errors.js`): one
 * table per module of `code → what it means` (and, for a receiver, the HTTP status it answers),
 * turned by `defineErrors` into one Error class whose instances carry `code`, `meaning` and
 * `status`. The table is what the collector's README "Errors" section lists (collectors/
 * index.test.ts checks both ways).
 *
 * Contract: `defineErrors` is called once per module at import; constructing an error never
 * throws and never logs. A message is the call site's text, after the module prefix (`prefix:
 * `) unless `prefixMessages` is false (carbon's call sites write their own prefix where shown).
 */

/** One code's entry: what it means (for the README and operators) and, optionally, its HTTP status. */
export interface ErrorSpec {
  meaning: string;
  status?: number;
}

/** A table row: the meaning alone, or the meaning with a status. */
export type ErrorRow = string | ErrorSpec;

/** An error of one table: `code` is one of its keys. */
export interface CodedError<K extends string = string> extends Error {
  readonly code: K;
  /** The table's meaning of `code`. */
  readonly meaning: string;
  /** The table's HTTP status of `code`, when it has one. */
  readonly status: number | undefined;
}

/** The class defineErrors makes: `new X(code, message)`, `e instanceof X`, and the table. */
export interface CodedErrorClass<K extends string> {
  new (code: K, message: string): CodedError<K>;
  readonly prototype: CodedError<K>;
  /** Every code of the table with its meaning and status, in the table's order. */
  readonly codes: Readonly<Record<K, Readonly<ErrorSpec>>>;
  /** The module the codes belong to, e.g. `collectors/openadr3`. */
  readonly prefix: string;
}

export interface DefineErrorsOptions {
  /** The class's `name` (shown in stack traces), e.g. `Openadr3Error`. */
  name: string;
  /** Start each message with `<prefix>: ` (default true). */
  prefixMessages?: boolean;
}

/** A code is SCREAMING_SNAKE with `_ERR_` in it: `OADR3_ERR_TIMEOUT`. */
export const CODE_PATTERN = /^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_ERR_[A-Z0-9_]+$/;

/**
 * Makes the error class of `table`. Throws at import if a code does not match CODE_PATTERN
 * (a table is code, not input).
 */
export function defineErrors<T extends Record<string, ErrorRow>>(prefix: string, table: T, o: DefineErrorsOptions): CodedErrorClass<Extract<keyof T, string>> {
  type K = Extract<keyof T, string>;
  const codes = {} as Record<K, Readonly<ErrorSpec>>;
  for (const [code, row] of Object.entries(table) as Array<[K, ErrorRow]>) {
    if (!CODE_PATTERN.test(code)) throw new Error(`collectors/kit: ${prefix}: ${JSON.stringify(code)} is not an error code (like ${prefix.split('/').pop()?.toUpperCase()}_ERR_SOMETHING)`);
    codes[code] = Object.freeze(typeof row === 'string' ? { meaning: row } : { ...row });
  }
  Object.freeze(codes);
  const lead = o.prefixMessages === false ? '' : `${prefix}: `;
  class Coded extends Error implements CodedError<K> {
    static readonly codes = codes;
    static readonly prefix = prefix;
    readonly meaning: string;
    readonly status: number | undefined;
    constructor(
      readonly code: K,
      message: string,
    ) {
      super(`${lead}${message}`);
      this.meaning = codes[code]?.meaning ?? '';
      this.status = codes[code]?.status;
    }
  }
  Object.defineProperty(Coded, 'name', { value: o.name });
  Object.defineProperty(Coded.prototype, 'name', { value: o.name, writable: true, configurable: true });
  return Coded as unknown as CodedErrorClass<K>;
}

/** The codes of a collector's error classes, merged (a collector may have several modules' tables). */
export function codesOf(classes: ReadonlyArray<{ readonly codes: Readonly<Record<string, Readonly<ErrorSpec>>> }>): Record<string, Readonly<ErrorSpec>> {
  const out: Record<string, Readonly<ErrorSpec>> = {};
  for (const c of classes) Object.assign(out, c.codes);
  return out;
}
