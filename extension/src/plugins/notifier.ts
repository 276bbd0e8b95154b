/** Notifications when a job or sweep of the user's ends (provided as `IJobNotifier`). */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';

import { CommandIDs } from '../command-ids';
import { JobNotifier } from '../notifier';
import { IJobNotifier, IJobsPanel, IPushChannel } from '../tokens';

export const notifierPlugin: JupyterFrontEndPlugin<IJobNotifier> = {
  id: 'nbrunner:notifier',
  description: 'Tells the user when a job or sweep of theirs ends.',
  autoStart: true,
  provides: IJobNotifier,
  requires: [IPushChannel],
  optional: [IJobsPanel],
  activate: (app: JupyterFrontEnd, channel: IPushChannel, jobs: IJobsPanel | null): IJobNotifier => {
    const { commands } = app;
    const notifier = new JobNotifier({
      channel,
      openJob: (id, name) => void commands.execute(CommandIDs.openJob, { id, name: name ?? id }),
      revealJobs: () => (jobs ? jobs.reveal() : void commands.execute(CommandIDs.openJobs))
    });
    void app.restored.then(() => notifier.start());
    return notifier;
  }
};
