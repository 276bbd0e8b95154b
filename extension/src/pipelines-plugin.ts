/**
 * Pipelines in JupyterLab: the Pipelines view (command, palette) and "Run pipeline" on
 * pipeline files (`*.pipeline.yaml`, `*.pipeline.yml`) in the file browser.
 */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, MainAreaWidget, Notification, WidgetTracker } from '@jupyterlab/apputils';
import { IDefaultFileBrowser, IFileBrowserFactory } from '@jupyterlab/filebrowser';

import { errorMessage, runPipelineFile } from './api';
import { sharedChannel } from './channel';
import { pipelineIcon, PipelinesView } from './components/PipelinesView';
import { showInMainArea, wrapInMainArea } from './main-area';
import { isPipelineFile } from './pipeline-graph';

export namespace PipelineCommandIDs {
  export const openPipelines = 'nbrunner:open-pipelines';
  export const runPipeline = 'nbrunner:run-pipeline';
}

/** YAML files in the file browser listing ("Run pipeline" shows on pipeline files only). */
const YAML_ITEM_SELECTOR = '.jp-DirListing-item[data-file-type="yaml"]';

export const pipelinesPlugin: JupyterFrontEndPlugin<void> = {
  id: 'nbrunner:pipelines',
  description: 'nbrunner pipelines view and "Run pipeline" on pipeline files.',
  autoStart: true,
  optional: [ICommandPalette, ILayoutRestorer, IFileBrowserFactory, IDefaultFileBrowser],
  activate: (
    app: JupyterFrontEnd,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null,
    browserFactory: IFileBrowserFactory | null,
    defaultBrowser: IDefaultFileBrowser | null
  ) => {
    const { commands, shell } = app;
    const tracker = new WidgetTracker<MainAreaWidget<PipelinesView>>({ namespace: 'nbrunner-pipelines' });
    let view: MainAreaWidget<PipelinesView> | null = null;

    commands.addCommand(PipelineCommandIDs.openPipelines, {
      label: 'Open nbrunner pipelines',
      caption: 'Pipelines: the graph of each pipeline\'s steps, live',
      icon: pipelineIcon,
      execute: args => {
        if (!view || view.isDisposed) {
          const content = new PipelinesView({
            channel: sharedChannel(),
            openJob: (id, name) => void commands.execute('nbrunner:open-job', { id, name })
          });
          view = wrapInMainArea(content, 'nbrunner-pipelines-widget', { icon: pipelineIcon });
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
      void restorer.restore(tracker, { command: PipelineCommandIDs.openPipelines, name: () => 'pipelines' });
    }

    const selectedPipelineFile = (): string | null => {
      const browser = browserFactory?.tracker.currentWidget ?? defaultBrowser;
      for (const item of browser?.selectedItems() ?? []) {
        if (isPipelineFile(item.path)) {
          return item.path;
        }
      }
      return null;
    };

    commands.addCommand(PipelineCommandIDs.runPipeline, {
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
          await commands.execute(PipelineCommandIDs.openPipelines, { id: rec.id });
        } catch (error) {
          Notification.error(`Could not run the pipeline: ${errorMessage(error)}`, { autoClose: 10000 });
        }
      }
    });
    app.contextMenu.addItem({ command: PipelineCommandIDs.runPipeline, selector: YAML_ITEM_SELECTOR, rank: 2 });

    if (palette) {
      palette.addItem({ command: PipelineCommandIDs.openPipelines, category: 'nbrunner' });
    }
  }
};
