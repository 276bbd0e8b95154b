/**
 * nbrunner's JupyterLab extension: "Run as job" (notebook toolbar, file browser
 * context menu, command palette), the Jobs side panel, job logs and the
 * cluster view.
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import {
  ICommandPalette,
  MainAreaWidget,
  Notification,
  ToolbarButton,
  WidgetTracker
} from '@jupyterlab/apputils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { DocumentRegistry } from '@jupyterlab/docregistry';
import { IDefaultFileBrowser, IFileBrowserFactory } from '@jupyterlab/filebrowser';
import {
  INotebookModel,
  INotebookTracker,
  NotebookPanel
} from '@jupyterlab/notebook';
import { ReadonlyPartialJSONObject } from '@lumino/coreutils';
import { DisposableDelegate, IDisposable } from '@lumino/disposable';

import { sharedChannel } from './channel';
import { ClusterView } from './components/ClusterView';
import { clusterIcon, jobsIcon, logIcon, runJobIcon } from './icons';
import { JobsPanel } from './components/JobsPanel';
import { activateJobPages, JobPageCommandIDs } from './job-pages';
import { JobLogView } from './log-view';
import { addModelsPanel } from './models-plugin';
import { Created, runAsJob } from './run-as-job';
import { pipelinesPlugin } from './pipelines-plugin';
import { schedulesPlugin, ScheduleCommandIDs } from './schedules-plugin';
import { notificationsPlugin, NotifyCommandIDs } from './notifications-plugin';
import { JobNotifier } from './notifier';
import { IJob } from './types';
import { showInMainArea, wrapInMainArea } from './main-area';

export namespace CommandIDs {
  export const runAsJob = 'nbrunner:run-as-job';
  export const openJobs = 'nbrunner:open-jobs';
  export const openJobsTable = 'nbrunner:open-jobs-table';
  export const openCluster = 'nbrunner:open-cluster';
  export const openLog = 'nbrunner:open-log';
  export const openOutput = 'nbrunner:open-output';
}

const PLUGIN_ID = 'nbrunner:plugin';

/** Selector of notebooks in the file browser listing. */
const NOTEBOOK_ITEM_SELECTOR = '.jp-DirListing-item[data-file-type="notebook"]';

/**
 * Adds the "Run as job" button to every notebook's toolbar.
 */
class RunAsJobButtonExtension
  implements DocumentRegistry.IWidgetExtension<NotebookPanel, INotebookModel>
{
  constructor(private _run: (panel: NotebookPanel) => void) {}

  createNew(panel: NotebookPanel): IDisposable {
    const button = new ToolbarButton({
      className: 'nbrunner-RunButton',
      icon: runJobIcon,
      label: 'Run as job',
      tooltip: 'Run this notebook as an nbrunner job (saves it first)',
      dataset: { testid: 'nbrunner-run-as-job', command: CommandIDs.runAsJob },
      onClick: () => this._run(panel)
    });
    button.addClass('nbrunner-RunButtonItem');
    panel.toolbar.insertItem(10, 'nbrunner-run-as-job', button);
    return new DisposableDelegate(() => button.dispose());
  }
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description:
    'Run parameterized notebooks as nbrunner jobs; Jobs panel, logs and cluster view.',
  autoStart: true,
  requires: [IDocumentManager],
  optional: [
    INotebookTracker,
    ICommandPalette,
    ILayoutRestorer,
    IFileBrowserFactory,
    IDefaultFileBrowser
  ],
  activate: (
    app: JupyterFrontEnd,
    docManager: IDocumentManager,
    notebooks: INotebookTracker | null,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null,
    browserFactory: IFileBrowserFactory | null,
    defaultBrowser: IDefaultFileBrowser | null
  ) => {
    const { commands, shell } = app;

    // --- The push channel every view follows; the Jobs panel (and the Models panel its
    // rows register models into) ---------------------------------------------
    const channel = sharedChannel();
    const models = addModelsPanel(app, restorer, palette);
    const panelOptions: JobsPanel.IOptions = {
      channel,
      models,
      openLog: job =>
        void commands.execute(CommandIDs.openLog, { id: job.id, name: job.name }),
      openOutput: job =>
        void commands.execute(CommandIDs.openOutput, {
          path: job.output ?? '',
          id: job.id,
          name: job.name
        }),
      openJob: job =>
        void commands.execute(JobPageCommandIDs.openJob, { id: job.id, name: job.name }),
      openCluster: () => void commands.execute(CommandIDs.openCluster),
      openSchedules: () => void commands.execute(ScheduleCommandIDs.openSchedules),
      openNotifications: () => void commands.execute(NotifyCommandIDs.openNotifications)
    };
    const panel = new JobsPanel({
      ...panelOptions,
      openWide: () => void commands.execute(CommandIDs.openJobsTable)
    });
    shell.add(panel, 'left', { rank: 650, type: 'nbrunner jobs' });
    if (restorer) {
      restorer.add(panel, 'nbrunner-jobs-panel');
    }

    const revealPanel = (job?: IJob, sweep?: string) => {
      shell.activateById(panel.id);
      if (sweep !== undefined) {
        panel.filter({ sweep });
      }
      if (job) {
        panel.highlight(job.id);
      }
    };

    // --- Job pages, read-only outputs, notifications when jobs end ----------
    const notifier = new JobNotifier({
      channel,
      openJob: (id, name) =>
        void commands.execute(JobPageCommandIDs.openJob, { id, name: name ?? id }),
      revealJobs: () => revealPanel()
    });
    activateJobPages(app, restorer, {
      channel,
      openLog: job =>
        void commands.execute(CommandIDs.openLog, { id: job.id, name: job.name }),
      refreshJobs: () => {
        if (!channel.live) {
          void panel.refresh(); // the channel brings the change otherwise
        }
      },
      submitted: job => notifier.watch(job)
    });
    void app.restored.then(() => {
      notifier.start();
      channel.start();
    });

    // --- Run as job ---------------------------------------------------------
    const submitted = (created: Created | null) => {
      if (created?.mode === 'schedule') {
        const { schedule } = created;
        Notification.success(`Schedule ${schedule.id} saved (${schedule.name}).`, {
          autoClose: 6000
        });
        void commands.execute(ScheduleCommandIDs.openSchedules, { id: schedule.id });
        return;
      }
      if (created?.mode === 'sweep') {
        const n = created.sweep.leaderboard?.length ?? created.sweep.jobs.length;
        Notification.success(`Sweep ${created.sweep.id} started: ${n} trials.`, {
          autoClose: 6000
        });
        revealPanel(undefined, created.sweep.id);
        return;
      }
      if (!created) {
        return;
      }
      const { job } = created;
      notifier.watch(job);
      Notification.success(`Job ${job.id} submitted (${job.name}).`, {
        autoClose: 6000,
        actions: [
          {
            label: 'Show jobs',
            caption: 'Open the nbrunner Jobs panel',
            callback: () => revealPanel(job)
          }
        ]
      });
      revealPanel(job);
    };

    const run = async (path: string | null | undefined) => {
      if (!path) {
        Notification.warning('Select a notebook to run as a job.', {
          autoClose: 5000
        });
        return;
      }
      try {
        submitted(await runAsJob(app, docManager, path));
      } catch (error) {
        Notification.error(
          `Could not submit ${path}: ${(error as Error).message ?? error}`,
          { autoClose: 10000 }
        );
      }
    };

    const selectedNotebookPath = (): string | null => {
      const browser = browserFactory?.tracker.currentWidget ?? defaultBrowser;
      if (!browser) {
        return null;
      }
      for (const item of browser.selectedItems()) {
        if (item.type === 'notebook' || item.path.endsWith('.ipynb')) {
          return item.path;
        }
      }
      return null;
    };

    const currentNotebookPath = (): string | null => {
      const current = notebooks?.currentWidget;
      return current ? current.context.path : null;
    };

    commands.addCommand(CommandIDs.runAsJob, {
      label: 'Run as job',
      caption: 'Run the notebook as an nbrunner job with parameters and GPUs',
      icon: runJobIcon,
      isEnabled: args =>
        !!args.path ||
        args.origin === 'filebrowser' ||
        !!notebooks?.currentWidget,
      execute: (args: ReadonlyPartialJSONObject) => {
        let path = (args.path as string | undefined) ?? null;
        if (!path && args.origin === 'filebrowser') {
          path = selectedNotebookPath();
        }
        if (!path) {
          path = currentNotebookPath();
        }
        return run(path);
      }
    });

    if (notebooks) {
      // Re-evaluate the palette item's enabled state when the notebook changes.
      notebooks.currentChanged.connect(() =>
        commands.notifyCommandChanged(CommandIDs.runAsJob)
      );
    }

    app.docRegistry.addWidgetExtension(
      'Notebook',
      new RunAsJobButtonExtension(nbPanel => {
        void commands.execute(CommandIDs.runAsJob, {
          path: nbPanel.context.path
        });
      })
    );

    app.contextMenu.addItem({
      command: CommandIDs.runAsJob,
      selector: NOTEBOOK_ITEM_SELECTOR,
      rank: 3,
      args: { origin: 'filebrowser' }
    });

    // --- Other commands -----------------------------------------------------
    commands.addCommand(CommandIDs.openJobs, {
      label: 'Show nbrunner jobs',
      caption: 'Open the nbrunner Jobs panel (args: {sweep?}: the trials of that sweep)',
      icon: jobsIcon,
      execute: args => revealPanel(undefined, (args.sweep as string | undefined) ?? undefined)
    });

    // The jobs table in the main area: the same panel, full width.
    let wide: JobsPanel | null = null;
    commands.addCommand(CommandIDs.openJobsTable, {
      label: 'Open nbrunner jobs table',
      caption: 'The jobs table in a main-area tab, full width',
      icon: jobsIcon,
      execute: () => {
        if (!wide || wide.isDisposed) {
          wide = new JobsPanel({ ...panelOptions, openWide: undefined, area: 'main' });
        }
        if (!wide.isAttached) {
          shell.add(wide, 'main');
        }
        shell.activateById(wide.id);
        return wide;
      }
    });

    const logs = new WidgetTracker<MainAreaWidget<JobLogView>>({
      namespace: 'nbrunner-log'
    });
    commands.addCommand(CommandIDs.openLog, {
      label: args => (args.id ? `Log of job ${args.id}` : 'Job log'),
      caption: 'Tail the log of an nbrunner job',
      icon: logIcon,
      execute: args => {
        const id = String(args.id ?? '');
        if (!id) {
          return;
        }
        const existing = logs.find(w => w.content.jobId === id);
        if (existing) {
          shell.activateById(existing.id);
          return existing;
        }
        const content = new JobLogView({
          id,
          name: (args.name as string | undefined) ?? id
        });
        const widget = wrapInMainArea(content, `nbrunner-log-widget-${id}`, {
          icon: logIcon,
          className: 'nbrunner-LogWidget'
        });
        // Logs open next to each other, in a split beside the notebooks.
        const sibling = logs.currentWidget ?? logs.find(() => true);
        void logs.add(widget);
        if (sibling && sibling.isAttached) {
          shell.add(widget, 'main', { ref: sibling.id, mode: 'tab-after' });
        } else {
          shell.add(widget, 'main', { mode: 'split-right' });
        }
        shell.activateById(widget.id);
        return widget;
      }
    });
    if (restorer) {
      void restorer.restore(logs, {
        command: CommandIDs.openLog,
        args: w => ({ id: w.content.jobId, name: w.content.jobName }),
        name: w => w.content.jobId
      });
    }

    let cluster: MainAreaWidget<ClusterView> | null = null;
    const clusters = new WidgetTracker<MainAreaWidget<ClusterView>>({
      namespace: 'nbrunner-cluster'
    });
    commands.addCommand(CommandIDs.openCluster, {
      label: 'Open nbrunner cluster view',
      caption: 'GPU slots per host and GPU allocation over time',
      icon: clusterIcon,
      execute: () => {
        if (!cluster || cluster.isDisposed) {
          const content = new ClusterView({ channel });
          cluster = wrapInMainArea(content, 'nbrunner-cluster-widget', {
            icon: clusterIcon,
            className: 'nbrunner-ClusterWidget'
          });
          void clusters.add(cluster);
        }
        showInMainArea(shell, cluster);
        return cluster;
      }
    });
    if (restorer) {
      void restorer.restore(clusters, {
        command: CommandIDs.openCluster,
        name: () => 'cluster'
      });
    }

    if (palette) {
      const category = 'nbrunner';
      palette.addItem({ command: CommandIDs.runAsJob, category });
      palette.addItem({ command: CommandIDs.openJobs, category });
      palette.addItem({ command: CommandIDs.openJobsTable, category });
      palette.addItem({ command: CommandIDs.openCluster, category });
    }
  }
};

export default [plugin, schedulesPlugin, pipelinesPlugin, notificationsPlugin];
