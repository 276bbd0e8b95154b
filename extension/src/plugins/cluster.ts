/** The cluster view: GPU slots per host and GPU allocation over time, in a main-area tab. */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';

import { CommandIDs, PALETTE_CATEGORY } from '../command-ids';
import { ClusterView } from '../components/ClusterView';
import { clusterIcon } from '../icons';
import { MainAreaWidgets } from '../main-area';
import { IPushChannel } from '../tokens';

export const clusterPlugin: JupyterFrontEndPlugin<void> = {
  id: 'nbrunner:cluster',
  description: 'The nbrunner cluster view.',
  autoStart: true,
  requires: [IPushChannel],
  optional: [ILayoutRestorer, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    channel: IPushChannel,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null
  ) => {
    const views = new MainAreaWidgets<ClusterView>(app.shell, {
      namespace: 'nbrunner-cluster',
      id: () => 'nbrunner-cluster-widget',
      icon: clusterIcon,
      className: 'nbrunner-ClusterWidget'
    });
    app.commands.addCommand(CommandIDs.openCluster, {
      label: 'Open nbrunner cluster view',
      caption: 'GPU slots per host and GPU allocation over time',
      icon: clusterIcon,
      execute: () => views.open('', () => new ClusterView({ channel }))
    });
    views.restore(restorer, { command: CommandIDs.openCluster, name: () => 'cluster' });
    palette?.addItem({ command: CommandIDs.openCluster, category: PALETTE_CATEGORY });
  }
};
