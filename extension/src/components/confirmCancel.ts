/** Ask before cancelling a running job (its work so far is lost). */
import { IJob } from '../types';
import { confirmDanger } from './confirmDanger';

/** Jobs the user chose to cancel in this browser (no "was cancelled" notification). */
export const cancelledHere = new Set<string>();

export async function confirmCancel(job: IJob): Promise<boolean> {
  if (job.status !== 'running') {
    cancelledHere.add(job.id);
    return true; // a queued job has done nothing yet
  }
  const yes = await confirmDanger({
    title: `Cancel job ${job.name}?`,
    body: `Job ${job.id} is running. Cancelling stops it now; what it has not saved is lost.`,
    keep: 'Keep running',
    yes: 'Cancel job',
    className: 'nbrunner-CancelConfirm',
    testid: 'nbrunner-cancel-confirm',
    dataset: { jobId: job.id }
  });
  if (yes) {
    cancelledHere.add(job.id);
  }
  return yes;
}
