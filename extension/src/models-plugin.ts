/**
 * Wires the Models side panel into JupyterLab: the panel, its command, and the
 * "Register model" action the Jobs panel shows on jobs that saved a model.
 */
import { ILayoutRestorer, JupyterFrontEnd } from '@jupyterlab/application';
import { ICommandPalette, Notification } from '@jupyterlab/apputils';

import { jobsWithModel } from './api';
import { registerJobModel } from './components/registerModel';
import { ModelsPanel } from './components/ModelsPanel';
import { modelsIcon } from './icons';
import { IJob } from './types';

export const OPEN_MODELS = 'nbrunner:open-models';

/** What the Jobs panel needs to offer "Register model". */
export interface IModelActions {
  /** Which of these jobs saved a model. */
  jobsWithModel: (ids: string[]) => Promise<string[]>;
  register: (job: IJob) => void;
}

export function addModelsPanel(
  app: JupyterFrontEnd,
  restorer: ILayoutRestorer | null,
  palette: ICommandPalette | null
): IModelActions {
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
  commands.addCommand(OPEN_MODELS, {
    label: 'Show nbrunner models',
    caption: 'Open the nbrunner Models panel: registered models and their servers',
    icon: modelsIcon,
    execute: () => reveal()
  });
  palette?.addItem({ command: OPEN_MODELS, category: 'nbrunner' });

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
