/**
 * The models part of the REST API: the registry (`models`) and the model servers the
 * Jupyter server runs (`models/serving`).
 */
import { requestAPI } from './api';

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

const enc = encodeURIComponent;

export function listModels(): Promise<IModelList> {
  return requestAPI<IModelList>('models');
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
