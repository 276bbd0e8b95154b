/**
 * The nbrunner REST API's wire format, without I/O: query strings, JSON request bodies
 * (whole floats kept as floats), and an answer read into its data or an `ApiError`.
 */
import { IScheduleUpdate, ISubmitRequest, JSONValue } from './types';

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
  return error instanceof Error ? error.message : String(error);
}

/** `?a=1&b=x` of the given values (undefined and empty ones left out), or ''. */
export function query(params: { [key: string]: string | number | undefined }): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === '') {
      continue;
    }
    parts.push(`${encodeURIComponent(key)}=${encodeURIComponent(String(value))}`);
  }
  return parts.length ? `?${parts.join('&')}` : '';
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
  const body = JSON.stringify(request.parameters ? { ...request, parameters } : request);
  return marked ? body.replace(new RegExp(`"${FLOAT_TOKEN}(-?\\d+)"`, 'g'), '$1.0') : body;
}

/** The POST /jobs/{id}/rerun body: the parameters to merge over the old ones, if any. */
export function rerunBody(
  parameters?: { [key: string]: JSONValue },
  floats: ReadonlyArray<string> = []
): string {
  return serializeSubmit({ notebook: '', parameters }, floats).replace(
    /^\{"notebook":"",?/,
    '{'
  );
}

/** What the server answered: HTTP status, its reason phrase and the body's text. */
export interface IAnswer {
  status: number;
  statusText: string;
  text: string;
}

/**
 * The JSON data of an answer to `API_PREFIX/path`.  Throws an `ApiError` with the
 * server's message (`message`, else `reason`) for an error status, one that says the
 * nbrunner server extension is missing for an HTML 404, and one for a body not JSON.
 */
export function readAnswer<T>(path: string, answer: IAnswer): T {
  const { status, statusText, text } = answer;
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
  if (status < 200 || status >= 300) {
    if (status === 404 && !isJSON) {
      throw new ApiError(
        'The nbrunner API is not available on this Jupyter server ' +
          `(${status} ${statusText || 'Not Found'} for ${API_PREFIX}/${path}). ` +
          'Is the nbrunner server extension installed and enabled?',
        status,
        true
      );
    }
    const said = (key: string) =>
      isJSON && data && typeof data[key] === 'string' && data[key] ? data[key] : null;
    throw new ApiError(
      said('message') ??
        said('reason') ??
        `${status} ${statusText || 'error'} from ${API_PREFIX}/${path}`,
      status
    );
  }
  if (!isJSON && text.length > 0) {
    throw new ApiError(`Unexpected non-JSON answer from ${API_PREFIX}/${path}`, status);
  }
  return data as T;
}
