/** The actions of a job's page: open its output or log, re-run, cancel, delete (each asks first
 * where it cannot be undone, and says what went wrong). */
import { Notification } from '@jupyterlab/apputils';

import { cancelJob, deleteJob, errorMessage } from '../api';
import { rerunWithDialog } from '../rerun';
import { IJob } from '../types';
import { confirmCancel } from './confirmCancel';
import { confirmDelete } from './confirmDelete';
import type { JobPage } from './JobPage';

export interface IJobPageHooks {
  openLog: (job: IJob) => void;
  openOutput: (job: IJob) => void;
  openJob: (job: IJob) => void;
  /** Refresh the Jobs panel (a job was created or deleted). */
  refreshJobs: () => void;
  /** A job was submitted from here (re-run): watch it for its notification. */
  submitted: (job: IJob) => void;
  /** Close the tabs of a deleted job. */
  closeTabs: (id: string) => void;
}

export function jobPageActions(hooks: IJobPageHooks): JobPage.IActions {
  return {
    openLog: job => hooks.openLog(job),
    openOutput: job => hooks.openOutput(job),
    rerun: async job => {
      try {
        const created = await rerunWithDialog(job);
        if (created) {
          hooks.submitted(created);
          hooks.refreshJobs();
          hooks.openJob(created);
        }
      } catch (error) {
        Notification.error(`Could not re-run job ${job.id}: ${errorMessage(error)}`, {
          autoClose: 8000
        });
      }
    },
    cancel: async job => {
      try {
        if (await confirmCancel(job)) {
          await cancelJob(job.id);
          hooks.refreshJobs();
        }
      } catch (error) {
        Notification.error(`Could not cancel job ${job.id}: ${errorMessage(error)}`, {
          autoClose: 8000
        });
      }
    },
    remove: async job => {
      if (!(await confirmDelete(job))) {
        return false;
      }
      try {
        await deleteJob(job.id);
      } catch (error) {
        Notification.error(`Could not delete job ${job.id}: ${errorMessage(error)}`, {
          autoClose: 8000
        });
        return false;
      }
      hooks.closeTabs(job.id);
      hooks.refreshJobs();
      return true;
    }
  };
}
