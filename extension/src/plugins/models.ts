/**
 * The Models side panel: the panel, its command, and the "Register model" action the Jobs
 * panel shows on jobs that saved a model (provided as `IModelActions`).
 */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, Notification } from '@jupyterlab/apputils';

import { jobsWithModel } from '../api';
import { CommandIDs, PALETTE_CATEGORY } from '../command-ids';
import { registerJobModel } from '../components/registerModel';
import { ModelsPanel } from '../components/ModelsPanel';
import { modelsIcon } from '../icons';
import { IModelActions } from '../tokens';
import { IJob } from '../types';

export const modelsPlugin: JupyterFrontEndPlugin<IModelActions> = {
  id: 'nbrunner:models',
  description: 'The nbrunner Models panel: registered models and their servers; "Register model".',
  autoStart: true,
  provides: IModelActions,
  optional: [ILayoutRestorer, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null
  ): IModelActions => {
    const { commands, shell } = app;
    const panel = new ModelsPanel();
    shell.add(panel, 'left', { rank: 651, type: 'nbrunner models' });
    if (restorer) {
      restorer.add(panel, 'nbrunner-models-panel');
    }
    const reveal = (highlight?: string) => {
      shell.activateById(panel.id);
      void panel.refresh();
      if (highlight) {
        panel.highlight(highlight);
      }
    };
    commands.addCommand(CommandIDs.openModels, {
      label: 'Show nbrunner models',
      caption: 'Open the nbrunner Models panel: registered models and their servers',
      icon: modelsIcon,
      execute: () => reveal()
    });
    palette?.addItem({ command: CommandIDs.openModels, category: PALETTE_CATEGORY });

    return {
      jobsWithModel,
      register: (job: IJob) =>
        void registerJobModel(job).then(entry => {
          if (!entry) {
            return;
          }
          const label = `${entry.name}:${entry.version}`;
          Notification.success(`Registered the model of job ${job.id} as ${label}.`, {
            autoClose: 6000,
            actions: [
              {
                label: 'Show models',
                caption: 'Open the nbrunner Models panel',
                callback: () => reveal(label)
              }
            ]
          });
          void panel.refresh();
        })
    };
  }
};
