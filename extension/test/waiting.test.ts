import { describe, expect, it } from 'vitest';

import { outlookLine, WAITING_LABELS, waitingLabel } from '../src/waiting';
import { at, job } from './helpers';

const NOW = at('2026-01-01T10:00:00Z');
const BUSY = { code: 'gpus_busy', message: 'needs 4 GPUs; the 2 jobs ahead of it need 6 of the 8' };

describe('waitingLabel', () => {
  it('gives a queued job its short label and the message with the expected start on hover', () => {
    const got = waitingLabel(job({ waiting: BUSY, expected_start: '2026-01-01T10:03:00Z' }), NOW);
    expect(got).toEqual({
      code: 'gpus_busy',
      label: 'GPUs busy',
      title: 'needs 4 GPUs; the 2 jobs ahead of it need 6 of the 8. Expected to start in 3 min.'
    });
  });

  it('says nothing for a job that is not queued, or has no reason', () => {
    expect(waitingLabel(job({ status: 'running', waiting: BUSY }), NOW)).toBeNull();
    expect(waitingLabel(job({ waiting: null }), NOW)).toBeNull();
    expect(waitingLabel(job({}), NOW)).toBeNull();
  });

  it('has a label for every code, and a readable one for a code it does not know', () => {
    for (const code of ['capacity', 'no_workers', 'gpus_busy', 'account_limit', 'account_share', 'reclaiming', 'needs']) {
      expect(WAITING_LABELS[code]).toBeTruthy();
      expect(WAITING_LABELS[code].length).toBeLessThanOrEqual(11); // fits under the status badge
    }
    expect(waitingLabel(job({ waiting: { code: 'new_code', message: 'm' } }), NOW)!.label).toBe('new code');
  });
});

describe('outlookLine', () => {
  it('says why a queued job waits and when it should start and end', () => {
    const line = outlookLine(
      job({ waiting: BUSY, expected_start: '2026-01-01T10:03:00Z', expected_end: '2026-01-01T10:13:00Z' }),
      NOW
    );
    expect(line).toBe(
      'Waiting (GPUs busy): needs 4 GPUs; the 2 jobs ahead of it need 6 of the 8. ' +
        'Expected to start in 3 min, to end in 13 min.'
    );
  });

  it('gives a running job its expected end only, and nothing when nothing is known', () => {
    expect(outlookLine(job({ status: 'running', expected_end: '2026-01-01T10:00:30Z' }), NOW)).toBe(
      'Expected to end in 30s.'
    );
    expect(outlookLine(job({ status: 'running' }), NOW)).toBeNull();
    expect(outlookLine(job({ status: 'completed', expected_end: '2026-01-01T10:00:30Z' }), NOW)).toBeNull();
    expect(outlookLine(job({ waiting: BUSY }), NOW)).toBe(
      'Waiting (GPUs busy): needs 4 GPUs; the 2 jobs ahead of it need 6 of the 8.'
    );
  });
});
