import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import {
  ICluster,
  IJob,
  IJobList,
  DownloadFormat,
  ILogChunk,
  IMetrics,
  INotebookParameters,
  ISchedule,
  IScheduleList,
  IScheduleRequest,
  IScheduleUpdate,
  JSONValue,
  ISubmitRequest,
  ISweep,
  ISweepRequest,
  ITimeline
} from './types';

/** Path of the nbrunner REST API below the server's base URL. */
export const API_PREFIX = 'nbrunner/api';

/**
 * An error answered by the nbrunner API (or by the server when the API is absent).
 */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    /** True when the server has no nbrunner API at all (HTML 404, network error). */
    readonly unavailable = false
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** A readable message for anything thrown by the API helpers. */
export function errorMessage(error: unknown): string {
  if (error instanceof ApiError) {
    return error.message;
  }
  if (error instanceof Error) {
    return error.message;
  }
  return String(error);
}

function query(params: { [key: string]: string | number | undefined }): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === '') {
      continue;
    }
    parts.push(
      `${encodeURIComponent(key)}=${encodeURIComponent(String(value))}`
    );
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

/**
 * Call the nbrunner API. `path` is relative to `<base_url>nbrunner/api`
 * (already URL-encoded), `search` an optional query string starting with `?`.
 */
export async function requestAPI<T>(
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
  const text = await response.text();
  let data: any = null;
  let isJSON = false;
  if (text.length > 0) {
    try {
      data = JSON.parse(text);
      isJSON = true;
    } catch {
      data = text;
    }
  }
  if (!response.ok) {
    const message =
      isJSON && data && typeof data.message === 'string' && data.message
        ? data.message
        : isJSON && data && typeof data.reason === 'string' && data.reason
          ? data.reason
          : null;
    if (response.status === 404 && !isJSON) {
      throw new ApiError(
        'The nbrunner API is not available on this Jupyter server ' +
          `(${response.status} ${response.statusText || 'Not Found'} for ${API_PREFIX}/${path}). ` +
          'Is the nbrunner server extension installed and enabled?',
        response.status,
        true
      );
    }
    throw new ApiError(
      message ??
        `${response.status} ${response.statusText || 'error'} from ${API_PREFIX}/${path}`,
      response.status
    );
  }
  if (!isJSON && text.length > 0) {
    throw new ApiError(
      `Unexpected non-JSON answer from ${API_PREFIX}/${path}`,
      response.status
    );
  }
  return data as T;
}

const enc = encodeURIComponent;

export function listJobs(status?: string): Promise<IJobList> {
  return requestAPI<IJobList>('jobs', {}, query({ status }));
}

export function getJob(id: string): Promise<IJob> {
  return requestAPI<IJob>(`jobs/${enc(id)}`);
}

const FLOAT_TOKEN = '@@nbrunner-float@@';

/**
 * Serialize a submit request. Parameters named in `floats` whose value is a
 * whole number are written as `1.0`, not `1`, so that the server (and the
 * notebook) still see a float.
 */
export function serializeSubmit(
  request: ISubmitRequest | IScheduleUpdate,
  floats: ReadonlyArray<string> = []
): string {
  const parameters = { ...(request.parameters ?? {}) };
  let marked = false;
  for (const name of floats) {
    const value = parameters[name];
    if (typeof value === 'number' && Number.isInteger(value) && Math.abs(value) < 1e15) {
      parameters[name] = `${FLOAT_TOKEN}${value}`;
      marked = true;
    }
  }
  const body = JSON.stringify(
    request.parameters ? { ...request, parameters } : request
  );
  return marked
    ? body.replace(new RegExp(`"${FLOAT_TOKEN}(-?\\d+)"`, 'g'), '$1.0')
    : body;
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
export function listScheduleRuns(id: string, limit = 200): Promise<IJobList> {
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
  const body = serializeSubmit({ notebook: '', parameters }, floats).replace(
    /^\{"notebook":"",?/,
    '{'
  );
  return requestAPI<IJob>(`jobs/${enc(id)}/rerun`, { method: 'POST', body });
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
