/**
 * The cluster view's GPU timelines, without I/O or rendering: each job's (or account's) GPUs
 * as a step series, stacked over a time window, with the axes' ticks and the areas' SVG paths.
 */
import { formatDuration, parseTime } from './format';
import { ITimelineJob } from './types';

/** The time windows the timeline offers (null: everything recorded). */
export const RANGES: ReadonlyArray<{ label: string; ms: number | null }> = [
  { label: 'all', ms: null },
  { label: 'last 5 min', ms: 5 * 60 * 1000 },
  { label: 'last 15 min', ms: 15 * 60 * 1000 },
  { label: 'last hour', ms: 60 * 60 * 1000 },
  { label: 'last 6 hours', ms: 6 * 60 * 60 * 1000 },
  { label: 'last day', ms: 24 * 60 * 60 * 1000 }
];

/** A job's GPUs over time: points sorted by time (ms). */
export interface ISeries {
  id: string;
  name: string;
  points: Array<{ t: number; gpus: number }>;
}

/** The series of the jobs that have at least one point with a valid time. */
export function timelineSeries(jobs: ITimelineJob[]): ISeries[] {
  const series: ISeries[] = [];
  for (const job of jobs) {
    const points = (job.points ?? [])
      .map(p => ({ t: parseTime(p.t), gpus: Number(p.gpus) || 0 }))
      .filter((p): p is { t: number; gpus: number } => p.t !== null)
      .sort((a, b) => a.t - b.t);
    if (points.length > 0) {
      series.push({ id: job.id, name: job.name || job.id, points });
    }
  }
  return series;
}

/** GPUs held by a series at time t (a step function, 0 before its first point). */
export function valueAt(series: ISeries, t: number): number {
  let value = 0;
  for (const p of series.points) {
    if (p.t <= t) {
      value = p.gpus;
    } else {
      break;
    }
  }
  return value;
}

const TIME_STEPS = [
  1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600,
  43200, 86400, 172800, 604800
].map(s => s * 1000);

/** At most about `maxTicks` round times in [start, end], on local clock boundaries. */
export function timeTicks(start: number, end: number, maxTicks = 6): number[] {
  const span = Math.max(1, end - start);
  const step =
    TIME_STEPS.find(s => span / s <= maxTicks) ?? TIME_STEPS[TIME_STEPS.length - 1];
  const offset = -new Date(start).getTimezoneOffset() * 60000;
  const ticks: number[] = [];
  for (let t = Math.ceil((start + offset) / step) * step - offset; t <= end; t += step) {
    ticks.push(t);
  }
  return ticks;
}

/** A tick's local time: with seconds under 10 minutes, with the date over 2 days. */
export function formatTick(t: number, span: number): string {
  const d = new Date(t);
  const pad = (n: number) => String(n).padStart(2, '0');
  const hm = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
  if (span > 2 * 86400000) {
    return `${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${hm}`;
  }
  if (span < 10 * 60000) {
    return `${hm}:${pad(d.getSeconds())}`;
  }
  return hm;
}

/** Round GPU counts from 0 to `max`, at most 6 of them. */
export function countTicks(max: number): number[] {
  const steps = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000];
  const step = steps.find(s => max / s <= 5) ?? 1000;
  const ticks: number[] = [];
  for (let v = 0; v <= max; v += step) {
    ticks.push(v);
  }
  return ticks;
}

/** Chart width for a container this wide (padding taken off, kept readable). */
export function chartWidth(container: number): number {
  if (container <= 0) {
    return 760;
  }
  return Math.max(320, Math.min(1100, container - 40));
}

/** Height of the chart and its margins around the plot. */
export const CHART_HEIGHT = 240;
export const MARGIN = { left: 40, right: 16, top: 12, bottom: 28 };

/** One job's band of the stacked chart. */
export interface ITimelineArea {
  series: ISeries;
  /** SVG path of the band. */
  d: string;
  /** GPUs at the window's end, and the most in the window. */
  current: number;
  peak: number;
}

/** What the chart draws, in SVG coordinates. */
export interface ITimelineLayout {
  width: number;
  start: number;
  end: number;
  /** The jobs holding GPUs in the window, bottom band first. */
  areas: ITimelineArea[];
  /** The y axis' top value: the highest stack or the capacity, at least 1. */
  yMax: number;
  xTicks: number[];
  yTicks: number[];
  x: (t: number) => number;
  y: (v: number) => number;
}

export interface ITimelineOptions {
  capacity: number;
  now: number;
  /** Length of the window ending now (null: from the first point). */
  windowMs: number | null;
  width: number;
}

/** GPUs of each series on [ts[i], ts[i+1]) for the change times inside [start, end]. */
function stepValues(series: ISeries[], start: number, end: number) {
  const times = new Set<number>([start, end]);
  for (const s of series) {
    for (const p of s.points) {
      if (p.t > start && p.t < end) {
        times.add(p.t);
      }
    }
  }
  const ts = Array.from(times).sort((a, b) => a - b);
  const values = series.map(s => ts.slice(0, -1).map(t => valueAt(s, t)));
  return { ts, values };
}

/** The stacked step areas of `series` (none: null), their axes and their scales. */
export function timelineLayout(
  series: ISeries[],
  options: ITimelineOptions
): ITimelineLayout | null {
  if (series.length === 0) {
    return null;
  }
  const width = options.width;
  const lastPoint = Math.max(...series.map(s => s.points[s.points.length - 1].t));
  const firstPoint = Math.min(...series.map(s => s.points[0].t));
  const end = Math.max(options.now, lastPoint);
  let start = options.windowMs !== null ? end - options.windowMs : firstPoint;
  if (end - start < 1000) {
    start = end - 60000;
  }
  const { ts, values } = stepValues(series, start, end);
  const stackMax = Math.max(
    1,
    ...ts.slice(0, -1).map((_, i) => values.reduce((sum, v) => sum + v[i], 0))
  );
  const yMax = Math.max(stackMax, options.capacity, 1);
  const plotW = width - MARGIN.left - MARGIN.right;
  const plotH = CHART_HEIGHT - MARGIN.top - MARGIN.bottom;
  const x = (t: number) => MARGIN.left + ((t - start) / (end - start)) * plotW;
  const y = (v: number) => MARGIN.top + plotH - (v / yMax) * plotH;
  const f = (n: number) => n.toFixed(1);

  const base = ts.slice(0, -1).map(() => 0);
  const areas: ITimelineArea[] = [];
  series.forEach((s, j) => {
    const v = values[j];
    if (v.every(n => n === 0)) {
      return;
    }
    const upper: string[] = [];
    const lower: string[] = [];
    for (let i = 0; i < ts.length - 1; i++) {
      const top = base[i] + v[i];
      upper.push(`${f(x(ts[i]))},${f(y(top))}`, `${f(x(ts[i + 1]))},${f(y(top))}`);
      lower.push(`${f(x(ts[i]))},${f(y(base[i]))}`, `${f(x(ts[i + 1]))},${f(y(base[i]))}`);
    }
    for (let i = 0; i < base.length; i++) {
      base[i] += v[i];
    }
    areas.push({
      series: s,
      d: `M${upper.join('L')}L${lower.reverse().join('L')}Z`,
      current: valueAt(s, end),
      peak: Math.max(...v)
    });
  });
  return {
    width,
    start,
    end,
    areas,
    yMax,
    xTicks: timeTicks(start, end, Math.max(2, Math.floor(width / 110))),
    yTicks: countTicks(yMax),
    x,
    y
  };
}

/** The chart's accessible label: the window and how many series (`noun`s: jobs, accounts) it shows. */
export function timelineLabel(layout: ITimelineLayout, noun = 'job'): string {
  const n = layout.areas.length;
  return `GPU allocation per ${noun} over the last ${formatDuration(layout.end - layout.start)}; ${n} ${noun}${n === 1 ? '' : 's'}`;
}
