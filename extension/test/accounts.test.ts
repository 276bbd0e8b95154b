import { describe, expect, it } from 'vitest';

import {
  accountBalance,
  accountRows,
  accountSeries,
  formatGpuHours,
  leafPaths,
  movesAccounts,
  reclaimNotes
} from '../src/accounts';
import { IAccount, IAccounts } from '../src/types';
import { job } from './helpers';

function account(path: string, fields: Partial<IAccount> = {}): IAccount {
  return {
    name: path.split('/').pop() as string,
    path,
    weight: 1,
    guaranteed: 0,
    limit: null,
    demand: 0,
    share: 0,
    held: 0,
    borrowed: 0,
    lent: 0,
    gpu_hours_24h: 0,
    gpu_hours_total: 0,
    ...fields
  };
}

function view(accounts: IAccount[], timeline: IAccounts['timeline'] = []): IAccounts {
  return { accounts, gpus_total: 8, policy: 'fairshare', source: 'accounts.yaml', timeline };
}

const T = (s: number) => new Date(Date.UTC(2024, 5, 1, 12, 0, s)).toISOString();

describe('accountRows', () => {
  it('shows each account as the table does, in the server order', () => {
    const rows = accountRows(
      view([
        account('vision', { weight: 3, guaranteed: 4, limit: 8, demand: 8, share: 6, held: 7, borrowed: 1, gpu_hours_24h: 1.23456, gpu_hours_total: 10 }),
        account('vision/detection', { weight: 0.5, held: 7 }),
        account('default', { share: 2, lent: 2 })
      ])
    );
    expect(rows.map(r => [r.path, r.name, r.depth])).toEqual([
      ['vision', 'vision', 0],
      ['vision/detection', 'detection', 1],
      ['default', 'default', 0]
    ]);
    expect(rows[0]).toMatchObject({
      weight: '3',
      guaranteed: '4',
      limit: '8',
      demand: 8,
      share: 6,
      held: 7,
      balance: '1 borrowed',
      balanceKind: 'borrowed',
      gpuHours24h: '1.23',
      gpuHoursTotal: '10.00'
    });
    expect(rows[1]).toMatchObject({ weight: '0.5', limit: '–', balance: '–', balanceKind: 'even' });
    expect(rows[2]).toMatchObject({ balance: '2 lent', balanceKind: 'lent' });
  });

  it('is empty without accounts, and skips rows without a path', () => {
    expect(accountRows(null)).toEqual([]);
    expect(accountRows(view([]))).toEqual([]);
    expect(accountRows({ accounts: 'x' } as unknown as IAccounts)).toEqual([]);
    const rows = accountRows(view([account('a'), { name: 'b' } as IAccount]));
    expect(rows.map(r => r.path)).toEqual(['a']);
  });

  it('reads missing numbers as zero', () => {
    const [row] = accountRows(view([{ path: 'a', name: '' } as IAccount]));
    expect(row).toMatchObject({ name: 'a', weight: '0', guaranteed: '0', demand: 0, held: 0, gpuHours24h: '0.00' });
  });
});

describe('accountBalance and formatGpuHours', () => {
  it('says what an account borrows or lends', () => {
    expect(accountBalance({ borrowed: 3, lent: 0 }).balance).toBe('3 borrowed');
    expect(accountBalance({ borrowed: 0, lent: 1 }).balance).toBe('1 lent');
    expect(accountBalance({ borrowed: 0, lent: 0 }).balance).toBe('–');
  });

  it('formats GPU-hours with two decimals', () => {
    expect(formatGpuHours(0)).toBe('0.00');
    expect(formatGpuHours(2.005e-3)).toBe('0.00');
    expect(formatGpuHours(12.3456)).toBe('12.35');
    expect(formatGpuHours(undefined)).toBe('0.00');
  });
});

describe('leafPaths', () => {
  it('keeps the accounts no other one is under', () => {
    expect(leafPaths(['research', 'research/vision', 'research/nlp', 'ops', 'default'])).toEqual([
      'research/vision',
      'research/nlp',
      'ops',
      'default'
    ]);
    expect(leafPaths(['a', 'ab', 'a'])).toEqual(['a', 'ab']);
  });
});

describe('accountSeries', () => {
  it('gives each leaf account its GPUs at each change, in the table order', () => {
    const series = accountSeries(
      view(
        [account('research'), account('research/vision'), account('ops'), account('default')],
        [
          { t: T(0), gpus: { research: 0, 'research/vision': 2, ops: 0, default: 0 } },
          { t: T(5), gpus: { research: 0, 'research/vision': 6, ops: 2, default: 0 } },
          { t: T(9), gpus: { research: 0, 'research/vision': 6, ops: 0, default: 0 } }
        ]
      )
    );
    expect(series).toEqual([
      {
        id: 'research/vision',
        name: 'research/vision',
        points: [
          { t: T(0), gpus: 2 },
          { t: T(5), gpus: 6 }
        ]
      },
      {
        id: 'ops',
        name: 'ops',
        points: [
          { t: T(0), gpus: 0 },
          { t: T(5), gpus: 2 },
          { t: T(9), gpus: 0 }
        ]
      }
    ]);
  });

  it('keeps an account only the timeline knows, after the table, and one missing from a change at 0', () => {
    const series = accountSeries(
      view(
        [account('b')],
        [
          { t: T(0), gpus: { old: 3, b: 1 } },
          { t: T(1), gpus: { b: 2 } }
        ]
      )
    );
    expect(series.map(s => [s.id, s.points.map(p => p.gpus)])).toEqual([
      ['b', [1, 2]],
      ['old', [3, 0]]
    ]);
  });

  it('is empty without a timeline or with bad entries', () => {
    expect(accountSeries(view([account('a')]))).toEqual([]);
    expect(accountSeries(null)).toEqual([]);
    const bad = view([account('a')], [null, { t: 5, gpus: { a: 1 } }, { t: T(0) }] as unknown as IAccounts['timeline']);
    expect(accountSeries(bad)).toEqual([]);
  });
});

describe('movesAccounts', () => {
  it('is true for a job not seen before or whose status changed, not for progress', () => {
    expect(movesAccounts(undefined, job({ status: 'queued' }))).toBe(true);
    expect(movesAccounts('queued', job({ status: 'running' }))).toBe(true);
    expect(movesAccounts('running', job({ status: 'completed' }))).toBe(true);
    expect(movesAccounts('running', job({ status: 'running', progress: 0.5 }))).toBe(false);
  });
});

describe('reclaimNotes', () => {
  const queued = (s: number, reason?: string) => ({ status: 'queued', at: T(s), ...(reason ? { reason } : {}) });
  const running = (s: number) => ({ status: 'running', at: T(s) });

  it('says nothing for a job that never lost GPUs', () => {
    expect(reclaimNotes(job({ history: [queued(0), running(1)] }))).toEqual([]);
    expect(reclaimNotes(job({ history: null, reclaimed: null }))).toEqual([]);
    expect(reclaimNotes(job({ reclaimed: '  ' }))).toEqual([]);
  });

  it('says a running job was shrunk, and why', () => {
    const notes = reclaimNotes(job({ history: [queued(0), running(1)], reclaimed: 'reclaimed by account vision' }));
    expect(notes).toEqual([{ kind: 'shrunk', text: 'Shrunk: reclaimed by account vision' }]);
  });

  it('says a job was re-queued, and why, once for its reason', () => {
    const history = [queued(0), running(1), queued(5, 'reclaimed by account vision'), running(9)];
    expect(reclaimNotes(job({ history, reclaimed: 'reclaimed by account vision' }))).toEqual([
      { kind: 'requeued', text: 'Re-queued: reclaimed by account vision' }
    ]);
  });

  it('counts the re-queues of one reason, and names other reasons apart', () => {
    const history = [
      queued(0),
      running(1),
      queued(2, 'worker lost'),
      running(3),
      queued(4, 'reclaimed by account a'),
      running(5),
      queued(6, 'reclaimed by account a')
    ];
    expect(reclaimNotes(job({ history, reclaimed: 'reclaimed by account a' })).map(n => n.text)).toEqual([
      'Re-queued: worker lost',
      'Re-queued (2 times): reclaimed by account a'
    ]);
  });

  it('says it was shrunk for another reason after its last re-queue', () => {
    const history = [queued(0), running(1), queued(2, 'reclaimed by account a'), running(3)];
    expect(reclaimNotes(job({ history, reclaimed: 'reclaimed by account b' }))).toEqual([
      { kind: 'requeued', text: 'Re-queued: reclaimed by account a' },
      { kind: 'shrunk', text: 'Shrunk: reclaimed by account b' }
    ]);
  });
});
