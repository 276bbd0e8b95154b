/**
 * "Run as job" on notebooks: the notebook toolbar's button, the file browser's context menu
 * and the command palette; what was created is announced and shown in the Jobs panel.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, Notification, ToolbarButton } from '@jupyterlab/apputils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { DocumentRegistry } from '@jupyterlab/docregistry';
import { IDefaultFileBrowser, IFileBrowserFactory } from '@jupyterlab/filebrowser';
import { INotebookModel, INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { ReadonlyPartialJSONObject } from '@lumino/coreutils';
import { DisposableDelegate, IDisposable } from '@lumino/disposable';

import { CommandIDs, PALETTE_CATEGORY } from '../command-ids';
import { runJobIcon } from '../icons';
import { Created, runAsJob } from '../run-as-job';
import { IJobNotifier, IJobsPanel } from '../tokens';
import { IJob } from '../types';

/** Selector of notebooks in the file browser listing. */
const NOTEBOOK_ITEM_SELECTOR = '.jp-DirListing-item[data-file-type="notebook"]';

/** Adds the "Run as job" button to every notebook's toolbar. */
class RunAsJobButtonExtension implements DocumentRegistry.IWidgetExtension<NotebookPanel, INotebookModel> {
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

export const runAsJobPlugin: JupyterFrontEndPlugin<void> = {
  id: 'nbrunner:run-as-job',
  description: 'Run parameterized notebooks as nbrunner jobs (now, on a schedule, or as a sweep).',
  autoStart: true,
  requires: [IDocumentManager, IJobNotifier],
  optional: [IJobsPanel, INotebookTracker, ICommandPalette, IFileBrowserFactory, IDefaultFileBrowser],
  activate: (
    app: JupyterFrontEnd,
    docManager: IDocumentManager,
    notifier: IJobNotifier,
    jobs: IJobsPanel | null,
    notebooks: INotebookTracker | null,
    palette: ICommandPalette | null,
    browserFactory: IFileBrowserFactory | null,
    defaultBrowser: IDefaultFileBrowser | null
  ) => {
    const { commands } = app;
    const reveal = (job?: IJob, sweep?: string) =>
      jobs ? jobs.reveal(job, sweep) : void commands.execute(CommandIDs.openJobs, sweep ? { sweep } : {});

    const submitted = (created: Created | null) => {
      if (created?.mode === 'schedule') {
        const { schedule } = created;
        Notification.success(`Schedule ${schedule.id} saved (${schedule.name}).`, { autoClose: 6000 });
        void commands.execute(CommandIDs.openSchedules, { id: schedule.id });
        return;
      }
      if (created?.mode === 'sweep') {
        const n = created.sweep.leaderboard?.length ?? created.sweep.jobs.length;
        Notification.success(`Sweep ${created.sweep.id} started: ${n} trials.`, { autoClose: 6000 });
        reveal(undefined, created.sweep.id);
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
          { label: 'Show jobs', caption: 'Open the nbrunner Jobs panel', callback: () => reveal(job) }
        ]
      });
      reveal(job);
    };

    const run = async (path: string | null | undefined) => {
      if (!path) {
        Notification.warning('Select a notebook to run as a job.', { autoClose: 5000 });
        return;
      }
      try {
        submitted(await runAsJob(app, docManager, path));
      } catch (error) {
        Notification.error(`Could not submit ${path}: ${(error as Error).message ?? error}`, {
          autoClose: 10000
        });
      }
    };

    const selectedNotebookPath = (): string | null => {
      const browser = browserFactory?.tracker.currentWidget ?? defaultBrowser;
      for (const item of browser?.selectedItems() ?? []) {
        if (item.type === 'notebook' || item.path.endsWith('.ipynb')) {
          return item.path;
        }
      }
      return null;
    };

    commands.addCommand(CommandIDs.runAsJob, {
      label: 'Run as job',
      caption: 'Run the notebook as an nbrunner job with parameters and GPUs',
      icon: runJobIcon,
      isEnabled: args => !!args.path || args.origin === 'filebrowser' || !!notebooks?.currentWidget,
      execute: (args: ReadonlyPartialJSONObject) => {
        let path = (args.path as string | undefined) ?? null;
        if (!path && args.origin === 'filebrowser') {
          path = selectedNotebookPath();
        }
        if (!path) {
          path = notebooks?.currentWidget?.context.path ?? null;
        }
        return run(path);
      }
    });
    // Re-evaluate the palette item's enabled state when the notebook changes.
    notebooks?.currentChanged.connect(() => commands.notifyCommandChanged(CommandIDs.runAsJob));

    app.docRegistry.addWidgetExtension(
      'Notebook',
      new RunAsJobButtonExtension(panel => {
        void commands.execute(CommandIDs.runAsJob, { path: panel.context.path });
      })
    );
    app.contextMenu.addItem({
      command: CommandIDs.runAsJob,
      selector: NOTEBOOK_ITEM_SELECTOR,
      rank: 3,
      args: { origin: 'filebrowser' }
    });
    palette?.addItem({ command: CommandIDs.runAsJob, category: PALETTE_CATEGORY });
  }
};
