/**
 * Constants shared by the frontend: job statuses, priority bounds, model names, poll
 * intervals, and the names under which a notebook states its GPU bounds.  The statuses,
 * priorities and model names are the server's (nbrunner.core.records,
 * nbrunner.serving.registry): tests/server/test_extension_constants.py checks them.
 */

/** Every job status, in lifecycle order. */
export const STATUSES = [
  'queued',
  'running',
  'completed',
  'failed',
  'cancelled'
] as const;

/** Statuses after which a job never changes again. */
export const FINISHED_STATUSES: ReadonlyArray<string> = [
  'completed',
  'failed',
  'cancelled'
];

/** Statuses a job can be cancelled in. */
export const CANCELLABLE_STATUSES: ReadonlyArray<string> = ['queued', 'running'];

/** Status of a sweep trial that has no job yet (leaderboard only). */
export const PENDING_TRIAL = 'pending';

/** Job priorities: whole numbers in [MIN_PRIORITY, MAX_PRIORITY]. */
export const MIN_PRIORITY = 1;
export const MAX_PRIORITY = 10000;
export const DEFAULT_PRIORITY = 5000;

/** Model names the server accepts. */
export const MODEL_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** Poll intervals (ms) of the views, while they are visible. */
export const JOBS_POLL_MS = 1500;
export const CLUSTER_POLL_MS = 2000;
export const LOG_TAIL_MS = 1000;
export const MODELS_POLL_MS = 3000;

/**
 * A notebook's own GPU bounds: parameters of its `parameters` cell with these names
 * (any case), or `metadata.nbrunner.{min_gpus, max_gpus}` (which wins).
 */
export const MIN_GPUS_NAME = 'min_gpus';
export const MAX_GPUS_NAME = 'max_gpus';
