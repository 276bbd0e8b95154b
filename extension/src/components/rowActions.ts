/**
 * What a job row's controls do, wherever the row is (the Jobs table, a schedule's runs): cancel
 * (a running job asks first) and change the priority, a failure said in a notification.
 */
import { Notification } from '@jupyterlab/apputils';

import { cancelJob, errorMessage, setPriority } from '../api';
import { IJob } from '../types';
import { confirmCancel } from './confirmCancel';

/** Cancel `job` once the user confirms; the job as the server answers, or null. */
export async function cancelAfterConfirming(job: IJob): Promise<IJob | null> {
  try {
    if (await confirmCancel(job)) {
      const updated = await cancelJob(job.id);
      return updated?.id ? updated : null;
    }
  } catch (error) {
    Notification.error(`Could not cancel job ${job.id}: ${errorMessage(error)}`, { autoClose: 8000 });
  }
  return null;
}

/** Change `job`'s priority; the job as it is now, or null if the server refused. */
export async function changePriority(job: IJob, priority: number): Promise<IJob | null> {
  try {
    const updated = await setPriority(job.id, priority);
    return updated?.id ? updated : { ...job, priority };
  } catch (error) {
    Notification.error(`Could not change the priority of job ${job.id}: ${errorMessage(error)}`, {
      autoClose: 8000
    });
    return null;
  }
}
