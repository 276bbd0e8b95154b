/** Job logs: a job's log, tailed in a main-area tab; logs open next to each other. */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';

import { CommandIDs } from '../command-ids';
import { logIcon } from '../icons';
import { JobLogView } from '../log-view';
import { MainAreaWidgets } from '../main-area';

export const logsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'nbrunner:logs',
  description: "nbrunner job logs, tailed in main-area tabs.",
  autoStart: true,
  optional: [ILayoutRestorer],
  activate: (app: JupyterFrontEnd, restorer: ILayoutRestorer | null) => {
    const logs = new MainAreaWidgets<JobLogView>(app.shell, {
      namespace: 'nbrunner-log',
      key: view => view.jobId,
      id: view => `nbrunner-log-widget-${view.jobId}`,
      icon: logIcon,
      className: 'nbrunner-LogWidget',
      // Logs open next to each other, in a split beside the notebooks.
      place: tracker => {
        const sibling = tracker.currentWidget ?? tracker.find(() => true);
        return sibling && sibling.isAttached
          ? { ref: sibling.id, mode: 'tab-after' }
          : { mode: 'split-right' };
      }
    });
    app.commands.addCommand(CommandIDs.openLog, {
      label: args => (args.id ? `Log of job ${args.id}` : 'Job log'),
      caption: 'Tail the log of an nbrunner job',
      icon: logIcon,
      execute: args => {
        const id = String(args.id ?? '');
        if (!id) {
          return;
        }
        const name = (args.name as string | undefined) ?? id;
        return logs.open(id, () => new JobLogView({ id, name }));
      }
    });
    logs.restore(restorer, {
      command: CommandIDs.openLog,
      args: w => ({ id: w.content.jobId, name: w.content.jobName }),
      name: w => w.content.jobId
    });
  }
};
