/** The notification settings in JupyterLab: a command (the Jobs panel's bell, the palette) opening the form. */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, MainAreaWidget } from '@jupyterlab/apputils';

import { showInMainArea, wrapInMainArea } from './main-area';
import { linkTarget } from './notifications';
import { NotificationSettings } from './notifications-widget';

export namespace NotifyCommandIDs {
  export const openNotifications = 'nbrunner:open-notifications';
}

export const notificationsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'nbrunner:notifications',
  description: 'nbrunner notification settings: e-mail and Apprise targets, and which events.',
  autoStart: true,
  optional: [ICommandPalette],
  activate: (app: JupyterFrontEnd, palette: ICommandPalette | null) => {
    let widget: MainAreaWidget<NotificationSettings> | null = null;
    app.commands.addCommand(NotifyCommandIDs.openNotifications, {
      label: 'nbrunner notification settings',
      caption: 'Where and when you are told that a job, sweep or pipeline ended',
      execute: () => {
        if (!widget || widget.isDisposed) {
          const content = new NotificationSettings();
          widget = wrapInMainArea(content, 'nbrunner-notifications-widget');
        } else {
          void widget.content.load();
        }
        showInMainArea(app.shell, widget);
        return widget;
      }
    });
    palette?.addItem({ command: NotifyCommandIDs.openNotifications, category: 'nbrunner' });
    // A notification's link (`<lab>?nbrunner-job=ID`, `?nbrunner-sweep=ID`) opens what it is about.
    const link = linkTarget(window.location.search); // read now: the router may rewrite the URL
    void app.restored.then(() => {
      if (link) {
        void app.commands.execute(link.command, link.args);
      }
    });
  }
};
