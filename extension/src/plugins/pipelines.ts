/**
 * Pipelines in JupyterLab: the Pipelines view (command, palette) and "Run pipeline" on
 * pipeline files (`*.pipeline.yaml`, `*.pipeline.yml`) in the file browser.
 */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, Notification } from '@jupyterlab/apputils';
import { IDefaultFileBrowser, IFileBrowserFactory } from '@jupyterlab/filebrowser';

import { errorMessage, runPipelineFile } from '../api';
import { CommandIDs, PALETTE_CATEGORY } from '../command-ids';
import { pipelineIcon, PipelinesView } from '../components/PipelinesView';
import { addListViewCommand, MainAreaWidgets } from '../main-area';
import { isPipelineFile } from '../pipeline-graph';
import { IPushChannel } from '../tokens';

/** YAML files in the file browser listing ("Run pipeline" shows on pipeline files only). */
const YAML_ITEM_SELECTOR = '.jp-DirListing-item[data-file-type="yaml"]';

export const pipelinesPlugin: JupyterFrontEndPlugin<void> = {
  id: 'nbrunner:pipelines',
  description: 'nbrunner pipelines view and "Run pipeline" on pipeline files.',
  autoStart: true,
  requires: [IPushChannel],
  optional: [ICommandPalette, ILayoutRestorer, IFileBrowserFactory, IDefaultFileBrowser],
  activate: (
    app: JupyterFrontEnd,
    channel: IPushChannel,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null,
    browserFactory: IFileBrowserFactory | null,
    defaultBrowser: IDefaultFileBrowser | null
  ) => {
    const { commands, shell } = app;
    const views = new MainAreaWidgets<PipelinesView>(shell, {
      namespace: 'nbrunner-pipelines',
      id: () => 'nbrunner-pipelines-widget',
      icon: pipelineIcon
    });
    const create = () =>
      new PipelinesView({
        channel,
        openJob: (id, name) => void commands.execute(CommandIDs.openJob, { id, name })
      });

    addListViewCommand(commands, views, restorer, CommandIDs.openPipelines, {
      label: 'Open nbrunner pipelines',
      caption: "Pipelines: the graph of each pipeline's steps, live",
      icon: pipelineIcon,
      name: 'pipelines',
      create
    });

    const selectedPipelineFile = (): string | null => {
      const browser = browserFactory?.tracker.currentWidget ?? defaultBrowser;
      for (const item of browser?.selectedItems() ?? []) {
        if (isPipelineFile(item.path)) {
          return item.path;
        }
      }
      return null;
    };

    commands.addCommand(CommandIDs.runPipeline, {
      label: 'Run pipeline',
      caption: 'Run the notebooks of this pipeline file, each step feeding the next',
      icon: pipelineIcon,
      isVisible: args => !!((args.path as string | undefined) ?? selectedPipelineFile()),
      execute: async args => {
        const path = (args.path as string | undefined) ?? selectedPipelineFile();
        if (!path) {
          return;
        }
        try {
          const rec = await runPipelineFile(path);
          Notification.success(`Pipeline ${rec.name} (${rec.id}) started.`, { autoClose: 5000 });
          await commands.execute(CommandIDs.openPipelines, { id: rec.id });
        } catch (error) {
          Notification.error(`Could not run the pipeline: ${errorMessage(error)}`, { autoClose: 10000 });
        }
      }
    });
    app.contextMenu.addItem({ command: CommandIDs.runPipeline, selector: YAML_ITEM_SELECTOR, rank: 2 });

    palette?.addItem({ command: CommandIDs.openPipelines, category: PALETTE_CATEGORY });
  }
};
