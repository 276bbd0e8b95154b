import { IJob } from '../types';
import { confirmDanger } from './confirmDanger';

/** Ask before deleting a finished job's record and directory. */
export function confirmDelete(job: IJob): Promise<boolean> {
  return confirmDanger({
    title: `Delete job ${job.name}?`,
    body:
      `Job ${job.id} and its directory (executed notebook, HTML, logs, metrics, ` +
      'model) are removed for good.',
    keep: 'Keep',
    yes: 'Delete',
    className: 'nbrunner-DeleteConfirm',
    testid: 'nbrunner-delete-confirm'
  });
}
