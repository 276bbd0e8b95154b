import { describe, expect, it } from 'vitest';

import {
  applyChange,
  EMPTY_QUERY,
  IJobQuery,
  matches,
  nextSort,
  pageLabel,
  pageParams,
  sortRows
} from '../src/job-table';
import { IJob } from '../src/types';
import { job } from './helpers';

const at = (s: number) => `2024-06-01T12:00:${String(s).padStart(2, '0')}.000Z`;
/** Jobs j<n> created at second n. */
const jobs = (...ns: number[]): IJob[] => ns.map(n => job({ id: `j${n}`, name: `run ${n}`, created_at: at(n) }));
const ids = (rows: IJob[]) => rows.map(r => r.id);
const query = (fields: Partial<IJobQuery> = {}): IJobQuery => ({ ...EMPTY_QUERY, limit: 3, ...fields });
const push = (record: IJob) => ({ record, deleted: false as const });

describe('pageParams', () => {
  it('sends the filters that are set, the order only when not the default, a bounded limit', () => {
    expect(pageParams(query({ status: 'running', q: ' lr ', owner: '' }))).toEqual({
      status: 'running',
      owner: undefined,
      schedule: undefined,
      sweep: undefined,
      q: 'lr',
      order: undefined,
      limit: 3,
      cursor: undefined,
      after: undefined
    });
    const p = pageParams({ ...EMPTY_QUERY, order: 'oldest', limit: 5000 }, { after: 'j9' });
    expect([p.order, p.limit, p.after, p.cursor]).toEqual(['oldest', 200, 'j9', undefined]);
    expect(pageParams(query(), { cursor: 'abc' }).cursor).toBe('abc');
  });
});

describe('matches', () => {
  it('checks each filter as the server does (name: any case, a part)', () => {
    const j = job({ status: 'failed', owner: 'ann', schedule: 's1', sweep: 'w1', name: 'Digits LR=0.1' });
    expect(matches(j, query({ status: 'failed', owner: 'ann', schedule: 's1', sweep: 'w1', q: 'lr=' }))).toBe(true);
    for (const miss of [{ status: 'running' }, { owner: 'bob' }, { schedule: 's2' }, { sweep: 'w2' }, { q: 'cifar' }]) {
      expect(matches(j, query(miss))).toBe(false);
    }
  });
});

describe('applyChange', () => {
  const page = { first: true, last: false };

  it('replaces a shown job, drops it once it no longer matches or is deleted', () => {
    const rows = jobs(9, 8, 7);
    const running = { ...rows[1], status: 'running' };
    expect(applyChange(rows, push(running), query(), page).rows[1]).toBe(running);
    expect(ids(applyChange(rows, push(running), query({ status: 'queued' }), page).rows)).toEqual(['j9', 'j7']);
    expect(ids(applyChange(rows, { id: 'j7', deleted: true }, query(), page).rows)).toEqual(['j9', 'j8']);
    expect(applyChange(rows, { id: 'zz', deleted: true }, query(), page).rows).toBe(rows);
  });

  it('puts a new job on top of the first page, keeping its size: the last row leaves', () => {
    const got = applyChange(jobs(9, 8, 7), push(jobs(10)[0]), query(), page);
    expect(ids(got.rows)).toEqual(['j10', 'j9', 'j8']);
    expect([got.trimmed, got.unseen]).toEqual([true, false]);
    const roomy = applyChange(jobs(9, 8), push(jobs(10)[0]), query(), page);
    expect([ids(roomy.rows), roomy.trimmed]).toEqual([['j10', 'j9', 'j8'], false]);
  });

  it('reports a job that belongs to another page as unseen, and ignores one that does not match', () => {
    const rows = jobs(6, 5, 4);
    const later = { first: false, last: false };
    expect(applyChange(rows, push(jobs(10)[0]), query(), later)).toEqual({ rows, unseen: true, trimmed: false });
    expect(applyChange(rows, push(jobs(2)[0]), query(), later).unseen).toBe(true);
    const between = applyChange(rows, push(jobs(5)[0] && job({ id: 'j5b', created_at: at(5) })), query(), later);
    expect(ids(between.rows)).toEqual(['j6', 'j5b', 'j5']); // same second: the larger id first
    expect(applyChange(rows, push({ ...jobs(10)[0], status: 'failed' }), query({ status: 'queued' }), page).rows).toBe(rows);
  });

  it('appends to the last page while it has room, and follows the oldest-first order', () => {
    expect(ids(applyChange(jobs(6, 5), push(jobs(2)[0]), query(), { first: false, last: true }).rows)).toEqual([
      'j6',
      'j5',
      'j2'
    ]);
    const oldest = applyChange(jobs(1, 2, 3), push(jobs(10)[0]), query({ order: 'oldest' }), page);
    expect(oldest.unseen).toBe(true); // newest jobs come last in that order
    expect(ids(applyChange(jobs(1, 3), push(jobs(2)[0]), query({ order: 'oldest' }), page).rows)).toEqual([
      'j1',
      'j2',
      'j3'
    ]);
  });
});

describe('sorting', () => {
  it('cycles ascending, descending, none (time columns start descending)', () => {
    let sort = nextSort({ column: null, descending: false }, 'name');
    expect(sort).toEqual({ column: 'name', descending: false });
    sort = nextSort(sort, 'name');
    expect(sort).toEqual({ column: 'name', descending: true });
    expect(nextSort(sort, 'name')).toEqual({ column: null, descending: false });
    expect(nextSort(sort, 'created')).toEqual({ column: 'created', descending: true });
    expect(nextSort({ column: 'created', descending: true }, 'created')).toEqual({ column: 'created', descending: false });
  });

  it('sorts the rows by a column, ties in the listing order', () => {
    const rows = [
      job({ id: 'a', name: 'b', priority: 5, gpus: 1, owner: 'Zed', metrics: { loss: 0.5 } }),
      job({ id: 'b', name: 'A', priority: 9, gpus: 1, owner: 'amy', metrics: { loss: 0.2 } }),
      job({ id: 'c', name: 'c', priority: 1, gpus: 2, owner: 'bob' })
    ];
    const by = (column: any, descending = false) => ids(sortRows(rows, { column, descending }));
    expect(by('name')).toEqual(['b', 'a', 'c']);
    expect(by('priority', true)).toEqual(['b', 'a', 'c']);
    expect(by('gpus')).toEqual(['a', 'b', 'c']);
    expect(by('owner')).toEqual(['b', 'c', 'a']);
    expect(by('metric')).toEqual(['c', 'b', 'a']); // no metric first
    expect(sortRows(rows, { column: null, descending: false })).toBe(rows);
    const timed = [
      job({ id: 'q' }),
      job({ id: 'r', started_at: at(0), finished_at: at(30) }),
      job({ id: 's', started_at: at(0), finished_at: at(5) })
    ];
    expect(ids(sortRows(timed, { column: 'duration', descending: true }))).toEqual(['r', 's', 'q']);
  });
});

describe('pageLabel', () => {
  it('names the rows shown', () => {
    expect(pageLabel(0, 50, 50)).toBe('Jobs 1–50');
    expect(pageLabel(2, 50, 7)).toBe('Jobs 101–107');
    expect(pageLabel(0, 50, 0)).toBe('No jobs');
    expect(pageLabel(1, 50, 0)).toBe('No more jobs');
  });
});
