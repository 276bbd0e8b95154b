/**
 * The cluster view: GPU slots per host with the job holding each, and the
 * GPU allocation of every job over time (plain SVG, stacked step areas).
 */
import { Message } from '@lumino/messaging';
import * as React from 'react';

import { errorMessage, getCluster, getTimeline, listJobs } from './api';
import { colorMap, formatDuration, parseTime } from './format';
import { CLUSTER_POLL_MS } from './constants';
import { clusterIcon } from './icons';
import { PollingWidget } from './polling-widget';
import { ICluster, IJob, ITimelineJob } from './types';

const RANGES: Array<{ label: string; ms: number | null }> = [
  { label: 'all', ms: null },
  { label: 'last 5 min', ms: 5 * 60 * 1000 },
  { label: 'last 15 min', ms: 15 * 60 * 1000 },
  { label: 'last hour', ms: 60 * 60 * 1000 },
  { label: 'last 6 hours', ms: 6 * 60 * 60 * 1000 },
  { label: 'last day', ms: 24 * 60 * 60 * 1000 }
];

export class ClusterView extends PollingWidget {
  constructor(options: ClusterView.IOptions = {}) {
    super(options.interval ?? CLUSTER_POLL_MS);
    this.id = 'nbrunner-cluster-view';
    this.addClass('nbrunner-ClusterView');
    this.node.dataset.testid = 'nbrunner-cluster-view';
    this.title.label = 'nbrunner cluster';
    this.title.caption = 'nbrunner cluster: GPU slots and allocation timeline';
    this.title.icon = clusterIcon;
    this.title.closable = true;
  }

  /** Cluster slots, GPU timeline, and the jobs' names. */
  protected async fetch(): Promise<void> {
    const [cluster, timeline, jobs] = await Promise.allSettled([
      getCluster(),
      getTimeline(),
      listJobs()
    ]);
    if (cluster.status === 'fulfilled') {
      this._cluster = cluster.value;
      this._clusterError = null;
    } else {
      this._clusterError = errorMessage(cluster.reason);
    }
    if (timeline.status === 'fulfilled') {
      this._timeline = Array.isArray(timeline.value?.jobs) ? timeline.value.jobs : [];
      this._timelineError = null;
    } else {
      this._timelineError = errorMessage(timeline.reason);
    }
    if (jobs.status === 'fulfilled' && Array.isArray(jobs.value?.jobs)) {
      this._jobs = new Map(jobs.value.jobs.map(j => [j.id, j]));
    }
    this._loaded = true;
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    if (typeof ResizeObserver !== 'undefined' && !this._observer) {
      this._observer = new ResizeObserver(() => this._measure());
      this._observer.observe(this.node);
    }
    this._measure();
  }

  protected onBeforeDetach(msg: Message): void {
    this._observer?.disconnect();
    this._observer = null;
    super.onBeforeDetach(msg);
  }

  /** Draw the chart at the width it is shown at, so its text stays legible. */
  private _measure(): void {
    const width = Math.round(this.node.clientWidth);
    if (width > 0 && Math.abs(width - this._width) > 8) {
      this._width = width;
      this.update();
    }
  }

  protected render(): React.ReactElement {
    const cluster = this._cluster;
    const timeline = this._timeline;
    const ids: string[] = timeline.map(j => j.id);
    for (const host of cluster?.hosts ?? []) {
      for (const slot of host.slots ?? []) {
        if (slot.job) {
          ids.push(slot.job);
        }
      }
    }
    const colors = colorMap(ids);
    const names = new Map<string, string>();
    for (const j of timeline) {
      names.set(j.id, j.name);
    }
    for (const [id, job] of this._jobs) {
      names.set(id, job.name);
    }
    const range = RANGES[this._range] ?? RANGES[0];
    return (
      <div className="nbrunner-ClusterView-content">
        <h2 className="nbrunner-ClusterView-title">nbrunner cluster</h2>
        {!this._loaded && <p className="nbrunner-Empty">Loading…</p>}
        {this._clusterError && (
          <div
            className="nbrunner-Banner nbrunner-Banner-error"
            data-testid="nbrunner-cluster-error"
            role="alert"
          >
            <p>Cannot read the cluster: {this._clusterError}</p>
          </div>
        )}
        {cluster && (
          <div
            className="nbrunner-ClusterSummary"
            data-testid="nbrunner-cluster-view-summary"
          >
            <span>
              <strong>{cluster.gpus_free}</strong> of{' '}
              <strong>{cluster.gpus_total}</strong> GPUs free
            </span>
            <span>
              {(cluster.hosts ?? []).length} host
              {(cluster.hosts ?? []).length === 1 ? '' : 's'}
            </span>
            <span>
              policy <strong>{cluster.policy}</strong>
            </span>
          </div>
        )}

        <section
          className="nbrunner-ClusterView-section"
          aria-labelledby="nbrunner-hosts-heading"
        >
          <h3 id="nbrunner-hosts-heading">Slots per host</h3>
          {cluster && (cluster.hosts ?? []).length === 0 && (
            <p className="nbrunner-Empty" data-testid="nbrunner-hosts-empty">
              No worker has registered GPU slots. Start one with{' '}
              <code>nbrunner worker --gpus N</code> (or <code>nbrunner up</code>).
            </p>
          )}
          <div className="nbrunner-Hosts" data-testid="nbrunner-hosts">
            {(cluster?.hosts ?? []).map(host => {
              const busy = (host.slots ?? []).filter(s => s.job).length;
              return (
                <div
                  className="nbrunner-Host"
                  key={host.name}
                  data-testid="nbrunner-host"
                  data-host={host.name}
                >
                  <h4 className="nbrunner-Host-name">
                    {host.name}
                    <span className="nbrunner-Host-usage">
                      {busy}/{(host.slots ?? []).length} busy
                    </span>
                  </h4>
                  <ul className="nbrunner-Slots" aria-label={`Slots of ${host.name}`}>
                    {(host.slots ?? []).map(slot => {
                      const name = slot.job ? (names.get(slot.job) ?? slot.job) : null;
                      const label = slot.job
                        ? `Slot ${slot.index}: job ${name} (${slot.job})`
                        : `Slot ${slot.index}: free`;
                      return (
                        <li
                          key={slot.index}
                          className={
                            'nbrunner-Slot' + (slot.job ? ' nbrunner-mod-busy' : '')
                          }
                          data-testid="nbrunner-slot"
                          data-slot-index={slot.index}
                          data-job-id={slot.job ?? ''}
                          title={label}
                          aria-label={label}
                          style={
                            slot.job
                              ? ({
                                  '--nbrunner-slot-color': colors.get(slot.job)
                                } as React.CSSProperties)
                              : undefined
                          }
                        >
                          <span className="nbrunner-Slot-index">{slot.index}</span>
                          <span className="nbrunner-Slot-job">
                            {slot.job ? name : 'free'}
                          </span>
                        </li>
                      );
                    })}
                  </ul>
                </div>
              );
            })}
          </div>
        </section>

        <section
          className="nbrunner-ClusterView-section"
          aria-labelledby="nbrunner-timeline-heading"
        >
          <div className="nbrunner-ClusterView-sectionHead">
            <h3 id="nbrunner-timeline-heading">GPU allocation over time</h3>
            <label htmlFor="nbrunner-timeline-range">Range</label>
            <select
              id="nbrunner-timeline-range"
              className="nbrunner-Select"
              data-testid="nbrunner-timeline-range"
              value={this._range}
              onChange={e => {
                this._range = Number(e.target.value);
                this.update();
              }}
            >
              {RANGES.map((r, i) => (
                <option key={r.label} value={i}>
                  {r.label}
                </option>
              ))}
            </select>
          </div>
          {this._timelineError && (
            <div
              className="nbrunner-Banner nbrunner-Banner-warn"
              data-testid="nbrunner-timeline-error"
              role="alert"
            >
              <p>Cannot read the GPU timeline: {this._timelineError}</p>
            </div>
          )}
          <TimelineChart
            jobs={timeline}
            colors={colors}
            names={names}
            capacity={cluster?.gpus_total ?? 0}
            now={Date.now()}
            windowMs={range.ms}
            width={chartWidth(this._width)}
          />
        </section>
      </div>
    );
  }

  private _loaded = false;
  private _cluster: ICluster | null = null;
  private _clusterError: string | null = null;
  private _timeline: ITimelineJob[] = [];
  private _timelineError: string | null = null;
  private _jobs = new Map<string, IJob>();
  private _range = 0;
  private _width = 0;
  private _observer: ResizeObserver | null = null;
}

export namespace ClusterView {
  export interface IOptions {
    interval?: number;
  }
}

interface ISeries {
  id: string;
  name: string;
  points: Array<{ t: number; gpus: number }>;
}

/** GPUs held by a series at time t (a step function, 0 before its first point). */
function valueAt(series: ISeries, t: number): number {
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

function timeTicks(start: number, end: number, maxTicks = 6): number[] {
  const span = Math.max(1, end - start);
  const step =
    TIME_STEPS.find(s => span / s <= maxTicks) ??
    TIME_STEPS[TIME_STEPS.length - 1];
  // Align ticks on local clock boundaries.
  const offset = -new Date(start).getTimezoneOffset() * 60000;
  const ticks: number[] = [];
  for (
    let t = Math.ceil((start + offset) / step) * step - offset;
    t <= end;
    t += step
  ) {
    ticks.push(t);
  }
  return ticks;
}

function formatTick(t: number, span: number): string {
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

function countTicks(max: number): number[] {
  const steps = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000];
  const step = steps.find(s => max / s <= 5) ?? 1000;
  const ticks: number[] = [];
  for (let v = 0; v <= max; v += step) {
    ticks.push(v);
  }
  return ticks;
}

/** Chart width for a container this wide (padding taken off, kept readable). */
function chartWidth(container: number): number {
  if (container <= 0) {
    return 760;
  }
  return Math.max(320, Math.min(1100, container - 40));
}

const H = 240;
const M = { left: 40, right: 16, top: 12, bottom: 28 };

export function TimelineChart(props: {
  jobs: ITimelineJob[];
  colors: Map<string, string>;
  names: Map<string, string>;
  capacity: number;
  now: number;
  windowMs: number | null;
  width?: number;
}): React.ReactElement {
  const W = props.width ?? 760;
  const series: ISeries[] = [];
  for (const job of props.jobs) {
    const points = (job.points ?? [])
      .map(p => ({ t: parseTime(p.t), gpus: Number(p.gpus) || 0 }))
      .filter((p): p is { t: number; gpus: number } => p.t !== null)
      .sort((a, b) => a.t - b.t);
    if (points.length > 0) {
      series.push({ id: job.id, name: job.name || job.id, points });
    }
  }
  if (series.length === 0) {
    return (
      <p className="nbrunner-Empty" data-testid="nbrunner-timeline-empty">
        No GPU allocation recorded yet.
      </p>
    );
  }
  const lastPoint = Math.max(
    ...series.map(s => s.points[s.points.length - 1].t)
  );
  const firstPoint = Math.min(...series.map(s => s.points[0].t));
  const end = Math.max(props.now, lastPoint);
  let start = props.windowMs !== null ? end - props.windowMs : firstPoint;
  if (end - start < 1000) {
    start = end - 60000;
  }

  // Change times inside the window, plus its two ends.
  const times = new Set<number>([start, end]);
  for (const s of series) {
    for (const p of s.points) {
      if (p.t > start && p.t < end) {
        times.add(p.t);
      }
    }
  }
  const ts = Array.from(times).sort((a, b) => a - b);
  // values[j][i]: GPUs of series j on [ts[i], ts[i+1]).
  const values = series.map(s => ts.slice(0, -1).map(t => valueAt(s, t)));
  const stackMax = Math.max(
    1,
    ...ts.slice(0, -1).map((_, i) => values.reduce((sum, v) => sum + v[i], 0))
  );
  const yMax = Math.max(stackMax, props.capacity, 1);

  const plotW = W - M.left - M.right;
  const plotH = H - M.top - M.bottom;
  const x = (t: number) => M.left + ((t - start) / (end - start)) * plotW;
  const y = (v: number) => M.top + plotH - (v / yMax) * plotH;
  const f = (n: number) => n.toFixed(1);

  const base = ts.slice(0, -1).map(() => 0);
  const areas: React.ReactElement[] = [];
  const visible: ISeries[] = [];
  series.forEach((s, j) => {
    const v = values[j];
    if (v.every(n => n === 0)) {
      return;
    }
    visible.push(s);
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
    const d = `M${upper.join('L')}L${lower.reverse().join('L')}Z`;
    const color = props.colors.get(s.id) ?? '#888';
    const current = valueAt(s, end);
    areas.push(
      <path
        key={s.id}
        className="nbrunner-Timeline-series"
        data-testid="nbrunner-timeline-series"
        data-job-id={s.id}
        d={d}
        fill={color}
        fillOpacity={0.75}
        stroke={color}
        strokeWidth={1}
      >
        <title>{`${s.name} (${s.id}): ${current} GPU${current === 1 ? '' : 's'} now, up to ${Math.max(...v)}`}</title>
      </path>
    );
  });

  const xTicks = timeTicks(start, end, Math.max(2, Math.floor(W / 110)));
  const yTicks = countTicks(yMax);
  const span = end - start;
  return (
    <div className="nbrunner-Timeline" data-testid="nbrunner-timeline">
      <svg
        className="nbrunner-Timeline-svg"
        width={W}
        height={H}
        viewBox={`0 0 ${W} ${H}`}
        role="img"
        aria-label={`GPU allocation per job over the last ${formatDuration(span)}; ${visible.length} job${visible.length === 1 ? '' : 's'}`}
      >
        <g className="nbrunner-Timeline-grid">
          {yTicks.map(v => (
            <g key={`y${v}`}>
              <line x1={M.left} x2={W - M.right} y1={y(v)} y2={y(v)} />
              <text x={M.left - 6} y={y(v)} textAnchor="end" dominantBaseline="middle">
                {v}
              </text>
            </g>
          ))}
        </g>
        <g className="nbrunner-Timeline-areas">{areas}</g>
        {props.capacity > 0 && (
          <g className="nbrunner-Timeline-capacity" data-testid="nbrunner-timeline-capacity">
            <line
              x1={M.left}
              x2={W - M.right}
              y1={y(props.capacity)}
              y2={y(props.capacity)}
            />
            <text x={W - M.right - 2} y={y(props.capacity) - 4} textAnchor="end">
              capacity {props.capacity}
            </text>
          </g>
        )}
        <g className="nbrunner-Timeline-axis" data-testid="nbrunner-timeline-axis">
          <line
            x1={M.left}
            x2={W - M.right}
            y1={M.top + plotH}
            y2={M.top + plotH}
          />
          <line x1={M.left} x2={M.left} y1={M.top} y2={M.top + plotH} />
          {xTicks.map(t => (
            <g key={`x${t}`}>
              <line x1={x(t)} x2={x(t)} y1={M.top + plotH} y2={M.top + plotH + 4} />
              <text x={x(t)} y={M.top + plotH + 16} textAnchor="middle">
                {formatTick(t, span)}
              </text>
            </g>
          ))}
          <text
            x={12}
            y={M.top + plotH / 2}
            textAnchor="middle"
            transform={`rotate(-90 12 ${M.top + plotH / 2})`}
          >
            GPUs
          </text>
        </g>
      </svg>
      <ul
        className="nbrunner-Timeline-legend"
        data-testid="nbrunner-timeline-legend"
        aria-label="Jobs in the timeline"
      >
        {visible.map(s => {
          const current = valueAt(s, end);
          return (
            <li
              key={s.id}
              data-testid="nbrunner-timeline-legend-item"
              data-job-id={s.id}
            >
              <span
                className="nbrunner-Timeline-swatch"
                style={{ background: props.colors.get(s.id) }}
                aria-hidden="true"
              />
              <span className="nbrunner-Timeline-name">
                {props.names.get(s.id) ?? s.name}
              </span>
              <code>{s.id}</code>
              <span className="nbrunner-Timeline-now">
                {current} GPU{current === 1 ? '' : 's'} now
              </span>
            </li>
          );
        })}
      </ul>
    </div>
  );
}
