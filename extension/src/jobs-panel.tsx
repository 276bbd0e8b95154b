/**
 * The Jobs side panel: live list of jobs, sweeps with their leaderboard, and a
 * summary of the cluster.
 */
import { Notification } from '@jupyterlab/apputils';
import { ReactWidget } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import * as React from 'react';

import {
  ApiError,
  cancelJob,
  errorMessage,
  getCluster,
  getSweep,
  listJobs,
  setPriority
} from './api';
import {
  formatNumber,
  formatParameters,
  jobElapsed,
  latestMetric,
  metricsTitle,
  parseTime
} from './format';
import { jobsIcon } from './icons';
import { MAX_PRIORITY, MIN_PRIORITY } from './submit';
import { ICluster, IJob, ISweep, isFinished } from './types';

export const STATUSES = ['queued', 'running', 'completed', 'failed', 'cancelled'];

export namespace JobsPanel {
  export interface IOptions {
    /** Open the live log of a job. */
    openLog: (job: IJob) => void;
    /** Open the executed notebook of a job. */
    openOutput: (job: IJob) => void;
    /** Open the cluster view. */
    openCluster: () => void;
    /** Poll interval in ms while visible (default 1500). */
    interval?: number;
  }
}

interface ISweepState {
  sweep: ISweep | null;
  error: string | null;
}

/**
 * The Jobs panel widget.
 */
export class JobsPanel extends ReactWidget {
  constructor(options: JobsPanel.IOptions) {
    super();
    this._options = options;
    this._interval = options.interval ?? 1500;
    this.id = 'nbrunner-jobs-panel';
    this.addClass('nbrunner-JobsPanel');
    this.node.dataset.testid = 'nbrunner-jobs-panel';
    this.title.icon = jobsIcon;
    this.title.caption = 'nbrunner jobs';
    this.title.label = '';
    this.node.setAttribute('role', 'region');
    this.node.setAttribute('aria-label', 'nbrunner jobs');
  }

  /** Jobs of the last successful poll (null before the first one). */
  get jobs(): IJob[] | null {
    return this._jobs;
  }

  /** Fetch jobs, cluster summary and sweeps now. */
  async refresh(): Promise<void> {
    if (this._inFlight) {
      this._again = true;
      return this._inFlight;
    }
    this._inFlight = this._fetch();
    try {
      await this._inFlight;
    } finally {
      this._inFlight = null;
    }
    if (this._again) {
      this._again = false;
      await this.refresh();
    }
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
    this._stopTimer();
    super.dispose();
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this._startTimer();
    void this.refresh();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    if (this.isVisible) {
      this._startTimer();
      void this.refresh();
    }
  }

  protected onBeforeHide(msg: Message): void {
    super.onBeforeHide(msg);
    this._stopTimer();
  }

  protected onBeforeDetach(msg: Message): void {
    this._stopTimer();
    super.onBeforeDetach(msg);
  }

  protected onUpdateRequest(msg: Message): void {
    super.onUpdateRequest(msg);
    if (this._scrollTo) {
      const id = this._scrollTo;
      requestAnimationFrame(() => {
        const row = this.node.querySelector(
          `[data-testid="nbrunner-job"][data-job-id="${CSS.escape(id)}"]`
        );
        if (row) {
          row.scrollIntoView({ block: 'nearest' });
          this._scrollTo = null;
        }
      });
    }
  }

  private _startTimer(): void {
    if (this._timer === null) {
      this._timer = window.setInterval(() => {
        if (this.isVisible && !document.hidden) {
          void this.refresh();
        }
      }, this._interval);
    }
  }

  private _stopTimer(): void {
    if (this._timer !== null) {
      window.clearInterval(this._timer);
      this._timer = null;
    }
  }

  private async _fetch(): Promise<void> {
    const [jobs, cluster] = await Promise.allSettled([
      listJobs(this._filter || undefined),
      getCluster()
    ]);
    if (jobs.status === 'fulfilled') {
      this._jobs = Array.isArray(jobs.value?.jobs) ? jobs.value.jobs : [];
      this._error = null;
      this._unavailable = false;
    } else {
      const reason = jobs.reason;
      this._error = errorMessage(reason);
      this._unavailable = reason instanceof ApiError && reason.unavailable;
      if (this._unavailable) {
        this._jobs = null;
      }
    }
    this._cluster = cluster.status === 'fulfilled' ? cluster.value : null;
    this._lastUpdated = Date.now();
    // Sweeps of the listed trials: their leaderboards.
    const sweepIds = new Set<string>();
    for (const job of this._jobs ?? []) {
      if (job.sweep) {
        sweepIds.add(job.sweep);
      }
    }
    await Promise.all(
      Array.from(sweepIds).map(async id => {
        try {
          this._sweeps.set(id, { sweep: await getSweep(id), error: null });
        } catch (error) {
          const previous = this._sweeps.get(id);
          this._sweeps.set(id, {
            sweep: previous?.sweep ?? null,
            error: errorMessage(error)
          });
        }
      })
    );
    for (const id of Array.from(this._sweeps.keys())) {
      if (!sweepIds.has(id)) {
        this._sweeps.delete(id);
      }
    }
    this.update();
  }

  private _replaceJob(job: IJob): void {
    if (this._jobs) {
      this._jobs = this._jobs.map(j => (j.id === job.id ? job : j));
    }
    this.update();
  }

  private async _cancel(job: IJob): Promise<void> {
    this._pending.add(job.id);
    this.update();
    try {
      const updated = await cancelJob(job.id);
      if (updated && updated.id) {
        this._replaceJob(updated);
      }
      Notification.info(`Cancelled job ${job.id} (${job.name}).`, {
        autoClose: 4000
      });
    } catch (error) {
      Notification.error(
        `Could not cancel job ${job.id}: ${errorMessage(error)}`,
        { autoClose: 8000 }
      );
    } finally {
      this._pending.delete(job.id);
      void this.refresh();
    }
  }

  private async _setPriority(job: IJob, priority: number): Promise<boolean> {
    try {
      const updated = await setPriority(job.id, priority);
      if (updated && updated.id) {
        this._replaceJob(updated);
      } else {
        this._replaceJob({ ...job, priority });
      }
      void this.refresh();
      return true;
    } catch (error) {
      Notification.error(
        `Could not change the priority of job ${job.id}: ${errorMessage(error)}`,
        { autoClose: 8000 }
      );
      return false;
    }
  }

  private _toggleSweep(id: string): void {
    if (this._collapsed.has(id)) {
      this._collapsed.delete(id);
    } else {
      this._collapsed.add(id);
    }
    this.update();
  }

  protected render(): React.ReactElement {
    const now = Date.now();
    const jobs = this._jobs;
    const handlers: IRowHandlers = {
      onCancel: job => void this._cancel(job),
      onLog: job => this._options.openLog(job),
      onOpen: job => this._options.openOutput(job),
      onPriority: (job, p) => this._setPriority(job, p)
    };

    // Group sweep trials under their sweep; newest first.
    const sorted = (jobs ?? [])
      .slice()
      .sort(
        (a, b) =>
          (parseTime(b.created_at) ?? 0) - (parseTime(a.created_at) ?? 0) ||
          (a.id < b.id ? 1 : -1)
      );
    const entries: Array<{ kind: 'job'; job: IJob } | { kind: 'sweep'; id: string; jobs: IJob[] }> = [];
    const sweepEntries = new Map<string, IJob[]>();
    for (const job of sorted) {
      if (job.sweep) {
        let group = sweepEntries.get(job.sweep);
        if (!group) {
          group = [];
          sweepEntries.set(job.sweep, group);
          entries.push({ kind: 'sweep', id: job.sweep, jobs: group });
        }
        group.push(job);
      } else {
        entries.push({ kind: 'job', job });
      }
    }

    const cluster = this._cluster;
    return (
      <div className="nbrunner-JobsPanel-content">
        <div className="nbrunner-JobsPanel-header">
          <h2 className="nbrunner-JobsPanel-title">nbrunner jobs</h2>
          <div className="nbrunner-JobsPanel-tools">
            <label
              className="nbrunner-JobsPanel-filterLabel"
              htmlFor="nbrunner-jobs-filter"
            >
              Show
            </label>
            <select
              id="nbrunner-jobs-filter"
              className="nbrunner-Select"
              data-testid="nbrunner-jobs-filter"
              value={this._filter}
              onChange={e => {
                this._filter = e.target.value;
                this.update();
                void this.refresh();
              }}
            >
              <option value="">all</option>
              {STATUSES.map(s => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
            <button
              type="button"
              className="nbrunner-Button"
              data-testid="nbrunner-refresh"
              aria-label="Refresh jobs"
              title="Refresh jobs"
              onClick={() => void this.refresh()}
            >
              Refresh
            </button>
            <button
              type="button"
              className="nbrunner-Button"
              data-testid="nbrunner-open-cluster"
              aria-label="Open the cluster view"
              title="Open the cluster view: slots per host and GPU timeline"
              onClick={() => this._options.openCluster()}
            >
              Cluster
            </button>
          </div>
        </div>

        {cluster && (
          <div
            className="nbrunner-ClusterSummary"
            data-testid="nbrunner-cluster-summary"
            aria-label="Cluster summary"
          >
            <span>
              <strong data-testid="nbrunner-gpus-free">{cluster.gpus_free}</strong> of{' '}
              <strong data-testid="nbrunner-gpus-total">{cluster.gpus_total}</strong>{' '}
              GPUs free
            </span>
            <span>
              {(cluster.hosts ?? []).length} host
              {(cluster.hosts ?? []).length === 1 ? '' : 's'}
            </span>
            <span>
              policy <strong data-testid="nbrunner-policy">{cluster.policy}</strong>
            </span>
          </div>
        )}

        {this._error && (
          <div
            className={
              'nbrunner-Banner ' +
              (this._unavailable ? 'nbrunner-Banner-error' : 'nbrunner-Banner-warn')
            }
            data-testid="nbrunner-jobs-error"
            role="alert"
          >
            <p>
              {this._unavailable || jobs === null
                ? 'Cannot list jobs. '
                : 'Could not refresh the job list. '}
              {this._error}
            </p>
            <button
              type="button"
              className="nbrunner-Button"
              data-testid="nbrunner-retry"
              onClick={() => void this.refresh()}
            >
              Retry
            </button>
          </div>
        )}

        {jobs === null && !this._error && (
          <p className="nbrunner-Empty" data-testid="nbrunner-jobs-loading">
            Loading jobs…
          </p>
        )}

        {jobs !== null && jobs.length === 0 && (
          <p className="nbrunner-Empty" data-testid="nbrunner-jobs-empty">
            {this._filter
              ? `No ${this._filter} jobs.`
              : 'No jobs yet. Open a notebook and click “Run as job”, or right-click a notebook in the file browser.'}
          </p>
        )}

        {entries.length > 0 && (
          <ul className="nbrunner-JobList" aria-label="Jobs" data-testid="nbrunner-job-list">
            {entries.map(entry =>
              entry.kind === 'job' ? (
                <JobRow
                  key={entry.job.id}
                  job={entry.job}
                  now={now}
                  busy={this._pending.has(entry.job.id)}
                  highlighted={this._highlight === entry.job.id}
                  handlers={handlers}
                />
              ) : (
                <SweepGroup
                  key={`sweep-${entry.id}`}
                  id={entry.id}
                  jobs={entry.jobs}
                  state={this._sweeps.get(entry.id) ?? null}
                  collapsed={this._collapsed.has(entry.id)}
                  onToggle={() => this._toggleSweep(entry.id)}
                  now={now}
                  pending={this._pending}
                  highlight={this._highlight}
                  handlers={handlers}
                />
              )
            )}
          </ul>
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
  private _interval: number;
  private _timer: number | null = null;
  private _inFlight: Promise<void> | null = null;
  private _again = false;
  private _jobs: IJob[] | null = null;
  private _cluster: ICluster | null = null;
  private _sweeps = new Map<string, ISweepState>();
  private _error: string | null = null;
  private _unavailable = false;
  private _filter = '';
  private _lastUpdated = 0;
  private _pending = new Set<string>();
  private _collapsed = new Set<string>();
  private _highlight: string | null = null;
  private _scrollTo: string | null = null;
}

interface IRowHandlers {
  onCancel: (job: IJob) => void;
  onLog: (job: IJob) => void;
  onOpen: (job: IJob) => void;
  onPriority: (job: IJob, priority: number) => Promise<boolean>;
}

interface IJobRowProps {
  job: IJob;
  now: number;
  busy: boolean;
  highlighted: boolean;
  handlers: IRowHandlers;
}

function StatusBadge(props: { status: string }): React.ReactElement {
  return (
    <span
      className={`nbrunner-StatusBadge nbrunner-status-${props.status}`}
      data-testid="nbrunner-job-status"
      data-status={props.status}
    >
      {props.status}
    </span>
  );
}

function ProgressBar(props: { job: IJob }): React.ReactElement | null {
  const { progress } = props.job;
  if (typeof progress !== 'number' || !Number.isFinite(progress)) {
    return null;
  }
  const pct = Math.round(Math.max(0, Math.min(1, progress)) * 100);
  return (
    <div
      className={`nbrunner-Progress nbrunner-status-${props.job.status}`}
      data-testid="nbrunner-job-progress"
      role="progressbar"
      aria-label={`Progress of job ${props.job.name}`}
      aria-valuemin={0}
      aria-valuemax={100}
      aria-valuenow={pct}
      data-progress={progress}
    >
      <div className="nbrunner-Progress-bar" style={{ width: `${pct}%` }} />
      <span className="nbrunner-Progress-label">{pct}%</span>
    </div>
  );
}

function PriorityInput(props: {
  job: IJob;
  onCommit: (job: IJob, priority: number) => Promise<boolean>;
}): React.ReactElement {
  const { job } = props;
  const [draft, setDraft] = React.useState<string | null>(null);
  const [saving, setSaving] = React.useState(false);
  const id = `nbrunner-priority-${job.id}`;
  const editable = !isFinished(job.status);
  const commit = async () => {
    if (draft === null) {
      return;
    }
    const value = Number(draft);
    if (
      !Number.isInteger(value) ||
      value < MIN_PRIORITY ||
      value > MAX_PRIORITY
    ) {
      Notification.warning(
        `Priority must be a whole number between ${MIN_PRIORITY} and ${MAX_PRIORITY}.`,
        { autoClose: 5000 }
      );
      return;
    }
    if (value === job.priority) {
      setDraft(null);
      return;
    }
    setSaving(true);
    await props.onCommit(job, value);
    setSaving(false);
    setDraft(null);
  };
  return (
    <span className="nbrunner-Priority">
      <label htmlFor={id}>Priority</label>
      <input
        id={id}
        type="number"
        min={MIN_PRIORITY}
        max={MAX_PRIORITY}
        step={1}
        className="nbrunner-Priority-input"
        data-testid="nbrunner-job-priority"
        data-job-id={job.id}
        aria-label={`Priority of job ${job.name} (${job.id}); press Enter to apply`}
        title={
          editable
            ? 'Priority 1–10000; press Enter to apply, Escape to undo'
            : 'The job has finished'
        }
        disabled={!editable}
        readOnly={saving}
        aria-busy={saving}
        value={draft ?? String(job.priority)}
        onChange={e => setDraft(e.target.value)}
        onKeyDown={e => {
          if (e.key === 'Enter') {
            e.preventDefault();
            void commit();
          } else if (e.key === 'Escape') {
            e.preventDefault();
            setDraft(null);
          }
        }}
        onBlur={() => {
          if (!saving) {
            setDraft(null);
          }
        }}
      />
    </span>
  );
}

function JobRow(props: IJobRowProps): React.ReactElement {
  const { job, now, handlers } = props;
  const elapsed = jobElapsed(job, now);
  const metric = latestMetric(job);
  const cancellable = job.status === 'queued' || job.status === 'running';
  const hasOutput = !!job.output && job.status !== 'queued';
  const label = `${job.name} (${job.id})`;
  return (
    <li
      className={
        `nbrunner-JobRow nbrunner-status-${job.status}` +
        (props.highlighted ? ' nbrunner-mod-highlight' : '')
      }
      data-testid="nbrunner-job"
      data-job-id={job.id}
      data-status={job.status}
      aria-label={`Job ${label}, ${job.status}`}
    >
      <div className="nbrunner-JobRow-head">
        <StatusBadge status={job.status} />
        <span
          className="nbrunner-JobRow-name"
          title={`${job.name} — ${job.notebook}`}
          data-testid="nbrunner-job-name"
        >
          {job.name}
        </span>
        <code className="nbrunner-JobRow-id" data-testid="nbrunner-job-id">
          {job.id}
        </code>
      </div>
      <div className="nbrunner-JobRow-stats">
        <span
          data-testid="nbrunner-job-gpus"
          title={`GPUs held now / max (min ${job.min_gpus})`}
        >
          GPUs {job.gpus ?? 0}/{job.max_gpus ?? 0}
        </span>
        <span data-testid="nbrunner-job-elapsed" title={elapsed.title}>
          {elapsed.text}
        </span>
        {metric && (
          <span
            className="nbrunner-JobRow-metric"
            data-testid="nbrunner-job-metric"
            data-metric={metric[0]}
            title={metricsTitle(job)}
          >
            {metric[0]} {metric[1]}
          </span>
        )}
        {job.owner && (
          <span className="nbrunner-JobRow-owner" title="Owner">
            {job.owner}
          </span>
        )}
      </div>
      <ProgressBar job={job} />
      {job.error && (
        <div className="nbrunner-JobRow-error" data-testid="nbrunner-job-error" title={job.error}>
          {job.error}
        </div>
      )}
      <div className="nbrunner-JobRow-controls">
        <PriorityInput job={job} onCommit={handlers.onPriority} />
        <span className="nbrunner-JobRow-actions">
          {cancellable && (
            <button
              type="button"
              className="nbrunner-Button nbrunner-Button-warn"
              data-testid="nbrunner-job-cancel"
              aria-label={`Cancel job ${label}`}
              title="Cancel this job"
              disabled={props.busy}
              onClick={() => handlers.onCancel(job)}
            >
              Cancel
            </button>
          )}
          <button
            type="button"
            className="nbrunner-Button"
            data-testid="nbrunner-job-log"
            aria-label={`Show the log of job ${label}`}
            title="Tail the job's log"
            onClick={() => handlers.onLog(job)}
          >
            Log
          </button>
          <button
            type="button"
            className="nbrunner-Button"
            data-testid="nbrunner-job-open-output"
            aria-label={`Open the executed notebook of job ${label}`}
            title={hasOutput ? `Open ${job.output}` : 'No executed notebook yet'}
            disabled={!hasOutput}
            onClick={() => handlers.onOpen(job)}
          >
            Output
          </button>
        </span>
      </div>
    </li>
  );
}

function SweepGroup(props: {
  id: string;
  jobs: IJob[];
  state: ISweepState | null;
  collapsed: boolean;
  onToggle: () => void;
  now: number;
  pending: Set<string>;
  highlight: string | null;
  handlers: IRowHandlers;
}): React.ReactElement {
  const { id, jobs, state } = props;
  const counts = new Map<string, number>();
  for (const job of jobs) {
    counts.set(job.status, (counts.get(job.status) ?? 0) + 1);
  }
  const summary = Array.from(counts.entries())
    .map(([status, n]) => `${n} ${status}`)
    .join(', ');
  const names = new Map(jobs.map(j => [j.id, j.name]));
  const leaderboard = state?.sweep?.leaderboard ?? [];
  const bodyId = `nbrunner-sweep-${id}-body`;
  return (
    <li
      className="nbrunner-SweepGroup"
      data-testid="nbrunner-sweep"
      data-sweep-id={id}
      aria-label={`Sweep ${id}`}
    >
      <button
        type="button"
        className="nbrunner-SweepGroup-toggle"
        data-testid="nbrunner-sweep-toggle"
        aria-expanded={!props.collapsed}
        aria-controls={bodyId}
        onClick={props.onToggle}
      >
        <span className="nbrunner-SweepGroup-caret" aria-hidden="true">
          {props.collapsed ? '▸' : '▾'}
        </span>
        Sweep <code>{id}</code>
        <span className="nbrunner-SweepGroup-summary">
          {jobs.length} trial{jobs.length === 1 ? '' : 's'}: {summary}
        </span>
      </button>
      {!props.collapsed && (
        <div id={bodyId} className="nbrunner-SweepGroup-body">
          {state?.error && !state.sweep && (
            <p className="nbrunner-Empty" data-testid="nbrunner-leaderboard-error">
              Leaderboard unavailable: {state.error}
            </p>
          )}
          {leaderboard.length > 0 && (
            <div className="nbrunner-Leaderboard-wrap">
            <table
              className="nbrunner-Leaderboard"
              data-testid="nbrunner-leaderboard"
              aria-label={`Leaderboard of sweep ${id}`}
            >
              <thead>
                <tr>
                  <th scope="col">#</th>
                  <th scope="col">Job</th>
                  <th scope="col">Parameters</th>
                  <th scope="col">Objective</th>
                  <th scope="col" title="Status">
                    <span aria-hidden="true">●</span>
                    <span className="nbrunner-sr-only">Status</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {leaderboard.map(entry => (
                  <tr
                    key={entry.job}
                    data-testid="nbrunner-leaderboard-row"
                    data-job-id={entry.job}
                    data-rank={entry.rank}
                  >
                    <td>{entry.rank}</td>
                    <td title={names.get(entry.job) ?? entry.job}>
                      <code>{entry.job}</code>
                    </td>
                    <td className="nbrunner-Leaderboard-params">
                      {formatParameters(entry.parameters)}
                    </td>
                    <td>
                      {entry.objective === null || entry.objective === undefined
                        ? '–'
                        : formatNumber(entry.objective)}
                    </td>
                    <td>
                      <span
                        className={`nbrunner-StatusDot nbrunner-status-${entry.status}`}
                        data-testid="nbrunner-leaderboard-status"
                        data-status={entry.status}
                        title={entry.status}
                      >
                        <span className="nbrunner-sr-only">{entry.status}</span>
                      </span>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            </div>
          )}
          <ul className="nbrunner-JobList nbrunner-SweepGroup-trials" aria-label={`Trials of sweep ${id}`}>
            {jobs.map(job => (
              <JobRow
                key={job.id}
                job={job}
                now={props.now}
                busy={props.pending.has(job.id)}
                highlighted={props.highlight === job.id}
                handlers={props.handlers}
              />
            ))}
          </ul>
        </div>
      )}
    </li>
  );
}
