/**
 * The cluster view (main area): GPU slots per host with the job holding each, and the
 * GPU allocation of every job over time.  Refreshed by a Poller while visible.
 */
import { Message } from '@lumino/messaging';
import * as React from 'react';

import { errorMessage, getCluster, getTimeline, listJobs } from '../api';
import { CLUSTER_POLL_MS } from '../constants';
import { colorMap } from '../format';
import { clusterIcon } from '../icons';
import { PollingWidget } from '../polling-widget';
import { chartWidth, RANGES } from '../timeline';
import { ICluster, IJob, ITimelineJob } from '../types';
import { Banner } from './Banner';
import { HostSlots } from './HostSlots';
import { TimelineChart } from './TimelineChart';

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
    return (
      <div className="nbrunner-ClusterView-content">
        <h2 className="nbrunner-ClusterView-title">nbrunner cluster</h2>
        {!this._loaded && <p className="nbrunner-Empty">Loading…</p>}
        {this._clusterError && (
          <Banner tone="error" testid="nbrunner-cluster-error">
            <p>Cannot read the cluster: {this._clusterError}</p>
          </Banner>
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

        {this._renderHosts(colors, names)}
        {this._renderTimeline(colors, names)}
      </div>
    );
  }

  private _renderHosts(
    colors: Map<string, string>,
    names: Map<string, string>
  ): React.ReactElement {
    const cluster = this._cluster;
    return (
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
          {(cluster?.hosts ?? []).map(host => (
            <HostSlots key={host.name} host={host} colors={colors} names={names} />
          ))}
        </div>
      </section>
    );
  }

  private _renderTimeline(
    colors: Map<string, string>,
    names: Map<string, string>
  ): React.ReactElement {
    const range = RANGES[this._range] ?? RANGES[0];
    return (
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
          <Banner tone="warn" testid="nbrunner-timeline-error">
            <p>Cannot read the GPU timeline: {this._timelineError}</p>
          </Banner>
        )}
        <TimelineChart
          jobs={this._timeline}
          colors={colors}
          names={names}
          capacity={this._cluster?.gpus_total ?? 0}
          now={Date.now()}
          windowMs={range.ms}
          width={chartWidth(this._width)}
        />
      </section>
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
