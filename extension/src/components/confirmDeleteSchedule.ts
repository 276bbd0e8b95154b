/** Ask before deleting a schedule (its runs stay; no new ones start). */
import { ISchedule } from '../types';
import { confirmDanger } from './confirmDanger';

export function confirmDeleteSchedule(schedule: ISchedule): Promise<boolean> {
  return confirmDanger({
    title: `Delete schedule ${schedule.name}?`,
    body:
      `Schedule ${schedule.id} runs ${schedule.notebook}. Deleting it starts no more ` +
      'runs; the jobs it already ran stay in the Jobs panel.',
    keep: 'Keep',
    yes: 'Delete schedule',
    className: 'nbrunner-DeleteSchedule',
    testid: 'nbrunner-delete-schedule-confirm',
    buttonTestid: 'nbrunner-delete-schedule'
  });
}
