/**
 * A server's test clock as the tests see it (GRIDSTEER_TEST_CLOCK, gslb/platform/clock.ts):
 * `fake0` at the real instant the helper is made, running `rate` times as fast.
 */
export interface TestClock {
  rate: number;
  /** The test clock's ms epoch now. */
  now(): number;
  /** The GRIDSTEER_TEST_CLOCK value that gives a server this clock. */
  env: string;
}

export function testClock(fake0: number, rate: number): TestClock {
  const real0 = Date.now();
  return { rate, now: () => fake0 + (Date.now() - real0) * rate, env: `${fake0}@${rate}@${real0}` };
}
