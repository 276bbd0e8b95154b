import { describe, expect, it } from 'vitest';

import { groupJobs, newestFirst, sortModels } from '../src/ordering';
import { IModel } from '../src/types';
import { job } from './helpers';

const t = (minute: number) => `2024-06-01T12:${String(minute).padStart(2, '0')}:00Z`;

describe('newestFirst', () => {
  it('sorts by creation time, newest first, ties by id, undated last', () => {
    const jobs = [
      job({ id: 'a', created_at: t(1) }),
      job({ id: 'b', created_at: t(3) }),
      job({ id: 'c', created_at: null }),
      job({ id: 'd', created_at: t(3) }),
      job({ id: 'e', created_at: t(2) })
    ];
    expect(newestFirst(jobs).map(j => j.id)).toEqual(['d', 'b', 'e', 'a', 'c']);
    expect(jobs.map(j => j.id)).toEqual(['a', 'b', 'c', 'd', 'e']);
  });
});

describe('groupJobs', () => {
  it("groups a sweep's trials where its newest trial is", () => {
    const jobs = [
      job({ id: 'j1', created_at: t(1) }),
      job({ id: 's1a', created_at: t(2), sweep: 's1' }),
      job({ id: 'j2', created_at: t(3) }),
      job({ id: 's1b', created_at: t(4), sweep: 's1' }),
      job({ id: 's2a', created_at: t(5), sweep: 's2' })
    ];
    const entries = groupJobs(jobs).map(e =>
      e.kind === 'job' ? e.job.id : `${e.id}:${e.jobs.map(j => j.id).join(',')}`
    );
    expect(entries).toEqual(['s2:s2a', 's1:s1b,s1a', 'j2', 'j1']);
  });

  it('is empty for no jobs', () => {
    expect(groupJobs([])).toEqual([]);
  });
});

describe('sortModels', () => {
  it('sorts by name, newest version first', () => {
    const model = (name: string, version: number): IModel => ({
      name,
      version,
      job: null,
      created_at: null,
      path: '',
      framework: null,
      class_name: null,
      saved_at: null
    });
    const sorted = sortModels([model('b', 1), model('a', 1), model('b', 3), model('a', 2)]);
    expect(sorted.map(m => `${m.name}:${m.version}`)).toEqual(['a:2', 'a:1', 'b:3', 'b:1']);
  });
});
