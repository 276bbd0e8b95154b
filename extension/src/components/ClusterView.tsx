/**
 * The cluster view (main area): GPU slots per host with the job holding each, and the
 * GPU allocation of every job over time.  The push channel brings the slots as they change;
 * the timeline is read again after them (at most every few seconds); it refreshes on a timer
 * only while the channel cannot be opened.
 */
import { Message } from '@lumino/messaging';
import * as React from 'react';

import { errorMessage, getCluster, getTimeline } from '../api';
import { PushChannel } from '../channel';
import { CLUSTER_POLL_MS } from '../constants';
import { Change } from '../events';
import { colorMap } from '../format';
import { clusterIcon } from '../icons';
import { PollingWidget } from '../polling-widget';
import { chartWidth, RANGES } from '../timeline';
import { ICluster, IJob, ITimelineJob } from '../types';
import { Banner } from './Banner';
import { HostSlots } from './HostSlots';
import { LiveStatus } from './LiveStatus';
import { TimelineChart } from './TimelineChart';

/** The timeline is read again at most this often while the slots change. */
const TIMELINE_MS = 2000;
/** Job names kept for the slots and the legend. */
const NAMES_KEPT = 2000;

export class ClusterView extends PollingWidget {
  constructor(options: ClusterView.IOptions) {
    super(options.interval ?? CLUSTER_POLL_MS);
    this._channel = options.channel;
    this.id = 'nbrunner-cluster-view';
    this.addClass('nbrunner-ClusterView');
    this.node.dataset.testid = 'nbrunner-cluster-view';
    this.title.label = 'nbrunner cluster';
    this.title.caption = 'nbrunner cluster: GPU slots and allocation timeline';
    this.title.icon = clusterIcon;
    this.title.closable = true;
    const channel = this._channel;
    channel.clusterChanged.connect((_, cluster) => {
      this._cluster = cluster;
      this._clusterError = null;
      this._readTimelineSoon();
      this._render();
    }, this);
    channel.jobChanged.connect((_, change) => this._name(change), this);
    channel.reloaded.connect(() => void this.refresh(), this);
    channel.modeChanged.connect(() => this._render(), this);
    this._ticker = window.setInterval(() => this._render(), 5000); // the timeline's "now" moves on
  }

  dispose(): void {
    window.clearInterval(this._ticker);
    window.clearTimeout(this._timelineTimer);
    super.dispose();
  }

  protected polls(): boolean {
    return this._channel.mode === 'polling';
  }

  /** Cluster slots and the GPU timeline. */
  protected async fetch(): Promise<void> {
    const [cluster] = await Promise.allSettled([getCluster(), this._readTimeline()]);
    if (cluster.status === 'fulfilled') {
      this._cluster = cluster.value;
      this._clusterError = null;
    } else {
      this._clusterError = errorMessage(cluster.reason);
    }
    this._loaded = true;
  }

  private async _readTimeline(): Promise<void> {
    this._timelineReadAt = Date.now();
    try {
      const timeline = await getTimeline();
      this._timeline = Array.isArray(timeline?.jobs) ? timeline.jobs : [];
      this._timelineError = null;
    } catch (error) {
      this._timelineError = errorMessage(error);
    }
  }

  /** Read the timeline again once the slots settle, at most every TIMELINE_MS. */
  private _readTimelineSoon(): void {
    if (this._timelineTimer) {
      return;
    }
    const wait = Math.max(250, this._timelineReadAt + TIMELINE_MS - Date.now());
    this._timelineTimer = window.setTimeout(() => {
      this._timelineTimer = 0;
      if (this.isVisible) {
        void this._readTimeline().then(() => this._render());
      }
    }, wait);
  }

  private _name(change: Change<IJob>): void {
    if (change.deleted) {
      return;
    }
    const { id, name } = change.record;
    this._names.delete(id);
    this._names.set(id, name);
    if (this._names.size > NAMES_KEPT) {
      this._names.delete(this._names.keys().next().value as string);
    }
  }

  private _render(): void {
    if (this.isVisible) {
      this.update();
    }
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
    for (const [id, name] of this._names) {
      names.set(id, name);
    }
    return (
      <div className="nbrunner-ClusterView-content">
        <h2 className="nbrunner-ClusterView-title">nbrunner cluster</h2>
        <LiveStatus mode={this._channel.mode} pollSeconds={CLUSTER_POLL_MS / 1000} />
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
  private _names = new Map<string, string>();
  private _channel: PushChannel;
  private _ticker = 0;
  private _timelineTimer = 0;
  private _timelineReadAt = 0;
  private _range = 0;
  private _width = 0;
  private _observer: ResizeObserver | null = null;
}

export namespace ClusterView {
  export interface IOptions {
    channel: PushChannel;
    /** Poll interval in ms while the channel cannot be opened. */
    interval?: number;
  }
}
