import { beforeEach, describe, expect, it, vi } from 'vitest';

import { IJob, IJobList } from '../src/types';
import { job } from './helpers';

const answers: Array<(params: any) => IJobList> = [];
const asked: any[] = [];
let release: (() => void) | null = null;

vi.mock('../src/api', () => ({
  listJobsPage: async (params: any) => {
    asked.push(params);
    if (release === null) {
      await new Promise<void>(resolve => (release = resolve));
    }
    return answers.shift()!(params);
  }
}));

const { JobListing } = await import('../src/job-listing');

const at = (s: number) => `2024-06-01T12:00:${String(s).padStart(2, '0')}.000Z`;
const j = (n: number, fields: Partial<IJob> = {}) => job({ id: `j${n}`, created_at: at(n), ...fields });
const ids = (rows: IJob[] | null) => (rows ?? []).map(r => r.id);

beforeEach(() => {
  answers.length = 0;
  asked.length = 0;
  release = () => undefined; // answer at once unless a test holds the answer back
});

describe('JobListing', () => {
  it('applies a change that arrives during a read after the read, never under it', async () => {
    const listing = new JobListing();
    listing.setQuery({ limit: 3 });
    release = null;
    answers.push(() => ({ jobs: [j(9), j(8)], next: null }));
    const reading = listing.read();
    await Promise.resolve();
    expect(listing.apply({ record: j(9, { status: 'running' }), deleted: false })).toBe(false); // held
    release!();
    await reading;
    expect(listing.rows![0].status).toBe('running');
    expect(ids(listing.rows)).toEqual(['j9', 'j8']);
  });

  it('pages with the server cursor, or after the last row once pushed rows moved others out', async () => {
    const listing = new JobListing();
    listing.setQuery({ limit: 2 });
    answers.push(() => ({ jobs: [j(9), j(8)], next: 'c1' }));
    await listing.read();
    expect(listing.hasNewer).toBe(false);
    expect(listing.older()).toBe(true);
    answers.push(() => ({ jobs: [j(7), j(6)], next: 'c2' }));
    await listing.read();
    expect(asked[1].cursor).toBe('c1');
    expect(listing.index).toBe(1);
    listing.newer();
    answers.push(() => ({ jobs: [j(9), j(8)], next: 'c1' }));
    await listing.read();
    expect(listing.apply({ record: j(10), deleted: false })).toBe(true);
    expect(ids(listing.rows)).toEqual(['j10', 'j9']); // j8 left the page
    listing.older();
    answers.push(() => ({ jobs: [j(8), j(7)], next: 'c3' }));
    await listing.read();
    expect([asked[3].after, asked[3].cursor]).toEqual(['j9', undefined]);
    expect(listing.apply({ record: j(11), deleted: false })).toBe(true); // not on this page: counted
    expect(listing.unseen).toBe(1);
    expect(listing.apply({ record: j(11, { status: 'running' }), deleted: false })).toBe(true);
    expect(listing.unseen).toBe(1); // one job, however many changes
    listing.first();
    answers.push(() => ({ jobs: [j(11), j(10)], next: 'c4' }));
    await listing.read();
    expect([listing.index, listing.unseen, asked[4].cursor, asked[4].after]).toEqual([0, 0, undefined, undefined]);
  });
});
