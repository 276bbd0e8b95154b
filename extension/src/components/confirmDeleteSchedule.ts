/** Ask before deleting a schedule (its runs stay; no new ones start). */
import { Dialog } from '@jupyterlab/apputils';

import { ISchedule } from '../types';

export async function confirmDeleteSchedule(schedule: ISchedule): Promise<boolean> {
  const dialog = new Dialog({
    title: `Delete schedule ${schedule.name}?`,
    body:
      `Schedule ${schedule.id} runs ${schedule.notebook}. Deleting it starts no more ` +
      'runs; the jobs it already ran stay in the Jobs panel.',
    buttons: [
      Dialog.cancelButton({
        label: 'Keep',
        className: 'nbrunner-DeleteSchedule-keep'
      }),
      Dialog.warnButton({
        label: 'Delete schedule',
        className: 'nbrunner-DeleteSchedule-yes'
      })
    ],
    defaultButton: 0
  });
  dialog.addClass('nbrunner-DeleteSchedule');
  dialog.node.dataset.testid = 'nbrunner-delete-schedule-confirm';
  dialog.node
    .querySelector('.nbrunner-DeleteSchedule-yes')
    ?.setAttribute('data-testid', 'nbrunner-delete-schedule-yes');
  dialog.node
    .querySelector('.nbrunner-DeleteSchedule-keep')
    ?.setAttribute('data-testid', 'nbrunner-delete-schedule-keep');
  const result = await dialog.launch();
  return result.button.accept;
}
