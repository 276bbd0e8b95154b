/**
 * A job's pages: open a job's page (its actions: re-run, cancel, delete), and open its
 * executed notebook read-only.
 */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { Notification } from '@jupyterlab/apputils';
import { notebookIcon } from '@jupyterlab/ui-components';

import { errorMessage, getJob } from '../api';
import { CommandIDs } from '../command-ids';
import { JobPage } from '../components/JobPage';
import { jobPageActions } from '../components/jobPageActions';
import { jobsIcon } from '../icons';
import { MainAreaWidgets } from '../main-area';
import { OutputView, outputHtmlPath } from '../output-view';
import { IJobNotifier, IJobsPanel, IPushChannel } from '../tokens';
import { IJob, isFinished } from '../types';

export const jobPagesPlugin: JupyterFrontEndPlugin<void> = {
  id: 'nbrunner:job-pages',
  description: "nbrunner job pages and jobs' executed notebooks, read-only.",
  autoStart: true,
  requires: [IPushChannel, IJobNotifier],
  optional: [IJobsPanel, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    channel: IPushChannel,
    notifier: IJobNotifier,
    jobs: IJobsPanel | null,
    restorer: ILayoutRestorer | null
  ) => {
    const { commands, shell } = app;
    const pages = new MainAreaWidgets<JobPage>(shell, {
      namespace: 'nbrunner-job-page',
      key: page => page.jobId,
      id: page => `nbrunner-job-page-widget-${page.jobId}`,
      icon: jobsIcon,
      className: 'nbrunner-JobPageWidget'
    });
    const outputs = new MainAreaWidgets<OutputView>(shell, {
      namespace: 'nbrunner-output',
      key: view => `${view.jobId}\n${view.path}`,
      id: view => `nbrunner-output-widget-${view.jobId}`,
      icon: notebookIcon,
      className: 'nbrunner-OutputWidget'
    });
    const openLog = (job: IJob) =>
      void commands.execute(CommandIDs.openLog, { id: job.id, name: job.name });

    const actions = jobPageActions({
      openLog,
      openOutput: job =>
        void commands.execute(CommandIDs.openOutput, {
          id: job.id,
          name: job.name,
          path: job.output ?? ''
        }),
      openJob: job => void commands.execute(CommandIDs.openJob, { id: job.id, name: job.name }),
      refreshJobs: () => {
        if (!channel.live) {
          jobs?.refresh(); // the channel brings the change otherwise
        }
      },
      submitted: job => notifier.watch(job),
      closeTabs: id => {
        pages.close(page => page.jobId === id);
        outputs.close(view => view.jobId === id);
      }
    });

    commands.addCommand(CommandIDs.openJob, {
      label: args => (args.name ? `Job ${args.name}` : 'Open job page'),
      caption: "Open an nbrunner job's page",
      icon: jobsIcon,
      execute: args => {
        const id = String(args.id ?? '');
        if (!id) {
          return;
        }
        const name = (args.name as string | undefined) ?? undefined;
        return pages.open(
          id,
          () => new JobPage({ channel, id, name, actions }),
          page => void page.refresh()
        );
      }
    });

    commands.addCommand(CommandIDs.openOutput, {
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
            path = isFinished(job.status) ? job.output ?? '' : '';
          }
          if (!path) {
            throw new Error('this job has no executed notebook yet');
          }
          const html = outputHtmlPath(path);
          const existing = outputs.find(`${id}\n${html}`);
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
                actions: [{ label: 'Show log', callback: () => openLog({ id, name: name || id } as IJob) }]
              }
            );
            return;
          }
          return outputs.add(content);
        } catch (error) {
          Notification.warning(
            `Cannot open the output of job ${name || id}: ${errorMessage(error)}`,
            { autoClose: 6000 }
          );
        }
      }
    });

    pages.restore(restorer, {
      command: CommandIDs.openJob,
      args: w => ({ id: w.content.jobId, name: w.content.jobName }),
      name: w => w.content.jobId
    });
    outputs.restore(restorer, {
      command: CommandIDs.openOutput,
      args: w => ({ id: w.content.jobId, name: w.content.jobName }),
      name: w => w.content.jobId
    });
  }
};
