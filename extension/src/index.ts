/**
 * nbrunner's JupyterLab extension, one small plugin per area: the push channel, the Jobs
 * panel, job notifications, job pages and outputs, logs, the cluster view, "Run as job",
 * sweeps, schedules, pipelines, models and notification settings.  They share services
 * through the tokens of `tokens.ts` and open main-area tabs through `main-area.ts`.
 */
import { JupyterFrontEndPlugin } from '@jupyterlab/application';

import { channelPlugin } from './plugins/channel';
import { clusterPlugin } from './plugins/cluster';
import { jobPagesPlugin } from './plugins/job-pages';
import { jobsPanelPlugin } from './plugins/jobs-panel';
import { logsPlugin } from './plugins/logs';
import { modelsPlugin } from './plugins/models';
import { notificationsPlugin } from './plugins/notifications';
import { notifierPlugin } from './plugins/notifier';
import { pipelinesPlugin } from './plugins/pipelines';
import { runAsJobPlugin } from './plugins/run-as-job';
import { schedulesPlugin } from './plugins/schedules';
import { sweepsPlugin } from './plugins/sweeps';

export { CommandIDs } from './command-ids';
export { IJobNotifier, IJobsPanel, IModelActions, IPushChannel } from './tokens';

const plugins: JupyterFrontEndPlugin<any>[] = [
  channelPlugin,
  modelsPlugin,
  jobsPanelPlugin,
  notifierPlugin,
  jobPagesPlugin,
  logsPlugin,
  clusterPlugin,
  runAsJobPlugin,
  sweepsPlugin,
  schedulesPlugin,
  pipelinesPlugin,
  notificationsPlugin
];

export default plugins;
