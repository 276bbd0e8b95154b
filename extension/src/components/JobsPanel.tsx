/**
 * The Jobs side panel: a dense table of jobs, a page at a time from `GET /jobs` (newest
 * first), with filters, sorting and paging (`job-listing.ts`), kept up to date by the push
 * channel (`channel.ts`); a summary of the cluster; a sweep's leaderboard when the table
 * lists its trials.  It refreshes on a timer only while the channel cannot be opened.
 */
import { Message } from '@lumino/messaging';
import * as React from 'react';

import { ApiError, errorMessage, getCluster, getSweep, listSchedules } from '../api';
import { PushChannel } from '../channel';
import { JOBS_POLL_MS } from '../constants';
import { Change, ISweepChange } from '../events';
import { jobsIcon } from '../icons';
import { JobListing } from '../job-listing';
import { Column, filtered, IJobQuery, ISort, nextSort, pageLabel, sortRows } from '../job-table';
import { PollingWidget } from '../polling-widget';
import { ICluster, IJob, ISchedule, isFinished } from '../types';
import { ClusterSummary } from './ClusterSummary';
import { JobFilters } from './JobFilters';
import { JobsMessages } from './JobsMessages';
import { JobsToolbar } from './JobsToolbar';
import { JobTable } from './JobTable';
import { IRowHandlers } from './JobTableRow';
import { Pager } from './Pager';
import { cancelAfterConfirming, changePriority } from './rowActions';
import { ISweepState, SweepGroup } from './SweepGroup';

export namespace JobsPanel {
  export interface IOptions {
    channel: PushChannel;
    openLog: (job: IJob) => void;
    openOutput: (job: IJob) => void;
    openJob: (job: IJob) => void;
    openCluster: () => void;
    openSchedules?: () => void;
    /** Open the notification settings (the toolbar's bell). */
    openNotifications?: () => void;
    /** Open the table in the main area, full width (offered by the side panel). */
    openWide?: () => void;
    /** Where the panel is: the left side bar (default) or a main-area tab. */
    area?: 'left' | 'main';
    /** Which of these jobs saved a model, and registering it ("Register model" on their rows). */
    models?: { jobsWithModel: (ids: string[]) => Promise<string[]>; register: (job: IJob) => void };
    /** Poll interval in ms while the channel cannot be opened. */
    interval?: number;
  }
}

/** After a change, the models and a sweep are read again this much later (a burst: once). */
const SETTLE_MS = 1000;

export class JobsPanel extends PollingWidget {
  constructor(options: JobsPanel.IOptions) {
    super(options.interval ?? JOBS_POLL_MS);
    this._options = options;
    this._channel = options.channel;
    const main = options.area === 'main';
    this.id = main ? 'nbrunner-jobs-table' : 'nbrunner-jobs-panel';
    this.addClass('nbrunner-JobsPanel');
    this.addClass(main ? 'nbrunner-JobsMain' : 'nbrunner-JobsSide');
    this.node.dataset.testid = main ? 'nbrunner-jobs-table' : 'nbrunner-jobs-panel';
    this.title.icon = jobsIcon;
    this.title.caption = 'nbrunner jobs';
    this.title.label = main ? 'nbrunner jobs' : '';
    this.title.closable = main;
    this.node.setAttribute('role', 'region');
    this.node.setAttribute('aria-label', 'nbrunner jobs');
    const channel = this._channel;
    channel.jobChanged.connect(this._onJob, this);
    channel.sweepChanged.connect(this._onSweep, this);
    channel.clusterChanged.connect((_, cluster) => this._show(() => (this._cluster = cluster)), this);
    channel.scheduleChanged.connect(() => void this._readSchedules(), this);
    channel.reloaded.connect(() => void this.refresh(), this);
    channel.modeChanged.connect(() => this.update(), this);
    this._ticker = window.setInterval(() => this._tick(), 5000);
  }

  /** The rows of the page shown (null before the first read). */
  get jobs(): IJob[] | null {
    return this._listing.rows;
  }

  get query(): IJobQuery {
    return this._listing.query;
  }

  /** List only what `change` says (a sweep's trials, say), from the first page. */
  filter(change: Partial<IJobQuery>): void {
    this._listing.setQuery(change);
    this._sort = { column: null, descending: false };
    this.update();
    void this.refresh();
  }

  /** Mark a job (e.g. one just submitted) and scroll to it. */
  highlight(id: string): void {
    this._highlight = id;
    this._scrollTo = id;
    window.setTimeout(() => {
      if (this._highlight === id) {
        this._highlight = null;
        this.update();
      }
    }, 4000);
    this.update();
  }

  dispose(): void {
    window.clearInterval(this._ticker);
    window.clearTimeout(this._settle);
    super.dispose();
  }

  protected polls(): boolean {
    return this._channel.mode === 'polling';
  }

  protected onUpdateRequest(msg: Message): void {
    super.onUpdateRequest(msg);
    if (this._scrollTo) {
      const id = this._scrollTo;
      requestAnimationFrame(() => {
        const row = this.node.querySelector(`[data-testid="nbrunner-job"][data-job-id="${CSS.escape(id)}"]`);
        if (row) {
          row.scrollIntoView({ block: 'nearest' });
          this._scrollTo = null;
        }
      });
    }
  }

  /** The page, the cluster summary, the schedules (for their filter), a sweep's leaderboard. */
  protected async fetch(): Promise<void> {
    const others = Promise.allSettled([
      getCluster(),
      this._schedules === null ? this._readSchedules() : Promise.resolve(),
      this._readSweep()
    ]);
    const [page] = await Promise.allSettled([
      this._listing.read().then(() => this._show()) // the rows first, without waiting for the rest
    ]);
    const [cluster] = await others;
    if (page.status === 'fulfilled') {
      this._error = null;
      this._unavailable = false;
    } else {
      this._error = errorMessage(page.reason);
      this._unavailable = page.reason instanceof ApiError && page.reason.unavailable;
    }
    if (cluster.status === 'fulfilled') {
      this._cluster = cluster.value;
    }
    this._lastUpdated = Date.now();
    void this._readModels();
  }

  private _onJob(_: PushChannel, change: Change<IJob>): void {
    const changed = this._listing.apply(change);
    const job = change.deleted ? null : change.record;
    const sweep = this._listing.query.sweep.trim();
    if (job && ((sweep && job.sweep === sweep) || (isFinished(job.status) && changed))) {
      this._settleThenRead();
    }
    if (changed) {
      this._show(() => (this._lastUpdated = Date.now()));
    }
  }

  private _onSweep(_: PushChannel, change: Change<ISweepChange>): void {
    const id = change.deleted ? change.id : change.record.id;
    if (id === this._listing.query.sweep.trim()) {
      this._settleThenRead();
    }
  }

  /** Read the models and the sweep again a moment after a change: once for a burst of changes,
   * and at most every SETTLE_MS while they keep coming. */
  private _settleThenRead(): void {
    if (this._settle) {
      return;
    }
    this._settle = window.setTimeout(() => {
      this._settle = 0;
      void Promise.all([this._readModels(), this._readSweep()]).then(() => this._show());
    }, SETTLE_MS);
  }

  private async _readModels(): Promise<void> {
    const completed = (this._listing.rows ?? []).filter(j => j.status === 'completed').map(j => j.id);
    if (!this._options.models || completed.length === 0) {
      return;
    }
    try {
      this._withModel = new Set(await this._options.models.jobsWithModel(completed));
      this._show();
    } catch {
      // the rows only lack "Register model" until the next read
    }
  }

  private async _readSweep(): Promise<void> {
    const id = this._listing.query.sweep.trim();
    if (!id) {
      this._sweep = null;
      return;
    }
    try {
      const sweep = await getSweep(id);
      if (id === this._listing.query.sweep.trim()) {
        this._sweep = { sweep, error: null };
      }
    } catch (error) {
      this._sweep = { sweep: this._sweep?.sweep ?? null, error: errorMessage(error) };
    }
  }

  private async _readSchedules(): Promise<void> {
    try {
      this._schedules = (await listSchedules()).schedules ?? [];
      this._show();
    } catch {
      this._schedules = this._schedules ?? [];
    }
  }

  /** Change the state (optionally), then render if the panel is visible. */
  private _show(change?: () => void): void {
    change?.();
    if (this.isVisible) {
      this.update();
    }
  }

  /** Durations of running jobs move on without any change from the server. */
  private _tick(): void {
    if (this.isVisible && (this._listing.rows ?? []).some(j => j.status === 'running' || j.status === 'queued')) {
      this.update();
    }
  }

  private _go(step: () => boolean | void): void {
    if (step() !== false) {
      this.update();
      void this.refresh();
    }
  }

  private _sortBy(column: Column): void {
    const sort = nextSort(this._sort, column);
    this._sort = sort;
    if (column === 'created') {
      // Creation order is the server's: the listing itself turns round.
      const order = sort.column === 'created' && !sort.descending ? 'oldest' : 'newest';
      if (order !== this._listing.query.order) {
        this._listing.setQuery({ order });
        void this.refresh();
      }
    }
    this.update();
  }

  private async _cancel(job: IJob): Promise<void> {
    if (this._pending.has(job.id)) {
      return;
    }
    this._show(() => this._pending.add(job.id));
    const updated = await cancelAfterConfirming(job);
    if (updated) {
      this._listing.apply({ record: updated, deleted: false });
    }
    this._show(() => this._pending.delete(job.id));
  }

  private async _setPriority(job: IJob, priority: number): Promise<boolean> {
    const updated = await changePriority(job, priority);
    if (updated) {
      this._show(() => this._listing.apply({ record: updated, deleted: false }));
    }
    return updated !== null;
  }

  private _handlers(): IRowHandlers {
    return {
      onCancel: job => void this._cancel(job),
      onLog: job => this._options.openLog(job),
      onOpen: job => this._options.openOutput(job),
      onDetails: job => this._options.openJob(job),
      onPriority: (job, p) => this._setPriority(job, p),
      onSweep: sweep => this.filter({ sweep }),
      onRegister: this._options.models?.register,
      hasModel: job => this._withModel.has(job.id)
    };
  }

  protected render(): React.ReactElement {
    const now = Date.now();
    const listing = this._listing;
    const query = listing.query;
    const rows = listing.rows;
    const shown = rows ? sortRows(rows, this._sort.column === 'created' ? { column: null, descending: false } : this._sort, now) : [];
    return (
      <div className="nbrunner-JobsPanel-content">
        <JobsToolbar
          mode={this._channel.mode}
          pollSeconds={Math.round((this._options.interval ?? JOBS_POLL_MS) / 100) / 10}
          onRetry={() => this._channel.retryNow()}
          onRefresh={() => void this.refresh()}
          onWide={this._options.openWide}
          onCluster={this._options.openCluster}
          onSchedules={this._options.openSchedules}
          onNotifications={this._options.openNotifications}
        />
        {this._cluster && <ClusterSummary cluster={this._cluster} />}
        <JobFilters
          query={query}
          schedules={this._schedules ?? []}
          owners={this._channel.admin || this._channel.user === null}
          onChange={change => this.filter(change)}
        />
        {query.sweep.trim() && (
          <SweepGroup
            id={query.sweep.trim()}
            jobs={rows ?? []}
            state={this._sweep}
            collapsed={this._collapsed}
            onToggle={() => this._show(() => (this._collapsed = !this._collapsed))}
            onClose={() => this.filter({ sweep: '' })}
          />
        )}
        <JobsMessages
          error={this._error}
          unavailable={this._unavailable}
          rows={rows}
          unseen={listing.unseen}
          firstPage={listing.index === 0}
          filtered={filtered(query)}
          onRetry={() => void this.refresh()}
          onFirst={() => this._go(() => listing.first())}
        />
        {shown.length > 0 && (
          <div className="nbrunner-JobTable-wrap">
            <JobTable
              rows={shown}
              label="Jobs"
              now={now}
              handlers={this._handlers()}
              sort={this._sort}
              onSort={column => this._sortBy(column)}
              pending={this._pending}
              highlight={this._highlight}
            />
          </div>
        )}
        {rows !== null && (rows.length > 0 || listing.index > 0) && (
          <Pager
            label={pageLabel(listing.index, query.limit, rows.length)}
            hasNewer={listing.hasNewer}
            hasOlder={listing.hasOlder}
            busy={listing.reading}
            onNewer={() => this._go(() => listing.newer())}
            onOlder={() => this._go(() => listing.older())}
          />
        )}
        {this._lastUpdated > 0 && (
          <p className="nbrunner-JobsPanel-updated" aria-live="off">
            Updated {new Date(this._lastUpdated).toLocaleTimeString()}
          </p>
        )}
      </div>
    );
  }

  private _options: JobsPanel.IOptions;
  private _channel: PushChannel;
  private _listing = new JobListing();
  private _sort: ISort = { column: null, descending: false };
  private _cluster: ICluster | null = null;
  private _schedules: ISchedule[] | null = null;
  private _sweep: ISweepState | null = null;
  private _withModel = new Set<string>();
  private _error: string | null = null;
  private _unavailable = false;
  private _lastUpdated = 0;
  private _pending = new Set<string>();
  private _collapsed = false;
  private _highlight: string | null = null;
  private _scrollTo: string | null = null;
  private _ticker = 0;
  private _settle = 0;
}
