/**
 * Commands of a job's pages: open a job's page, open its output read-only, and the
 * page's actions (re-run, cancel, delete).
 */
import { ILayoutRestorer, JupyterFrontEnd } from '@jupyterlab/application';
import { MainAreaWidget, Notification, WidgetTracker } from '@jupyterlab/apputils';

import { notebookIcon } from '@jupyterlab/ui-components';

import { cancelJob, deleteJob, errorMessage, getJob } from './api';
import { PushChannel } from './channel';
import { confirmCancel } from './components/confirmCancel';
import { confirmDanger } from './components/confirmDanger';
import { JobPage } from './components/JobPage';
import { jobsIcon } from './icons';
import { OutputView, outputHtmlPath } from './output-view';
import { rerunWithDialog } from './rerun';
import { IJob, isFinished } from './types';
import { wrapInMainArea } from './main-area';

export namespace JobPageCommandIDs {
  export const openJob = 'nbrunner:open-job';
  export const openOutput = 'nbrunner:open-output';
}

export interface IJobPagesOptions {
  channel: PushChannel;
  openLog: (job: IJob) => void;
  /** Refresh the Jobs panel (a job was created or deleted). */
  refreshJobs: () => void;
  /** A job was submitted from here (re-run): watch it for its notification. */
  submitted: (job: IJob) => void;
}

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

export function activateJobPages(
  app: JupyterFrontEnd,
  restorer: ILayoutRestorer | null,
  options: IJobPagesOptions
): void {
  const { commands, shell } = app;
  const pages = new WidgetTracker<MainAreaWidget<JobPage>>({
    namespace: 'nbrunner-job-page'
  });
  const outputs = new WidgetTracker<MainAreaWidget<OutputView>>({
    namespace: 'nbrunner-output'
  });

  const closeAll = (id: string) => {
    pages.filter(w => w.content.jobId === id).forEach(w => w.dispose());
    outputs.filter(w => w.content.jobId === id).forEach(w => w.dispose());
  };

  const actions: JobPage.IActions = {
    openLog: job => options.openLog(job),
    openOutput: job =>
      void commands.execute(JobPageCommandIDs.openOutput, {
        id: job.id,
        name: job.name,
        path: job.output ?? ''
      }),
    rerun: async job => {
      try {
        const created = await rerunWithDialog(job);
        if (created) {
          options.submitted(created);
          options.refreshJobs();
          void commands.execute(JobPageCommandIDs.openJob, {
            id: created.id,
            name: created.name
          });
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
          options.refreshJobs();
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
      closeAll(job.id);
      options.refreshJobs();
      return true;
    }
  };

  commands.addCommand(JobPageCommandIDs.openJob, {
    label: args => (args.name ? `Job ${args.name}` : 'Open job page'),
    caption: "Open an nbrunner job's page",
    icon: jobsIcon,
    execute: args => {
      const id = String(args.id ?? '');
      if (!id) {
        return;
      }
      const existing = pages.find(w => w.content.jobId === id);
      if (existing) {
        shell.activateById(existing.id);
        void existing.content.refresh();
        return existing;
      }
      const content = new JobPage({
        channel: options.channel,
        id,
        name: (args.name as string | undefined) ?? undefined,
        actions
      });
      const widget = wrapInMainArea(content, `nbrunner-job-page-widget-${id}`, {
        icon: jobsIcon,
        className: 'nbrunner-JobPageWidget'
      });
      void pages.add(widget);
      shell.add(widget, 'main');
      shell.activateById(widget.id);
      return widget;
    }
  });

  commands.addCommand(JobPageCommandIDs.openOutput, {
    label: 'Open executed notebook (read-only)',
    caption: 'Open the executed notebook of an nbrunner job, read-only, without a kernel',
    execute: async args => {
      const id = String(args.id ?? '');
      let name = String(args.name ?? '');
      let path = String(args.path ?? '');
      try {
        if (id && (!path || !name)) {
          const job = await getJob(id);
          name = job.name;
          path = job.output ?? '';
          if (!isFinished(job.status)) {
            path = '';
          }
        }
        if (!path) {
          throw new Error('this job has no executed notebook yet');
        }
        const html = outputHtmlPath(path);
        const existing = outputs.find(w => w.content.jobId === id && w.content.path === html);
        if (existing) {
          shell.activateById(existing.id);
          return existing;
        }
        const content = new OutputView({ id, name: name || id, path: html });
        try {
          await content.load(app.serviceManager.contents);
        } catch {
          content.dispose();
          Notification.info(
            `The output of job ${name || id} can be viewed once the job has ended ` +
              '(its HTML is written then).',
            {
              autoClose: 8000,
              actions: [
                {
                  label: 'Show log',
                  callback: () =>
                    options.openLog({ id, name: name || id } as IJob)
                }
              ]
            }
          );
          return;
        }
        const widget = wrapInMainArea(content, `nbrunner-output-widget-${id}`, {
          icon: notebookIcon,
          className: 'nbrunner-OutputWidget'
        });
        void outputs.add(widget);
        shell.add(widget, 'main');
        shell.activateById(widget.id);
        return widget;
      } catch (error) {
        Notification.warning(
          `Cannot open the output of job ${name || id}: ${errorMessage(error)}`,
          { autoClose: 6000 }
        );
      }
    }
  });

  if (restorer) {
    void restorer.restore(pages, {
      command: JobPageCommandIDs.openJob,
      args: w => ({ id: w.content.jobId, name: w.content.jobName }),
      name: w => w.content.jobId
    });
    void restorer.restore(outputs, {
      command: JobPageCommandIDs.openOutput,
      args: w => ({ id: w.content.jobId, name: w.content.jobName }),
      name: w => w.content.jobId
    });
  }
}
