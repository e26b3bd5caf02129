/**
 * The collector registry: one import and one line per collector (issue 5 adds them).
 */
import type { Collector } from './types.js';

export const collectors: readonly Collector[] = [];
