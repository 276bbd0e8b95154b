/** Ask before cancelling a running job (its work so far is lost). */
import { Dialog } from '@jupyterlab/apputils';

import { IJob } from '../types';

/** Jobs the user chose to cancel in this browser (no "was cancelled" notification). */
export const cancelledHere = new Set<string>();

export async function confirmCancel(job: IJob): Promise<boolean> {
  if (job.status !== 'running') {
    cancelledHere.add(job.id);
    return true; // a queued job has done nothing yet
  }
  const dialog = new Dialog({
    title: `Cancel job ${job.name}?`,
    body: `Job ${job.id} is running. Cancelling stops it now; what it has not saved is lost.`,
    buttons: [
      Dialog.cancelButton({
        label: 'Keep running',
        className: 'nbrunner-CancelConfirm-keep'
      }),
      Dialog.warnButton({
        label: 'Cancel job',
        className: 'nbrunner-CancelConfirm-yes'
      })
    ],
    defaultButton: 0
  });
  dialog.addClass('nbrunner-CancelConfirm');
  dialog.node.dataset.testid = 'nbrunner-cancel-confirm';
  dialog.node.dataset.jobId = job.id;
  dialog.node
    .querySelector('.nbrunner-CancelConfirm-yes')
    ?.setAttribute('data-testid', 'nbrunner-cancel-confirm-yes');
  dialog.node
    .querySelector('.nbrunner-CancelConfirm-keep')
    ?.setAttribute('data-testid', 'nbrunner-cancel-confirm-keep');
  const result = await dialog.launch();
  if (result.button.accept) {
    cancelledHere.add(job.id);
  }
  return result.button.accept;
}
