/**
 * Schedules and sweeps in JupyterLab: the Schedules view (command, palette) and
 * "Run sweep…" on YAML spec files in the file browser.
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
  WidgetTracker
} from '@jupyterlab/apputils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { IDefaultFileBrowser, IFileBrowserFactory } from '@jupyterlab/filebrowser';

import { errorMessage } from './api';
import { sharedChannel } from './channel';
import { runJobIcon } from './icons';
import { scheduleIcon, SchedulesView } from './components/SchedulesView';
import { editSchedule, runAsJob } from './run-as-job';
import { pickSweepNotebook } from './sweep-picker';
import { showInMainArea, wrapInMainArea } from './main-area';

export namespace ScheduleCommandIDs {
  export const openSchedules = 'nbrunner:open-schedules';
  export const runSweep = 'nbrunner:run-sweep';
}

/** Spec files in the file browser listing. */
const SPEC_ITEM_SELECTOR = '.jp-DirListing-item[data-file-type="yaml"]';

export const schedulesPlugin: JupyterFrontEndPlugin<void> = {
  id: 'nbrunner:schedules',
  description: 'nbrunner schedules view and sweeps from spec files.',
  autoStart: true,
  requires: [IDocumentManager],
  optional: [ICommandPalette, ILayoutRestorer, IFileBrowserFactory, IDefaultFileBrowser],
  activate: (
    app: JupyterFrontEnd,
    docManager: IDocumentManager,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null,
    browserFactory: IFileBrowserFactory | null,
    defaultBrowser: IDefaultFileBrowser | null
  ) => {
    const { commands, shell } = app;
    const tracker = new WidgetTracker<MainAreaWidget<SchedulesView>>({
      namespace: 'nbrunner-schedules'
    });
    let view: MainAreaWidget<SchedulesView> | null = null;

    commands.addCommand(ScheduleCommandIDs.openSchedules, {
      label: 'Open nbrunner schedules',
      caption: 'Schedules: pause, resume, edit, delete, and their runs',
      icon: scheduleIcon,
      execute: args => {
        if (!view || view.isDisposed) {
          const content = new SchedulesView({
            channel: sharedChannel(),
            openLog: job =>
              void commands.execute('nbrunner:open-log', { id: job.id, name: job.name }),
            openOutput: job =>
              void commands.execute('nbrunner:open-output', {
                path: job.output ?? '',
                id: job.id,
                name: job.name
              }),
            openJob: job =>
              void commands.execute('nbrunner:open-job', { id: job.id, name: job.name }),
            edit: schedule => editSchedule(app, docManager, schedule)
          });
          view = wrapInMainArea(content, 'nbrunner-schedules-widget', { icon: scheduleIcon });
          void tracker.add(view);
        }
        showInMainArea(shell, view);
        if (args.id) {
          view.content.select(String(args.id));
        } else {
          void view.content.refresh();
        }
        return view;
      }
    });
    if (restorer) {
      void restorer.restore(tracker, {
        command: ScheduleCommandIDs.openSchedules,
        name: () => 'schedules'
      });
    }

    const selectedSpec = (): string | null => {
      const browser = browserFactory?.tracker.currentWidget ?? defaultBrowser;
      for (const item of browser?.selectedItems() ?? []) {
        if (/\.ya?ml$/i.test(item.path)) {
          return item.path;
        }
      }
      return null;
    };

    commands.addCommand(ScheduleCommandIDs.runSweep, {
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
            await commands.execute('nbrunner:open-jobs', { sweep: created.sweep.id });
          }
        } catch (error) {
          Notification.error(`Could not start the sweep: ${errorMessage(error)}`, {
            autoClose: 10000
          });
        }
      }
    });
    app.contextMenu.addItem({
      command: ScheduleCommandIDs.runSweep,
      selector: SPEC_ITEM_SELECTOR,
      rank: 3
    });

    if (palette) {
      palette.addItem({ command: ScheduleCommandIDs.openSchedules, category: 'nbrunner' });
    }
  }
};
