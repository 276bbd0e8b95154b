/** Records for the unit tests. */
import { IJob } from '../src/types';

/** A job record with the given fields over plain defaults. */
export function job(fields: Partial<IJob> = {}): IJob {
  return {
    id: 'j1',
    name: 'train',
    notebook: 'train.ipynb',
    parameters: {},
    status: 'queued',
    priority: 5000,
    min_gpus: 0,
    max_gpus: 0,
    gpus: 0,
    ...fields
  };
}

/** Milliseconds of an ISO time in UTC. */
export const at = (iso: string): number => Date.parse(iso);
