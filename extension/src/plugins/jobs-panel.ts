/**
 * The Jobs panel: the side panel (provided as `IJobsPanel`), the same table full width in a
 * main-area tab, and their commands.
 */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';

import { CommandIDs, PALETTE_CATEGORY } from '../command-ids';
import { JobsPanel } from '../components/JobsPanel';
import { jobsIcon } from '../icons';
import { showInMainArea } from '../main-area';
import { IJobsPanel, IModelActions, IPushChannel } from '../tokens';
import { IJob } from '../types';

export const jobsPanelPlugin: JupyterFrontEndPlugin<IJobsPanel> = {
  id: 'nbrunner:jobs',
  description: 'The nbrunner Jobs panel (side bar) and jobs table (main area).',
  autoStart: true,
  provides: IJobsPanel,
  requires: [IPushChannel],
  optional: [IModelActions, ILayoutRestorer, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    channel: IPushChannel,
    models: IModelActions | null,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null
  ): IJobsPanel => {
    const { commands, shell } = app;
    const options: JobsPanel.IOptions = {
      channel,
      models: models ?? undefined,
      openLog: job => void commands.execute(CommandIDs.openLog, { id: job.id, name: job.name }),
      openOutput: job =>
        void commands.execute(CommandIDs.openOutput, {
          path: job.output ?? '',
          id: job.id,
          name: job.name
        }),
      openJob: job => void commands.execute(CommandIDs.openJob, { id: job.id, name: job.name }),
      openCluster: () => void commands.execute(CommandIDs.openCluster),
      openSchedules: () => void commands.execute(CommandIDs.openSchedules),
      openNotifications: () => void commands.execute(CommandIDs.openNotifications)
    };
    const panel = new JobsPanel({
      ...options,
      openWide: () => void commands.execute(CommandIDs.openJobsTable)
    });
    shell.add(panel, 'left', { rank: 650, type: 'nbrunner jobs' });
    if (restorer) {
      restorer.add(panel, 'nbrunner-jobs-panel');
    }

    const reveal = (job?: IJob, sweep?: string) => {
      shell.activateById(panel.id);
      if (sweep !== undefined) {
        panel.filter({ sweep });
      }
      if (job) {
        panel.highlight(job.id);
      }
    };

    commands.addCommand(CommandIDs.openJobs, {
      label: 'Show nbrunner jobs',
      caption: 'Open the nbrunner Jobs panel (args: {sweep?}: the trials of that sweep)',
      icon: jobsIcon,
      execute: args => reveal(undefined, (args.sweep as string | undefined) ?? undefined)
    });

    // The jobs table in the main area: the same panel, full width (not a MainAreaWidget: the
    // panel is its own tab).
    let wide: JobsPanel | null = null;
    commands.addCommand(CommandIDs.openJobsTable, {
      label: 'Open nbrunner jobs table',
      caption: 'The jobs table in a main-area tab, full width',
      icon: jobsIcon,
      execute: () => {
        if (!wide || wide.isDisposed) {
          wide = new JobsPanel({ ...options, openWide: undefined, area: 'main' });
        }
        showInMainArea(shell, wide);
        return wide;
      }
    });

    if (palette) {
      palette.addItem({ command: CommandIDs.openJobs, category: PALETTE_CATEGORY });
      palette.addItem({ command: CommandIDs.openJobsTable, category: PALETTE_CATEGORY });
    }

    return {
      reveal,
      refresh: () => void panel.refresh()
    };
  }
};
