/**
 * A liveness bound: awaits `p`, or fails naming `what` after `ms`. It keeps a test from hanging
 * when the code under test never settles (a stop() that does not abort, a timeout that does not
 * fire); it is never a performance threshold. Choose `ms` far above what the awaited work needs
 * on a loaded 2-core machine, and make the wrong behaviour take longer still (e.g. a fetch whose
 * own timeout is twice the bound, so that only an abort can end it in time).
 */
export async function live<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not settled within the liveness bound of ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, bound]);
  } finally {
    clearTimeout(timer);
  }
}
