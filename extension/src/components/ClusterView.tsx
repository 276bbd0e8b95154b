/**
 * The cluster view (main area): GPU slots per host with the job holding each, the GPU
 * allocation of every job over time, and, when the cluster has accounts, the accounts sharing
 * the GPUs with their GPUs over time.  The push channel brings the slots as they change; the
 * timeline is read again after them (at most every few seconds), the accounts after them and
 * after a job is queued or ends (at most every second), and once a minute while shown (their
 * GPU-hours grow with no change to announce it); it refreshes on a timer only while the
 * channel cannot be opened.
 */
import { Message } from '@lumino/messaging';
import * as React from 'react';

import { movesAccounts } from '../accounts';
import { ApiError, errorMessage, getAccounts, getCluster, getTimeline } from '../api';
import { PushChannel } from '../channel';
import { CLUSTER_POLL_MS } from '../constants';
import { Change } from '../events';
import { colorMap } from '../format';
import { clusterIcon } from '../icons';
import { PollingWidget } from '../polling-widget';
import { chartWidth, RANGES } from '../timeline';
import { IAccounts, ICluster, IJob, ITimelineJob } from '../types';
import { AccountsSection } from './AccountsSection';
import { Banner } from './Banner';
import { HostSlots } from './HostSlots';
import { LiveStatus } from './LiveStatus';
import { RangeSelect } from './RangeSelect';
import { TimelineChart } from './TimelineChart';

/** How often, at most, each is read again while changes keep coming. */
const EVERY_MS = { timeline: 2000, accounts: 1000 };
/** The accounts are read again this often while shown, for their GPU-hours. */
const USAGE_MS = 60000;
/** Job names (and statuses) kept for the slots, the legend and the accounts. */
const NAMES_KEPT = 2000;

type Reading = keyof typeof EVERY_MS;

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
      this._soon('timeline');
      this._soon('accounts');
      this._render();
    }, this);
    channel.jobChanged.connect((_, change) => this._onJob(change), this);
    channel.reloaded.connect(() => void this.refresh(), this);
    channel.modeChanged.connect(() => this._render(), this);
    this._ticker = window.setInterval(() => this._tick(), 5000); // the timelines' "now" moves on
  }

  dispose(): void {
    window.clearInterval(this._ticker);
    window.clearTimeout(this._timers.timeline);
    window.clearTimeout(this._timers.accounts);
    super.dispose();
  }

  protected polls(): boolean {
    return this._channel.mode === 'polling';
  }

  /** Cluster slots, the GPU timeline and the accounts. */
  protected async fetch(): Promise<void> {
    const [cluster] = await Promise.allSettled([
      getCluster(),
      this._readTimeline(),
      this._readAccounts()
    ]);
    if (cluster.status === 'fulfilled') {
      this._cluster = cluster.value;
      this._clusterError = null;
    } else {
      this._clusterError = errorMessage(cluster.reason);
    }
    this._loaded = true;
  }

  private async _readTimeline(): Promise<void> {
    this._readAt.timeline = Date.now();
    try {
      const timeline = await getTimeline();
      this._timeline = Array.isArray(timeline?.jobs) ? timeline.jobs : [];
      this._timelineError = null;
    } catch (error) {
      this._timelineError = errorMessage(error);
    }
  }

  /** The accounts (none: an empty list; a server without accounts answers 404: none either). */
  private async _readAccounts(): Promise<void> {
    this._readAt.accounts = Date.now();
    try {
      this._accounts = await getAccounts();
      this._accountsError = null;
    } catch (error) {
      const missing = error instanceof ApiError && error.status === 404;
      this._accounts = missing ? null : this._accounts;
      this._accountsError = missing ? null : errorMessage(error);
    }
  }

  /** Read the timeline or the accounts again once changes settle, at most every EVERY_MS. */
  private _soon(what: Reading): void {
    if (this._timers[what]) {
      return;
    }
    const wait = Math.max(250, this._readAt[what] + EVERY_MS[what] - Date.now());
    this._timers[what] = window.setTimeout(() => {
      this._timers[what] = 0;
      if (this.isVisible) {
        const read = what === 'timeline' ? this._readTimeline() : this._readAccounts();
        void read.then(() => this._render());
      }
    }, wait);
  }

  /** A job changed: keep its name for the slots; a job queued or ended moves the accounts. */
  private _onJob(change: Change<IJob>): void {
    if (change.deleted) {
      return;
    }
    const { id, name, status } = change.record;
    const before = this._jobs.get(id);
    this._jobs.delete(id);
    this._jobs.set(id, { name, status });
    if (this._jobs.size > NAMES_KEPT) {
      this._jobs.delete(this._jobs.keys().next().value as string);
    }
    if (this._accounts?.accounts.length && movesAccounts(before?.status, change.record)) {
      this._soon('accounts');
    }
  }

  private _tick(): void {
    if (this._accounts?.accounts.length && Date.now() - this._readAt.accounts >= USAGE_MS) {
      this._soon('accounts');
    }
    this._render();
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
    for (const [id, { name }] of this._jobs) {
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
        {this._renderAccounts()}
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
          <RangeSelect
            id="nbrunner-timeline-range"
            testid="nbrunner-timeline-range"
            value={this._range}
            onChange={range => {
              this._range = range;
              this.update();
            }}
          />
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

  /** The accounts, once the cluster has some (else nothing: no section at all). */
  private _renderAccounts(): React.ReactElement | null {
    const view = this._accounts;
    if (!view || !Array.isArray(view.accounts) || view.accounts.length === 0) {
      return null;
    }
    return (
      <AccountsSection
        view={view}
        error={this._accountsError}
        now={Date.now()}
        width={this._width}
        range={this._accountsRange}
        onRange={range => {
          this._accountsRange = range;
          this.update();
        }}
      />
    );
  }

  private _loaded = false;
  private _cluster: ICluster | null = null;
  private _clusterError: string | null = null;
  private _timeline: ITimelineJob[] = [];
  private _timelineError: string | null = null;
  private _accounts: IAccounts | null = null;
  private _accountsError: string | null = null;
  private _jobs = new Map<string, { name: string; status: string }>();
  private _channel: PushChannel;
  private _ticker = 0;
  private _timers: Record<Reading, number> = { timeline: 0, accounts: 0 };
  private _readAt: Record<Reading, number> = { timeline: 0, accounts: 0 };
  private _range = 0;
  private _accountsRange = 0;
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
