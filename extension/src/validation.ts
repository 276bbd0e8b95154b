/**
 * The submit dialog's values (pure functions): its first values, validation field by
 * field (the form shows each message next to its field and recomputes them on every
 * change), the request of valid values, and the notebook's own GPU bounds.
 */
import {
  DEFAULT_PRIORITY,
  MAX_GPUS_NAME,
  MAX_PRIORITY,
  MIN_GPUS_NAME,
  MIN_PRIORITY
} from './constants';
import { inferType, inputToValue, valueToInput } from './params';
import { INotebookParameter, ISubmitRequest, JSONValue } from './types';

/** The raw inputs of the submit dialog. */
export interface IFormValues {
  params: IParamField[];
  name: string;
  minGpus: string;
  maxGpus: string;
  priority: string;
  timeout: string;
  kernel: string;
}

export interface IParamField {
  name: string;
  type: string;
  input: string | boolean;
  help?: string;
  /** Set by a job field instead ("minGpus"/"maxGpus"): one knob for both. */
  mirrors?: 'minGpus' | 'maxGpus';
}

/** Field key -> message; keys are job fields or `param:NAME`. */
export type FieldErrors = { [field: string]: string };

/**
 * The dialog's first values: a field per notebook parameter (`values` replacing the
 * notebook's defaults; the GPU parameters mirror the GPU fields), the notebook's GPU
 * bounds (one bound alone stands for both), the default priority, then `options`.
 */
export function initialValues(
  parameters: INotebookParameter[],
  defaultName: string,
  gpus: IGpuBounds | null,
  replace: {
    values?: { [name: string]: JSONValue };
    options?: Partial<Omit<IFormValues, 'params'>>;
  } = {}
): IFormValues {
  const values = replace.values ?? {};
  const params: IParamField[] = parameters.map(p => {
    const type = String(p.type || inferType(p.value ?? null));
    const value = p.name in values ? values[p.name] : (p.value ?? null);
    const field: IParamField = {
      name: p.name,
      type,
      input: valueToInput(type, value),
      help: p.help ?? undefined
    };
    if (gpus?.minParam === p.name) {
      field.mirrors = 'minGpus';
    } else if (gpus?.maxParam === p.name) {
      field.mirrors = 'maxGpus';
    }
    return field;
  });
  let min = gpus?.min ?? 0;
  let max = gpus?.max ?? null;
  if (max === null) {
    max = min;
  } else if (gpus?.min === null || gpus?.min === undefined) {
    min = Math.min(min, max);
  }
  return {
    params,
    name: defaultName,
    minGpus: String(min),
    maxGpus: String(max),
    priority: String(DEFAULT_PRIORITY),
    timeout: '',
    kernel: '',
    ...(replace.options ?? {})
  };
}

/**
 * Why `text` is not a whole number in [min, max] (null if it is).  `label` names the
 * field in the message.
 */
export function wholeNumberError(
  text: string,
  label: string,
  min: number,
  max?: number
): string | null {
  const trimmed = text.trim();
  const range = max === undefined ? `≥ ${min}` : `between ${min} and ${max}`;
  if (!/^[-+]?\d+$/.test(trimmed)) {
    const value = Number(trimmed);
    if (trimmed !== '' && Number.isFinite(value)) {
      return `${label} must be a whole number ${range} (${trimmed} is not whole).`;
    }
    return `${label} must be a whole number ${range}; "${trimmed}" is not a number.`;
  }
  const value = parseInt(trimmed, 10);
  if (value < min || (max !== undefined && value > max)) {
    return `${label} must be ${range}, not ${value}.`;
  }
  return null;
}

/** Why `text` is not a valid priority (null if it is). */
export function priorityError(text: string): string | null {
  return wholeNumberError(text, 'Priority', MIN_PRIORITY, MAX_PRIORITY);
}

/** Every invalid field of the form, with why. */
export function validate(values: IFormValues): FieldErrors {
  const errors: FieldErrors = {};
  for (const p of values.params) {
    if (p.mirrors) {
      continue;
    }
    try {
      inputToValue(p.name, p.type, p.input);
    } catch (error) {
      errors[`param:${p.name}`] = (error as Error).message;
    }
  }
  const gpus: { [key: string]: number | null } = {};
  for (const [key, label] of [
    ['minGpus', 'Min GPUs'],
    ['maxGpus', 'Max GPUs']
  ] as const) {
    const text = values[key];
    if (text.trim() === '') {
      gpus[key] = 0;
      continue;
    }
    const problem = wholeNumberError(text, label, 0);
    if (problem) {
      errors[key] = problem;
      gpus[key] = null;
    } else {
      gpus[key] = parseInt(text.trim(), 10);
    }
  }
  if (
    gpus.minGpus !== null &&
    gpus.maxGpus !== null &&
    gpus.minGpus > gpus.maxGpus
  ) {
    errors.minGpus = `Min GPUs (${gpus.minGpus}) cannot be more than Max GPUs (${gpus.maxGpus}).`;
  }
  if (values.priority.trim() !== '') {
    const problem = priorityError(values.priority);
    if (problem) {
      errors.priority = problem;
    }
  }
  if (values.timeout.trim() !== '') {
    const timeout = Number(values.timeout.trim());
    if (!Number.isFinite(timeout) || timeout <= 0) {
      errors.timeout = `Timeout must be a positive number of seconds (or empty for none); "${values.timeout.trim()}" is not.`;
    }
  }
  return errors;
}

/**
 * The POST /jobs body of valid `values` (call `validate` first: this assumes no errors).
 */
export function toRequest(notebook: string, values: IFormValues): ISubmitRequest {
  const whole = (text: string, fallback: number) =>
    text.trim() === '' ? fallback : parseInt(text.trim(), 10);
  const minGpus = whole(values.minGpus, 0);
  const maxGpus = whole(values.maxGpus, 0);
  const parameters: { [key: string]: JSONValue } = {};
  for (const p of values.params) {
    if (p.mirrors === 'minGpus') {
      parameters[p.name] = minGpus;
    } else if (p.mirrors === 'maxGpus') {
      parameters[p.name] = maxGpus;
    } else {
      parameters[p.name] = inputToValue(p.name, p.type, p.input);
    }
  }
  const request: ISubmitRequest = {
    notebook,
    parameters,
    min_gpus: minGpus,
    max_gpus: maxGpus,
    priority: whole(values.priority, DEFAULT_PRIORITY)
  };
  const name = values.name.trim();
  if (name) {
    request.name = name;
  }
  if (values.timeout.trim() !== '') {
    request.timeout = Number(values.timeout.trim());
  }
  const kernel = values.kernel.trim();
  if (kernel) {
    request.kernel = kernel;
  }
  return request;
}

/** GPU bounds a notebook states for itself, and the parameters that carry them. */
export interface IGpuBounds {
  min: number | null;
  max: number | null;
  /** Parameter names (as written) that are set from the dialog's GPU fields. */
  minParam: string | null;
  maxParam: string | null;
  /** Where the bounds come from, for the dialog's hint. */
  source: string | null;
}

function wholeOrNull(value: unknown): number | null {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0
    ? value
    : null;
}

/**
 * The GPU bounds of a notebook: `metadata.nbrunner.{min_gpus, max_gpus}` if present,
 * else parameters named MIN_GPUS / MAX_GPUS (any case) in its `parameters` cell.
 */
export function gpuBounds(
  parameters: INotebookParameter[],
  metadata: { [key: string]: unknown } | null | undefined
): IGpuBounds {
  const find = (wanted: string) =>
    parameters.find(p => p.name.toLowerCase() === wanted) ?? null;
  const minParam = find(MIN_GPUS_NAME);
  const maxParam = find(MAX_GPUS_NAME);
  const bounds: IGpuBounds = {
    min: wholeOrNull(minParam?.value),
    max: wholeOrNull(maxParam?.value),
    minParam: wholeOrNull(minParam?.value) !== null ? minParam!.name : null,
    maxParam: wholeOrNull(maxParam?.value) !== null ? maxParam!.name : null,
    source: null
  };
  if (bounds.min !== null || bounds.max !== null) {
    bounds.source = 'the parameters cell';
  }
  const own = (metadata?.nbrunner ?? null) as { [key: string]: unknown } | null;
  if (own && typeof own === 'object') {
    const min = wholeOrNull(own[MIN_GPUS_NAME]);
    const max = wholeOrNull(own[MAX_GPUS_NAME]);
    if (min !== null || max !== null) {
      bounds.min = min ?? bounds.min;
      bounds.max = max ?? bounds.max;
      bounds.source = 'the notebook metadata (nbrunner)';
    }
  }
  return bounds;
}
