/**
 * The process clock (ms epoch). Normally Date.now.
 *
 * For tests that watch a schedule unfold in a running server (test/drain-dig: a drain
 * ramp over minutes, watched with dig in seconds), GRIDSTEER_TEST_CLOCK="<fake>@<rate>@<real>"
 * makes every process of the server (primary and DNS workers, which inherit the
 * environment) read fake + (Date.now() − real) × rate: the same fake instant in every
 * process, running `rate` times as fast. All three are numbers (ms epoch, factor 1–1000,
 * or 0: a clock that stands still at `fake`, for examples whose printed relative times and
 * ramp steps must reproduce, test/readme.test.ts). The CLI's operator commands read it too,
 * so `--until +2h` and "in 5m" are on the server's clock. A malformed value stops the
 * process at start-up rather than serve on a wrong clock. Never set it in production:
 * answers' TTLs and the schedule would follow the fake time.
 */
export interface TestClock {
  fake: number;
  rate: number;
  real: number;
}

export function parseTestClock(v: string | undefined): TestClock | null {
  if (v === undefined || v === '') return null;
  const m = /^(\d{10,16})@(\d+(?:\.\d+)?)@(\d{10,16})$/.exec(v);
  const rate = m ? Number(m[2]) : NaN;
  if (!m || !(rate === 0 || (rate >= 1 && rate <= 1000))) {
    throw new Error(`GRIDSTEER_TEST_CLOCK="${v}" is not <fake ms epoch>@<rate 1–1000, or 0 to stand still>@<real ms epoch>; unset it to use the real clock`);
  }
  return { fake: Number(m[1]), rate, real: Number(m[3]) };
}

function testClockFromEnv(): TestClock | null {
  try {
    return parseTestClock(process.env.GRIDSTEER_TEST_CLOCK);
  } catch (e) {
    // Every process reads its clock from here at start-up: one clear line, not a stack trace.
    process.stderr.write(`gridsteer: ${(e as Error).message}\n`);
    process.exit(2);
  }
}

const test = testClockFromEnv();

/** Now, ms epoch: the real clock, or the test clock when GRIDSTEER_TEST_CLOCK is set. */
export const now: () => number = test ? () => test.fake + (Date.now() - test.real) * test.rate : Date.now;

/** The longest timer Node keeps (a longer one fires at once). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** How many real ms a span of `ms` on this clock takes (for timers); on a clock that stands still, the longest timer. */
export function realMs(ms: number): number {
  if (!test) return ms;
  return test.rate === 0 ? MAX_TIMER_MS : Math.min(ms / test.rate, MAX_TIMER_MS);
}

/** True when the test clock is in use (logged at start-up). */
export const testClock: TestClock | null = test;

/**
 * Real-time timers, for work spaced in real time rather than on the process clock (the state
 * service's interval between plans: a CPU budget, the same under GRIDSTEER_TEST_CLOCK).
 * Tests pass their own, whose time moves only when the test moves it.
 */
export interface Timers {
  /** Monotonic ms. */
  now(): number;
  /** Calls `fn` once after `ms`; returns a handle for clear. */
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

export const realTimers: Timers = {
  now: () => performance.now(),
  set: (fn, ms) => setTimeout(fn, ms),
  clear: (h) => clearTimeout(h as NodeJS.Timeout),
};
