/** The push channel plugin: one `GET /events` stream per browser tab, provided to every view. */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';

import { PushChannel } from '../channel';
import { IPushChannel } from '../tokens';

export const channelPlugin: JupyterFrontEndPlugin<IPushChannel> = {
  id: 'nbrunner:channel',
  description: 'The push channel every nbrunner view follows.',
  autoStart: true,
  provides: IPushChannel,
  activate: (app: JupyterFrontEnd): IPushChannel => {
    const channel = new PushChannel();
    void app.restored.then(() => channel.start());
    return channel;
  }
};
