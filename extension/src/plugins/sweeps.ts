/** Sweeps from spec files: "Run sweep…" on YAML files in the file browser. */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { Notification } from '@jupyterlab/apputils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { IDefaultFileBrowser, IFileBrowserFactory } from '@jupyterlab/filebrowser';

import { errorMessage } from '../api';
import { CommandIDs } from '../command-ids';
import { runJobIcon } from '../icons';
import { runAsJob } from '../run-as-job';
import { pickSweepNotebook } from '../sweep-picker';

/** Spec files in the file browser listing. */
const SPEC_ITEM_SELECTOR = '.jp-DirListing-item[data-file-type="yaml"]';

export const sweepsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'nbrunner:sweeps',
  description: 'nbrunner sweeps from spec files.',
  autoStart: true,
  requires: [IDocumentManager],
  optional: [IFileBrowserFactory, IDefaultFileBrowser],
  activate: (
    app: JupyterFrontEnd,
    docManager: IDocumentManager,
    browserFactory: IFileBrowserFactory | null,
    defaultBrowser: IDefaultFileBrowser | null
  ) => {
    const { commands } = app;
    const selectedSpec = (): string | null => {
      const browser = browserFactory?.tracker.currentWidget ?? defaultBrowser;
      for (const item of browser?.selectedItems() ?? []) {
        if (/\.ya?ml$/i.test(item.path)) {
          return item.path;
        }
      }
      return null;
    };

    commands.addCommand(CommandIDs.runSweep, {
      label: 'Run sweep…',
      caption: 'Run a notebook once per trial of this sweep spec',
      icon: runJobIcon,
      execute: async args => {
        const spec = (args.spec as string | undefined) ?? selectedSpec();
        const notebook =
          (args.notebook as string | undefined) ??
          (spec ? await pickSweepNotebook(app.serviceManager.contents, spec) : null);
        if (!notebook) {
          return;
        }
        try {
          const created = await runAsJob(app, docManager, notebook, {
            mode: 'sweep',
            spec: spec ?? ''
          });
          if (created?.mode === 'sweep') {
            const n = created.sweep.leaderboard?.length ?? created.sweep.jobs.length;
            Notification.success(`Sweep ${created.sweep.id} started: ${n} trials.`, {
              autoClose: 6000
            });
            await commands.execute(CommandIDs.openJobs, { sweep: created.sweep.id });
          }
        } catch (error) {
          Notification.error(`Could not start the sweep: ${errorMessage(error)}`, {
            autoClose: 10000
          });
        }
      }
    });
    app.contextMenu.addItem({ command: CommandIDs.runSweep, selector: SPEC_ITEM_SELECTOR, rank: 3 });
  }
};
