/**
 * Formatting helpers shared by the panel, the log and the cluster views.
 */
import { IJob, JSONValue } from './types';

/** Parse an ISO-8601 timestamp (UTC); null when missing or invalid. */
export function parseTime(value: string | null | undefined): number | null {
  if (!value) {
    return null;
  }
  // Timestamps without a zone are UTC by contract.
  const text = /[zZ]|[+-]\d\d:?\d\d$/.test(value) ? value : `${value}Z`;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? null : ms;
}

/** "1h 02m", "3m 05s", "12s". */
export function formatDuration(ms: number): string {
  const total = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const pad = (n: number) => String(n).padStart(2, '0');
  if (h > 0) {
    return `${h}h ${pad(m)}m`;
  }
  if (m > 0) {
    return `${m}m ${pad(s)}s`;
  }
  return `${s}s`;
}

/**
 * A time relative to `now` (both in ms): "in 3s", "12 min ago", "in 2 h", "3 d ago". A time
 * known to be `past` (a run that happened) never reads "in ...": within a second of `now`, or
 * ahead of this browser's clock, it is "0s ago".
 */
export function relativeTime(at: number, now: number, past = false): string {
  const delta = past ? Math.min(0, Math.round((at - now) / 1000)) : Math.round((at - now) / 1000);
  const span = Math.abs(delta);
  const text =
    span < 60
      ? `${span}s`
      : span < 3600
        ? `${Math.round(span / 60)} min`
        : span < 86400 * 2
          ? `${Math.round(span / 3600)} h`
          : `${Math.round(span / 86400)} d`;
  return delta > 0 || (delta === 0 && !past) ? `in ${text}` : `${text} ago`;
}

/**
 * Elapsed time of a job: run time when it started, waiting time while queued.
 */
export function jobElapsed(
  job: IJob,
  now: number = Date.now()
): { text: string; title: string } {
  const created = parseTime(job.created_at);
  const started = parseTime(job.started_at);
  const finished = parseTime(job.finished_at);
  if (started !== null) {
    const end = finished ?? now;
    return {
      text: formatDuration(end - started),
      title: finished !== null ? 'Run time' : 'Running for'
    };
  }
  if (finished !== null && created !== null) {
    return { text: formatDuration(finished - created), title: 'Ended after' };
  }
  if (created !== null) {
    return { text: formatDuration(now - created), title: 'Queued for' };
  }
  return { text: '–', title: 'Elapsed time' };
}

/** Metric names shown first, in this order, when present. */
const PREFERRED_METRICS = [
  'accuracy',
  'val_accuracy',
  'acc',
  'val_acc',
  'f1',
  'auc',
  'val_loss',
  'loss',
  'train_loss'
];

export function formatNumber(value: JSONValue): string {
  if (typeof value === 'number') {
    if (Number.isInteger(value)) {
      return String(value);
    }
    const abs = Math.abs(value);
    if (abs !== 0 && (abs < 1e-3 || abs >= 1e5)) {
      return value.toExponential(3);
    }
    return value.toFixed(4).replace(/0+$/, '').replace(/\.$/, '');
  }
  if (typeof value === 'string') {
    return value;
  }
  return JSON.stringify(value);
}

/** The most telling metric of a job: [name, formatted value], or null. */
export function latestMetric(job: IJob): [string, string] | null {
  const metrics = job.metrics;
  if (!metrics || typeof metrics !== 'object') {
    return null;
  }
  const keys = Object.keys(metrics).filter(
    k => typeof metrics[k] === 'number' || typeof metrics[k] === 'string'
  );
  if (keys.length === 0) {
    return null;
  }
  const key =
    PREFERRED_METRICS.find(name => keys.includes(name)) ??
    keys.find(k => !['epoch', 'step', 'steps'].includes(k)) ??
    keys[0];
  return [key, formatNumber(metrics[key])];
}

export function metricsTitle(job: IJob): string {
  const metrics = job.metrics ?? {};
  return Object.entries(metrics)
    .map(([k, v]) => `${k}: ${formatNumber(v)}`)
    .join('\n');
}

/**
 * A categorical palette that reads on light and dark backgrounds.
 */
export const PALETTE = [
  '#1f77b4',
  '#ff7f0e',
  '#2ca02c',
  '#d62728',
  '#9467bd',
  '#8c564b',
  '#e377c2',
  '#17becf',
  '#bcbd22',
  '#7f7f7f',
  '#393b79',
  '#ad494a'
];

/** Assign palette colors to ids, in the given order. */
export function colorMap(ids: string[]): Map<string, string> {
  const map = new Map<string, string>();
  for (const id of ids) {
    if (!map.has(id)) {
      map.set(id, PALETTE[map.size % PALETTE.length]);
    }
  }
  return map;
}

export function formatParameters(
  parameters: { [key: string]: JSONValue } | null | undefined
): string {
  if (!parameters) {
    return '';
  }
  return Object.entries(parameters)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(', ');
}

/** A parameter value in at most 4 significant digits (0.1234, 3.2e-5), for narrow tables. */
export function shortValue(value: JSONValue): string {
  if (typeof value === 'number' && !Number.isInteger(value)) {
    const abs = Math.abs(value);
    if (abs !== 0 && (abs < 1e-3 || abs >= 1e5)) {
      return value.toExponential(2).replace(/\.?0+e/, 'e');
    }
    return String(Number(value.toPrecision(4)));
  }
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** Parameters on one short line: `lr=0.0123 hidden=64`. */
export function formatParametersShort(
  parameters: { [key: string]: JSONValue } | null | undefined
): string {
  if (!parameters) {
    return '';
  }
  return Object.entries(parameters)
    .map(([k, v]) => `${k}=${shortValue(v)}`)
    .join(' ');
}
