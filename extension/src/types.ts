/**
 * Shapes of the nbrunner REST API (see the README's REST section).
 */
import { FINISHED_STATUSES, STATUSES } from './constants';

export type JobStatus = (typeof STATUSES)[number];

/** Whether a job in this status never changes again. */
export function isFinished(status: string | undefined | null): boolean {
  return !!status && FINISHED_STATUSES.includes(status);
}

export type JSONValue =
  | null
  | boolean
  | number
  | string
  | JSONValue[]
  | { [key: string]: JSONValue };

export interface IJob {
  id: string;
  name: string;
  notebook: string;
  parameters: { [key: string]: JSONValue } | null;
  status: JobStatus | string;
  priority: number;
  min_gpus: number;
  max_gpus: number;
  gpus: number;
  owner?: string | null;
  created_at?: string | null;
  started_at?: string | null;
  finished_at?: string | null;
  output?: string | null;
  error?: string | null;
  progress?: number | null;
  metrics?: { [key: string]: JSONValue } | null;
  sweep?: string | null;
  /** Status changes, oldest first. */
  history?: IStatusChange[] | null;
  attempt?: number | null;
  worker?: string | null;
  host?: string | null;
  timeout?: number | null;
  /** Id of the schedule that started this job, or null. */
  schedule?: string | null;
  /** The path of its account (with an accounts file), else null. */
  account?: string | null;
  /** Why its GPUs were last taken back ("reclaimed by account vision"), else null. */
  reclaimed?: string | null;
  /** Why a queued job waits (docs/waiting.md), else null. */
  waiting?: IWaiting | null;
  /** A queued job's expected start (ISO 8601 UTC), null when unknown. */
  expected_start?: string | null;
  /** A job's expected end (ISO 8601 UTC), null when unknown. */
  expected_end?: string | null;
  kernel?: string | null;
  queue_position?: number | null;
  /** The owner's groups when they submitted (JupyterHub groups). */
  groups?: string[];
  /** The pipeline this job is a step of, and the step's name. */
  pipeline?: string | null;
  step?: string | null;
  /** Files and folders beside the notebook, copied into its working directory. */
  inputs?: string[];
}

/** Why a queued job waits: a code and one line naming the numbers. */
export interface IWaiting {
  code: string;
  message: string;
}

export interface IStatusChange {
  status: string;
  at: string;
  /** Why the job went back to the queue (a re-queue's entry only). */
  reason?: string | null;
}

/** One row of a job's metrics.jsonl (e.g. `{"step": 3, "loss": 0.4}`). */
export type IMetricsRow = { [key: string]: JSONValue };

export interface IMetrics {
  metrics: IMetricsRow[];
}

/** Formats of `GET /jobs/{id}/download`. */
export type DownloadFormat = 'ipynb' | 'html' | 'zip';

export interface IJobList {
  jobs: IJob[];
  next?: string | null;
}

/**
 * The job options: what a request names beside the notebook and its parameters
 * (nbrunner.core.models.JOB_OPTIONS; tests/server/test_extension_types.py checks them).
 */
export interface IJobOptions {
  name?: string;
  min_gpus?: number;
  max_gpus?: number;
  priority?: number;
  timeout?: number;
  kernel?: string;
}

/** The POST /jobs body. */
export interface ISubmitRequest extends IJobOptions {
  notebook: string;
  parameters?: { [key: string]: JSONValue };
}

/** How a schedule reruns a notebook while its previous run is queued or running. */
export type Overlap = 'skip' | 'queue';

/** When a schedule fires: a cron expression or every N seconds (exactly one). */
export interface IScheduleTiming {
  cron?: string | null;
  every?: number | null;
  timezone?: string;
  overlap?: Overlap;
}

/** The POST /schedules body: a schedule's runs take every job option but the kernel. */
export interface IScheduleRequest
  extends Omit<ISubmitRequest, 'kernel'>,
    IScheduleTiming {}

/** A schedule record (GET /schedules/{id}). */
export interface ISchedule {
  id: string;
  name: string;
  notebook: string;
  parameters: { [key: string]: JSONValue } | null;
  cron: string | null;
  every: number | null;
  timezone: string;
  overlap: Overlap | string;
  paused: boolean;
  next_run_at: string | null;
  last_run_at: string | null;
  created_at: string | null;
  owner?: string | null;
  min_gpus: number;
  max_gpus: number;
  priority: number;
  timeout: number | null;
  /** The owner's groups (JupyterHub groups), given to each run. */
  groups?: string[];
  last_job?: string | null;
  last_error?: string | null;
  /** A schedule of a pipeline: the pipeline's name. */
  pipeline?: string | null;
}

export interface IScheduleList {
  schedules: ISchedule[];
}

/** The PATCH /schedules/{id} body. */
export interface IScheduleUpdate
  extends IScheduleTiming,
    Omit<IJobOptions, 'kernel' | 'timeout'> {
  paused?: boolean;
  parameters?: { [key: string]: JSONValue };
  timeout?: number | null;
}

/** The POST /sweeps body: the spec is a mapping or YAML text. */
export interface ISweepRequest extends IJobOptions {
  notebook: string;
  spec: string | { [key: string]: JSONValue };
}

export interface ILogChunk {
  text: string;
  offset: number;
}

export interface ISlot {
  index: number;
  job: string | null;
}

export interface IHost {
  name: string;
  slots: ISlot[];
}

export interface ICluster {
  policy: string;
  gpus_total: number;
  gpus_free: number;
  hosts: IHost[];
}

export interface ITimelinePoint {
  t: string;
  gpus: number;
}

export interface ITimelineJob {
  id: string;
  name: string;
  points: ITimelinePoint[];
}

export interface ITimeline {
  jobs: ITimelineJob[];
}

/** One account of `GET /accounts` (parents first, in file order; `default` last). */
export interface IAccount {
  name: string;
  /** Names from the top of the tree, joined by `/`. */
  path: string;
  weight: number;
  guaranteed: number;
  /** Most GPUs it may hold (null: no limit). */
  limit: number | null;
  members?: string[];
  users?: number;
  jobs?: number;
  /** The sum of its jobs' max_gpus. */
  demand: number;
  /** Its fair share of the GPUs. */
  share: number;
  /** The GPUs the policy gives it now. */
  allocated?: number;
  /** The GPUs its jobs hold now. */
  held: number;
  borrowed: number;
  lent: number;
  gpu_hours_24h: number;
  gpu_hours_total: number;
}

/** A change of the accounts' held GPUs: `{path: GPUs}` from time `t` on. */
export interface IAccountsPoint {
  t: string;
  gpus: { [path: string]: number };
}

/** `GET /accounts`: no accounts file, no accounts (an empty list). */
export interface IAccounts {
  accounts: IAccount[];
  gpus_total: number;
  policy: string;
  /** The accounts file, and when it was read. */
  source?: string | null;
  loaded_at?: string | null;
  /** Changes of the accounts' held GPUs, oldest first. */
  timeline?: IAccountsPoint[];
}

export interface ILeaderboardEntry {
  rank: number | null;
  /** Index of the trial in the sweep (stable while the sweep runs). */
  trial?: number;
  /** The trial's job, null while the trial is pending. */
  job: string | null;
  parameters: { [key: string]: JSONValue } | null;
  objective: number | null;
  status: string;
}

export interface ISweep {
  id: string;
  jobs: Array<string | IJob>;
  leaderboard: ILeaderboardEntry[];
}

export type ParameterType =
  | 'int'
  | 'float'
  | 'bool'
  | 'str'
  | 'none'
  | 'list'
  | 'dict';

export interface INotebookParameter {
  name: string;
  value: JSONValue;
  type: ParameterType | string;
  /** Optional help text (e.g. the comment after the assignment). */
  help?: string | null;
}

export interface INotebookParameters {
  parameters: INotebookParameter[];
}

/** One registered model version (GET /models). */
export interface IModel {
  name: string;
  version: number;
  job: string | null;
  created_at: string | null;
  path: string;
  framework: string | null;
  class_name: string | null;
  saved_at: string | null;
}

export interface IModelList {
  models: IModel[];
  /** Jobs (visible to this user) that saved a model, so that it can be registered. */
  jobs_with_model: string[];
}

/** A running `nbrunner serve` process (GET /models/serving). */
export interface IModelServer {
  name: string;
  version: number;
  /** `NAME:VERSION` */
  model: string;
  port: number;
  url: string;
  pid: number;
  owner: string;
  started_at: string;
}

export interface IModelServerList {
  servers: IModelServer[];
}

/** A step of a pipeline record (`GET /pipelines/{id}`). */
export interface IPipelineStep {
  status: 'pending' | 'queued' | 'running' | 'completed' | 'failed' | 'skipped' | 'cancelled';
  job: string | null;
  sweep?: string | null;
  outputs: { [key: string]: JSONValue };
  needs: string[];
  notebook?: string;
  kind?: 'notebook' | 'sweep';
  waiting?: { code: string; message: string } | null;
  error?: string | null;
  reused?: boolean;
}

/** A pipeline record. */
export interface IPipeline {
  id: string;
  name: string;
  owner: string;
  status: 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';
  steps: { [name: string]: IPipelineStep };
  on_failure?: string;
  created_at: string;
  finished_at: string | null;
  rerun_of?: string | null;
}

export interface IPipelineList {
  pipelines: IPipeline[];
}
