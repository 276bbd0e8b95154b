/**
 * The services the extension's plugins share, each behind a JupyterLab token: a plugin that
 * needs one lists it in `requires` (or `optional`), the plugin that makes it `provides` it.
 */
import { Token } from '@lumino/coreutils';

import type { PushChannel } from './channel';
import type { JobNotifier } from './notifier';
import type { IJob } from './types';

/** The tab's push channel (`GET /events`), shared by every view; started once JupyterLab is restored. */
export type IPushChannel = PushChannel;
export const IPushChannel = new Token<IPushChannel>(
  'nbrunner:IPushChannel',
  "The push channel every nbrunner view follows (one event stream per browser tab)."
);

/** Notifications when a job or sweep of the user's ends. */
export type IJobNotifier = JobNotifier;
export const IJobNotifier = new Token<IJobNotifier>(
  'nbrunner:IJobNotifier',
  'Tells the user when a job or sweep of theirs ends; `watch` a job submitted here.'
);

/** The Jobs side panel, as other plugins use it. */
export interface IJobsPanel {
  /** Show the panel; list a sweep's trials (`sweep`), mark a job (`job`). */
  reveal(job?: IJob, sweep?: string): void;
  /** Read the jobs again (when the push channel is not live to bring a change). */
  refresh(): void;
}
export const IJobsPanel = new Token<IJobsPanel>(
  'nbrunner:IJobsPanel',
  'The nbrunner Jobs side panel: reveal it on a job or a sweep, refresh it.'
);

/** What the Jobs panel needs to offer "Register model". */
export interface IModelActions {
  /** Which of these jobs saved a model. */
  jobsWithModel: (ids: string[]) => Promise<string[]>;
  register: (job: IJob) => void;
}
export const IModelActions = new Token<IModelActions>(
  'nbrunner:IModelActions',
  "Registering a job's saved model, offered on the Jobs panel's rows."
);
