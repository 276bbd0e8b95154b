/** The notification settings in JupyterLab: a command (the Jobs panel's bell, the palette) opening the form. */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';

import { CommandIDs, PALETTE_CATEGORY } from '../command-ids';
import { MainAreaWidgets } from '../main-area';
import { linkTarget } from '../notifications';
import { NotificationSettings } from '../notifications-widget';

export const notificationsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'nbrunner:notifications',
  description: 'nbrunner notification settings: e-mail and Apprise targets, and which events.',
  autoStart: true,
  optional: [ICommandPalette],
  activate: (app: JupyterFrontEnd, palette: ICommandPalette | null) => {
    const views = new MainAreaWidgets<NotificationSettings>(app.shell, {
      namespace: 'nbrunner-notifications',
      id: () => 'nbrunner-notifications-widget'
    });
    app.commands.addCommand(CommandIDs.openNotifications, {
      label: 'nbrunner notification settings',
      caption: 'Where and when you are told that a job, sweep or pipeline ended',
      execute: () =>
        views.open(
          '',
          () => new NotificationSettings(),
          settings => void settings.load()
        )
    });
    palette?.addItem({ command: CommandIDs.openNotifications, category: PALETTE_CATEGORY });
    // A notification's link (`<lab>?nbrunner-job=ID`, `?nbrunner-sweep=ID`) opens what it is about.
    const link = linkTarget(window.location.search); // read now: the router may rewrite the URL
    void app.restored.then(() => {
      if (link) {
        void app.commands.execute(link.command, link.args);
      }
    });
  }
};
