import { describe, expect, it } from 'vitest';

import { trialKey } from '../src/components/Leaderboard';
import { sweepSummary } from '../src/components/SweepGroup';
import { ILeaderboardEntry, ISweep } from '../src/types';
import { job } from './helpers';

const entry = (fields: Partial<ILeaderboardEntry>): ILeaderboardEntry => ({
  rank: null,
  job: null,
  parameters: null,
  objective: null,
  status: 'pending',
  ...fields
});

describe('sweepSummary', () => {
  const jobs = [
    job({ id: 'a', status: 'running' }),
    job({ id: 'b', status: 'queued' }),
    job({ id: 'c', status: 'running' })
  ];

  it("counts the listed trials' statuses while the sweep is unknown", () => {
    expect(sweepSummary(jobs, null)).toBe('3 trials: 2 running, 1 queued');
    expect(sweepSummary(jobs.slice(0, 1), null)).toBe('1 trial: 1 running');
  });

  it('counts the planned trials once the sweep is known', () => {
    const sweep: ISweep = {
      id: 's',
      jobs: ['a'],
      leaderboard: [
        entry({ job: 'a', status: 'completed', rank: 1 }),
        entry({ status: 'pending' }),
        entry({ status: 'pending' })
      ]
    };
    expect(sweepSummary(jobs, sweep)).toBe('3 trials: 1 completed, 2 pending');
  });
});

describe('trialKey', () => {
  it('is stable for a trial: its index, else its job, else its row', () => {
    expect(trialKey(entry({ trial: 4, job: 'x' }), 0)).toBe('trial-4');
    expect(trialKey(entry({ job: 'x' }), 0)).toBe('job-x');
    expect(trialKey(entry({}), 2)).toBe('pending-2');
  });
});
