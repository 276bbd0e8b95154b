/**
 * The orders the views list records in: jobs newest first (a sweep's trials grouped where
 * its newest trial is), models by name with the newest version first.
 */
import { parseTime } from './format';
import { IJob, IModel } from './types';

/** Jobs by creation time, newest first (ties: the larger id first). */
export function newestFirst(jobs: IJob[]): IJob[] {
  return jobs
    .slice()
    .sort(
      (a, b) =>
        (parseTime(b.created_at) ?? 0) - (parseTime(a.created_at) ?? 0) ||
        (a.id < b.id ? 1 : -1)
    );
}

/** A row of the Jobs panel: one job, or the trials of one sweep. */
export type JobEntry =
  | { kind: 'job'; job: IJob }
  | { kind: 'sweep'; id: string; jobs: IJob[] };

/** Jobs newest first, the trials of a sweep grouped where its newest trial is. */
export function groupJobs(jobs: IJob[]): JobEntry[] {
  const entries: JobEntry[] = [];
  const groups = new Map<string, IJob[]>();
  for (const job of newestFirst(jobs)) {
    if (job.sweep) {
      let group = groups.get(job.sweep);
      if (!group) {
        group = [];
        groups.set(job.sweep, group);
        entries.push({ kind: 'sweep', id: job.sweep, jobs: group });
      }
      group.push(job);
    } else {
      entries.push({ kind: 'job', job });
    }
  }
  return entries;
}

/** Models by name, newest version first within a name. */
export function sortModels(models: IModel[]): IModel[] {
  return models
    .slice()
    .sort((a, b) => (a.name === b.name ? b.version - a.version : a.name < b.name ? -1 : 1));
}
