import { describe, expect, it } from 'vitest';

import {
  CANCELLABLE_STATUSES,
  DEFAULT_PRIORITY,
  FINISHED_STATUSES,
  MAX_PRIORITY,
  MIN_PRIORITY,
  MODEL_NAME_RE,
  STATUSES
} from '../src/constants';

describe('constants', () => {
  it('split the statuses into cancellable and finished ones', () => {
    expect([...CANCELLABLE_STATUSES, ...FINISHED_STATUSES].sort()).toEqual([...STATUSES].sort());
    expect(CANCELLABLE_STATUSES.filter(s => FINISHED_STATUSES.includes(s))).toEqual([]);
  });

  it('keep the default priority within the bounds', () => {
    expect(MIN_PRIORITY).toBeLessThanOrEqual(DEFAULT_PRIORITY);
    expect(DEFAULT_PRIORITY).toBeLessThanOrEqual(MAX_PRIORITY);
  });

  it('accept model names of up to 64 characters starting with a letter or digit', () => {
    expect(['digits', 'm.v2_x-1', 'a'.repeat(64)].every(n => MODEL_NAME_RE.test(n))).toBe(true);
    expect(['', '-x', '.x', 'a b', 'a/b', 'a'.repeat(65)].some(n => MODEL_NAME_RE.test(n))).toBe(
      false
    );
  });
});
