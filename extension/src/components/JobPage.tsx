/**
 * A job's page (a main-area tab): parameters, status history, attempt and worker, its
 * account and why it lost GPUs (shrunk or re-queued), GPUs over time, a chart per metric,
 * the error with its cause, and the job's actions.
 * Kept up to date by the push channel (on a timer while it cannot be opened).
 */
import * as React from 'react';

import { ApiError, errorMessage, getJob, getMetrics, getTimeline } from '../api';
import { reclaimNotes } from '../accounts';
import { JOBS_POLL_MS } from '../constants';
import { PushChannel } from '../channel';
import { Change } from '../events';
import { PollingWidget } from '../polling-widget';
import { outlookLine } from '../waiting';
import { IJob, IMetricsRow, isFinished, ITimelinePoint } from '../types';
import { JobActions } from './JobActions';
import { JobCharts } from './JobCharts';
import { JobDetails, JobHistory, JobParameters } from './JobTables';
import { StatusBadge } from './StatusBadge';

export namespace JobPage {
  export interface IActions {
    openOutput: (job: IJob) => void;
    openLog: (job: IJob) => void;
    rerun: (job: IJob) => void;
    /** Ask, cancel; resolves once done (or declined). */
    cancel: (job: IJob) => Promise<void>;
    /** Ask, delete; resolves true once the job is gone. */
    remove: (job: IJob) => Promise<boolean>;
  }

  export interface IOptions {
    id: string;
    /** The job's name, for the title until the record arrives. */
    name?: string;
    actions: IActions;
    channel: PushChannel;
    /** Poll interval in ms while the channel cannot be opened. */
    interval?: number;
  }
}

/** After a change, the metrics or GPU series are read again this much later (a burst: once). */
const SETTLE_MS = 500;

export class JobPage extends PollingWidget {
  constructor(options: JobPage.IOptions) {
    super(options.interval ?? JOBS_POLL_MS);
    this.jobId = options.id;
    this._channel = options.channel;
    this._channel.jobChanged.connect((_, change) => this._onJob(change), this);
    this._channel.reloaded.connect(() => void this.refresh(), this);
    this._actions = options.actions;
    this._name = options.name || options.id;
    this.id = `nbrunner-job-page-${options.id}`;
    this.addClass('nbrunner-JobPage');
    this.node.dataset.testid = 'nbrunner-job-page';
    this.node.dataset.jobId = options.id;
    this._setTitle();
  }

  readonly jobId: string;

  get job(): IJob | null {
    return this._job;
  }

  get jobName(): string {
    return this._name;
  }

  dispose(): void {
    window.clearTimeout(this._timers.metrics);
    window.clearTimeout(this._timers.gpus);
    super.dispose();
  }

  protected polls(): boolean {
    return this._channel.mode === 'polling';
  }

  /** The record, metrics and GPU series. */
  protected async fetch(): Promise<void> {
    const [job] = await Promise.allSettled([getJob(this.jobId), this._readMetrics(), this._readGpus()]);
    if (job.status === 'fulfilled') {
      this._job = job.value;
      this._name = job.value.name || this._name;
      this._error = null;
      this._gone = false;
    } else {
      this._error = errorMessage(job.reason);
      this._gone = job.reason instanceof ApiError && job.reason.status === 404;
    }
    // Polling: once ended, a few more polls (the GPU release lands just after the status).
    if (this._gone || (this._job && isFinished(this._job.status))) {
      if (++this._endedPolls >= 3) {
        this.poller.stop();
      }
    } else {
      this._endedPolls = 0;
      if (this.isVisible) {
        this.poller.start();
      }
    }
    if (!this.isDisposed) {
      this._setTitle();
    }
  }

  /** A change of this job from the push channel: the record now, then its metrics and GPU
   * series read again if they moved. */
  private _onJob(change: Change<IJob>): void {
    if (change.deleted) {
      if (change.id === this.jobId) {
        this._gone = true;
        this.update();
      }
      return;
    }
    const job = change.record;
    if (job.id !== this.jobId) {
      return;
    }
    const before = this._job;
    this._job = job;
    this._name = job.name || this._name;
    this._error = null;
    this._gone = false;
    this._setTitle();
    if (!before || JSON.stringify(before.metrics) !== JSON.stringify(job.metrics) || before.progress !== job.progress) {
      this._soon('metrics', () => this._readMetrics());
    }
    if (!before || before.gpus !== job.gpus || before.status !== job.status) {
      this._soon('gpus', () => this._readGpus());
    }
    this.update();
  }

  /** Run `read` (then render) in a moment: once for a burst of changes, at most every SETTLE_MS
   * while they keep coming. */
  private _soon(what: 'metrics' | 'gpus', read: () => Promise<void>): void {
    if (this._timers[what]) {
      return;
    }
    this._timers[what] = window.setTimeout(() => {
      this._timers[what] = 0;
      void read().then(() => this.update());
    }, SETTLE_MS);
  }

  private async _readMetrics(): Promise<void> {
    try {
      const metrics = await getMetrics(this.jobId);
      this._metrics = Array.isArray(metrics?.metrics) ? metrics.metrics : [];
      this._metricsError = null;
    } catch (error) {
      this._metricsError = errorMessage(error);
    }
  }

  private async _readGpus(): Promise<void> {
    try {
      const timeline = await getTimeline();
      const mine = (timeline?.jobs ?? []).find(j => j.id === this.jobId);
      this._gpus = mine?.points ?? [];
    } catch {
      // the chart keeps what it had
    }
  }

  private _setTitle(): void {
    this.title.label = this._name;
    this.title.caption = `nbrunner job ${this._name} (${this.jobId})`;
  }

  private async _run(what: string, action: () => Promise<unknown>): Promise<void> {
    if (this._acting) {
      return;
    }
    this._acting = what;
    this.update();
    try {
      await action();
    } finally {
      this._acting = null;
      if (!this.isDisposed) {
        void this.refresh();
      }
    }
  }

  protected render(): React.ReactElement {
    const job = this._job;
    if (!job) {
      return (
        <div className="nbrunner-JobPage-content">
          <h2 className="nbrunner-JobPage-title">{this._name}</h2>
          <p
            className={this._error ? 'nbrunner-Banner nbrunner-Banner-error' : 'nbrunner-Empty'}
            data-testid={this._error ? 'nbrunner-jobpage-load-error' : undefined}
            role={this._error ? 'alert' : undefined}
          >
            {this._error ?? 'Loading…'}
          </p>
        </div>
      );
    }
    const outlook = outlookLine(job); // why it waits, when it should start and end
    return (
      <div className="nbrunner-JobPage-content">
        {this._renderHeader(job)}
        {this._gone && (
          <p className="nbrunner-Banner nbrunner-Banner-warn" role="alert">
            This job no longer exists (deleted).
          </p>
        )}
        <JobActions
          job={job}
          gone={this._gone}
          acting={this._acting !== null}
          actions={this._actions}
          run={(what, action) => void this._run(what, action)}
        />
        {outlook && (
          <p className="nbrunner-JobPage-outlook" data-testid="nbrunner-jobpage-outlook" data-code={job.waiting?.code ?? ''}>
            {outlook}
          </p>
        )}
        {this._renderReclaims(job)}
        {job.error && job.error !== job.status && (
          <section
            className="nbrunner-JobPage-error"
            data-testid="nbrunner-jobpage-error"
            role="alert"
          >
            <h3>Error</h3>
            <pre>{job.error}</pre>
          </section>
        )}
        <div className="nbrunner-JobPage-grid">
          <JobDetails job={job} />
          <JobParameters job={job} />
          <JobHistory job={job} />
        </div>
        <JobCharts job={job} metrics={this._metrics} metricsError={this._metricsError} gpus={this._gpus} />
      </div>
    );
  }

  private _renderHeader(job: IJob): React.ReactElement {
    return (
      <header className="nbrunner-JobPage-header">
        <h2 className="nbrunner-JobPage-title" data-testid="nbrunner-jobpage-name">
          {job.name}
        </h2>
        <StatusBadge status={job.status} />
        <code className="nbrunner-JobRow-id" data-testid="nbrunner-jobpage-id">
          {job.id}
        </code>
        <span className="nbrunner-JobPage-notebook" title="Notebook">
          {job.notebook}
        </span>
      </header>
    );
  }

  /** Why the job lost GPUs: "Shrunk: reclaimed by account vision", "Re-queued: ...". */
  private _renderReclaims(job: IJob): React.ReactElement | null {
    const notes = reclaimNotes(job);
    if (notes.length === 0) {
      return null;
    }
    return (
      <ul className="nbrunner-JobPage-reclaims" data-testid="nbrunner-jobpage-reclaims" aria-label="Why the job lost GPUs">
        {notes.map(note => (
          <li key={note.text} data-testid="nbrunner-jobpage-reclaim" data-kind={note.kind}>
            {note.text}
          </li>
        ))}
      </ul>
    );
  }

  private _actions: JobPage.IActions;
  private _name: string;
  private _job: IJob | null = null;
  private _metrics: IMetricsRow[] = [];
  private _metricsError: string | null = null;
  private _gpus: ITimelinePoint[] = [];
  private _error: string | null = null;
  private _gone = false;
  private _acting: string | null = null;
  private _endedPolls = 0;
  private _channel: PushChannel;
  private _timers = { metrics: 0, gpus: 0 };
}
