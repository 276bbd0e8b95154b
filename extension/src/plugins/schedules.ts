/** The Schedules view (command, palette): pause, resume, edit, delete, and their runs. */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { IDocumentManager } from '@jupyterlab/docmanager';

import { CommandIDs, PALETTE_CATEGORY } from '../command-ids';
import { scheduleIcon, SchedulesView } from '../components/SchedulesView';
import { addListViewCommand, MainAreaWidgets } from '../main-area';
import { editSchedule } from '../run-as-job';
import { IPushChannel } from '../tokens';

export const schedulesPlugin: JupyterFrontEndPlugin<void> = {
  id: 'nbrunner:schedules',
  description: 'The nbrunner Schedules view.',
  autoStart: true,
  requires: [IDocumentManager, IPushChannel],
  optional: [ICommandPalette, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    docManager: IDocumentManager,
    channel: IPushChannel,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null
  ) => {
    const { commands } = app;
    const views = new MainAreaWidgets<SchedulesView>(app.shell, {
      namespace: 'nbrunner-schedules',
      id: () => 'nbrunner-schedules-widget',
      icon: scheduleIcon
    });
    const create = () =>
      new SchedulesView({
        channel,
        openLog: job => void commands.execute(CommandIDs.openLog, { id: job.id, name: job.name }),
        openOutput: job =>
          void commands.execute(CommandIDs.openOutput, {
            path: job.output ?? '',
            id: job.id,
            name: job.name
          }),
        openJob: job => void commands.execute(CommandIDs.openJob, { id: job.id, name: job.name }),
        edit: schedule => editSchedule(app, docManager, schedule)
      });

    addListViewCommand(commands, views, restorer, CommandIDs.openSchedules, {
      label: 'Open nbrunner schedules',
      caption: 'Schedules: pause, resume, edit, delete, and their runs',
      icon: scheduleIcon,
      name: 'schedules',
      create
    });
    palette?.addItem({ command: CommandIDs.openSchedules, category: PALETTE_CATEGORY });
  }
};
