/**
 * The one module that calls the nbrunner REST API (`<base_url>nbrunner/api/...`): jobs,
 * sweeps, schedules, the cluster, and models with their servers.  What goes over the
 * wire (query strings, bodies, reading an answer) is in `wire.ts`.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import {
  IAccounts,
  ICluster,
  IJob,
  IJobList,
  DownloadFormat,
  ILogChunk,
  IMetrics,
  IModel,
  IModelList,
  IModelServer,
  IModelServerList,
  INotebookParameters,
  ISchedule,
  IScheduleList,
  IScheduleRequest,
  IScheduleUpdate,
  IPipeline,
  IPipelineList,
  JSONValue,
  ISubmitRequest,
  ISweep,
  ISweepRequest,
  ITimeline
} from './types';
import {
  API_PREFIX,
  ApiError,
  errorMessage,
  query,
  readAnswer,
  rerunBody,
  serializeSubmit
} from './wire';
import type { INotificationLogEntry, INotificationSettings } from './notifications';

export { ApiError, errorMessage };

/**
 * Call the nbrunner API. `path` is relative to `<base_url>nbrunner/api`
 * (already URL-encoded), `search` an optional query string starting with `?`.
 */
async function requestAPI<T>(
  path: string,
  init: RequestInit = {},
  search = ''
): Promise<T> {
  const settings = ServerConnection.makeSettings();
  const url = URLExt.join(settings.baseUrl, API_PREFIX, path) + search;
  if (init.body !== undefined && init.body !== null) {
    const headers = new Headers(init.headers ?? {});
    if (!headers.has('Content-Type')) {
      headers.set('Content-Type', 'application/json');
    }
    init = { ...init, headers };
  }
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    throw new ApiError(
      `Cannot reach the Jupyter server: ${errorMessage(error)}`,
      0,
      true
    );
  }
  return readAnswer<T>(path, {
    status: response.status,
    statusText: response.statusText,
    text: await response.text()
  });
}

const enc = encodeURIComponent;

export function listJobs(status?: string, limit?: number): Promise<IJobList> {
  return requestAPI<IJobList>('jobs', {}, query({ status, limit }));
}

/** A page of jobs: `params` from `pageParams` (job-table.ts). */
export function listJobsPage(params: {
  [key: string]: string | number | undefined;
}): Promise<IJobList> {
  return requestAPI<IJobList>('jobs', {}, query(params));
}

export function getJob(id: string): Promise<IJob> {
  return requestAPI<IJob>(`jobs/${enc(id)}`);
}

export function submitJob(
  request: ISubmitRequest,
  floats: ReadonlyArray<string> = []
): Promise<IJob> {
  return requestAPI<IJob>('jobs', {
    method: 'POST',
    body: serializeSubmit(request, floats)
  });
}

export function setPriority(id: string, priority: number): Promise<IJob> {
  return requestAPI<IJob>(`jobs/${enc(id)}`, {
    method: 'PATCH',
    body: JSON.stringify({ priority })
  });
}

export function cancelJob(id: string): Promise<IJob> {
  return requestAPI<IJob>(`jobs/${enc(id)}`, { method: 'DELETE' });
}

export function getLog(id: string, offset: number): Promise<ILogChunk> {
  return requestAPI<ILogChunk>(`jobs/${enc(id)}/log`, {}, query({ offset }));
}

export function getCluster(): Promise<ICluster> {
  return requestAPI<ICluster>('cluster');
}

export function getTimeline(): Promise<ITimeline> {
  return requestAPI<ITimeline>('cluster/timeline');
}

/** The accounts sharing the GPUs (an empty list without an accounts file). */
export function getAccounts(): Promise<IAccounts> {
  return requestAPI<IAccounts>('accounts');
}

export function getSweep(id: string): Promise<ISweep> {
  return requestAPI<ISweep>(`sweeps/${enc(id)}`);
}

export function getNotebookParameters(
  path: string
): Promise<INotebookParameters> {
  return requestAPI<INotebookParameters>(
    'notebook-parameters',
    {},
    query({ path })
  );
}

export function submitSweep(request: ISweepRequest): Promise<ISweep> {
  return requestAPI<ISweep>('sweeps', {
    method: 'POST',
    body: JSON.stringify(request)
  });
}

export function listSchedules(): Promise<IScheduleList> {
  return requestAPI<IScheduleList>('schedules');
}

export function createSchedule(
  request: IScheduleRequest,
  floats: ReadonlyArray<string> = []
): Promise<ISchedule> {
  return requestAPI<ISchedule>('schedules', {
    method: 'POST',
    body: serializeSubmit(request, floats)
  });
}

export function updateSchedule(
  id: string,
  update: IScheduleUpdate,
  floats: ReadonlyArray<string> = []
): Promise<ISchedule> {
  return requestAPI<ISchedule>(`schedules/${enc(id)}`, {
    method: 'PATCH',
    body: serializeSubmit(update, floats)
  });
}

export async function deleteSchedule(id: string): Promise<void> {
  await requestAPI<null>(`schedules/${enc(id)}`, { method: 'DELETE' });
}

/** The runs (jobs) of a schedule, newest first. */
export function listScheduleRuns(id: string, limit = 50): Promise<IJobList> {
  return requestAPI<IJobList>('jobs', {}, query({ schedule: id, limit }));
}

export function getMetrics(id: string): Promise<IMetrics> {
  return requestAPI<IMetrics>(`jobs/${enc(id)}/metrics`);
}

/** A new job from the same input snapshot, `parameters` merged over the old ones. */
export function rerunJob(
  id: string,
  parameters?: { [key: string]: JSONValue },
  floats: ReadonlyArray<string> = []
): Promise<IJob> {
  return requestAPI<IJob>(`jobs/${enc(id)}/rerun`, {
    method: 'POST',
    body: rerunBody(parameters, floats)
  });
}

/** Remove a finished job's record and directory. */
export async function deleteJob(id: string): Promise<void> {
  await requestAPI<null>(`jobs/${enc(id)}`, { method: 'DELETE' }, '?purge=true');
}

/** URL of a job's output as an attachment (the browser's login cookie authenticates it). */
export function downloadUrl(id: string, format: DownloadFormat): string {
  const settings = ServerConnection.makeSettings();
  return (
    URLExt.join(settings.baseUrl, API_PREFIX, `jobs/${enc(id)}/download`) +
    query({ format })
  );
}

export function listModels(): Promise<IModelList> {
  return requestAPI<IModelList>('models');
}

/** Which of these jobs saved a model (they can be registered). */
export async function jobsWithModel(ids: string[]): Promise<string[]> {
  if (ids.length === 0) {
    return [];
  }
  const answer = await requestAPI<IModelList>('models', {}, query({ jobs: ids.join(',') }));
  return answer.jobs_with_model ?? [];
}

/** Register the model job `job` saved as the next version of `name`. */
export function registerModel(job: string, name: string): Promise<IModel> {
  return requestAPI<IModel>('models', {
    method: 'POST',
    body: JSON.stringify({ job, name })
  });
}

export function listModelServers(): Promise<IModelServerList> {
  return requestAPI<IModelServerList>('models/serving');
}

/** Serve `NAME[:VERSION]` (on `port`, or any free port). */
export function startModelServer(
  model: string,
  port?: number
): Promise<IModelServer> {
  return requestAPI<IModelServer>('models/serving', {
    method: 'POST',
    body: JSON.stringify(port === undefined ? { model } : { model, port })
  });
}

export function stopModelServer(name: string): Promise<null> {
  return requestAPI<null>(`models/serving/${enc(name)}`, { method: 'DELETE' });
}

/** Pipelines the caller sees, newest first. */
export function listPipelines(): Promise<IPipelineList> {
  return requestAPI<IPipelineList>('pipelines');
}

export function getPipeline(id: string): Promise<IPipeline> {
  return requestAPI<IPipeline>(`pipelines/${enc(id)}`);
}

/** Run the pipeline file at `path` (relative to the server root). */
export function runPipelineFile(path: string): Promise<IPipeline> {
  return requestAPI<IPipeline>('pipelines', {
    method: 'POST',
    body: JSON.stringify({ file: path })
  });
}

export function cancelPipeline(id: string): Promise<IPipeline> {
  return requestAPI<IPipeline>(`pipelines/${enc(id)}`, { method: 'DELETE' });
}

/** A new pipeline reusing the completed steps before `from` (every completed step: null). */
export function rerunPipeline(id: string, from: string | null = null): Promise<IPipeline> {
  return requestAPI<IPipeline>(`pipelines/${enc(id)}/rerun`, {
    method: 'POST',
    body: JSON.stringify(from ? { from } : {})
  });
}

/** The caller's notification settings (`GET /me/notifications`). */
export function getNotifications(): Promise<INotificationSettings> {
  return requestAPI<INotificationSettings>('me/notifications');
}

/** Keep the caller's notification settings; the server refuses a target it does not allow (400). */
export function putNotifications(settings: INotificationSettings): Promise<INotificationSettings> {
  return requestAPI<INotificationSettings>('me/notifications', {
    method: 'PUT',
    body: JSON.stringify(settings)
  });
}

/** The caller's notification deliveries, newest first. */
export function getNotificationLog(): Promise<{ log: INotificationLogEntry[] }> {
  return requestAPI<{ log: INotificationLogEntry[] }>('me/notifications/log');
}
