/**
 * The series a job's page draws: the GPUs it held since it was queued, and one series
 * per numeric metric it recorded.
 */
import { parseTime } from './format';
import { IMetricsRow, ITimelinePoint } from './types';

/** Keys of a metrics row that are not metrics (the x axis, bookkeeping). */
const NOT_METRICS = ['time', 'progress', 'step', 'steps', 'epoch', 'iteration'];
const X_KEYS = ['step', 'epoch', 'iteration'];

export interface IMetricSeries {
  name: string;
  x: string;
  points: Array<[number, number]>;
}

/** One series per numeric metric: against its row's step/epoch if any, else its count. */
export function metricSeries(rows: IMetricsRow[]): IMetricSeries[] {
  const series = new Map<string, IMetricSeries>();
  for (const row of rows) {
    if (!row || typeof row !== 'object') {
      continue;
    }
    const xKey = X_KEYS.find(k => typeof row[k] === 'number');
    for (const [name, value] of Object.entries(row)) {
      if (NOT_METRICS.includes(name) || typeof value !== 'number') {
        continue;
      }
      let s = series.get(name);
      if (!s) {
        s = { name, x: xKey ?? 'record', points: [] };
        series.set(name, s);
      }
      const x = xKey ? (row[xKey] as number) : s.points.length + 1;
      s.points.push([x, value]);
    }
  }
  return Array.from(series.values());
}

/**
 * GPUs held as [seconds since the first point, GPUs]; `xEnd` (seconds) carries the last
 * value on to `now` while the job runs (undefined once it has ended).
 */
export function gpuSeries(
  gpus: ITimelinePoint[],
  running: boolean,
  now: number
): { points: Array<[number, number]>; xEnd: number | undefined } {
  const t0 = parseTime(gpus[0]?.t);
  const points: Array<[number, number]> = [];
  for (const p of gpus) {
    const t = parseTime(p.t);
    if (t !== null && t0 !== null) {
      points.push([(t - t0) / 1000, p.gpus]);
    }
  }
  const xEnd =
    running && t0 !== null && points.length
      ? Math.max((now - t0) / 1000, points[points.length - 1][0])
      : undefined;
  return { points, xEnd };
}
