/**
 * The Jobs side panel: live list of jobs, sweeps with their leaderboard, and a summary
 * of the cluster.  Refreshed by a Poller while visible.
 */
import { Notification } from '@jupyterlab/apputils';
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
} from '../api';
import { JOBS_POLL_MS, STATUSES } from '../constants';
import { jobsIcon } from '../icons';
import { groupJobs } from '../ordering';
import { PollingWidget } from '../polling-widget';
import { ICluster, IJob } from '../types';
import { ActionButton } from './ActionButton';
import { Banner } from './Banner';
import { ClusterSummary } from './ClusterSummary';
import { confirmCancel } from './confirmCancel';
import { IRowHandlers, JobRow } from './JobRow';
import { PanelHeader } from './PanelHeader';
import { ISweepState, SweepGroup } from './SweepGroup';

export namespace JobsPanel {
  export interface IOptions {
    /** Open the live log of a job. */
    openLog: (job: IJob) => void;
    /** Open the executed notebook of a job. */
    openOutput: (job: IJob) => void;
    /** Open the page of a job. */
    openJob: (job: IJob) => void;
    /** Open the cluster view. */
    openCluster: () => void;
    /** Open the Schedules view. */
    openSchedules?: () => void;
    /** Jobs that saved a model, and registering it ("Register model" on their rows). */
    models?: {
      jobsWithModel: () => Promise<string[]>;
      register: (job: IJob) => void;
    };
    /** Poll interval in ms while visible. */
    interval?: number;
  }
}

export class JobsPanel extends PollingWidget {
  constructor(options: JobsPanel.IOptions) {
    super(options.interval ?? JOBS_POLL_MS);
    this._options = options;
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

  /** Jobs, cluster summary and the sweeps of the listed trials. */
  protected async fetch(): Promise<void> {
    const [jobs, cluster, withModel] = await Promise.allSettled([
      listJobs(this._filter || undefined),
      getCluster(),
      this._options.models?.jobsWithModel() ?? Promise.resolve([])
    ]);
    if (withModel.status === 'fulfilled') {
      this._withModel = new Set(withModel.value);
    }
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
  }

  private _replaceJob(job: IJob): void {
    if (this._jobs) {
      this._jobs = this._jobs.map(j => (j.id === job.id ? job : j));
    }
    this.update();
  }

  private async _cancel(job: IJob): Promise<void> {
    if (this._pending.has(job.id)) {
      return;
    }
    this._pending.add(job.id);
    this.update();
    try {
      if (!(await confirmCancel(job))) {
        return;
      }
      const updated = await cancelJob(job.id);
      if (updated && updated.id) {
        this._replaceJob(updated);
      }
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
      this._replaceJob(updated && updated.id ? updated : { ...job, priority });
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
      onDetails: job => this._options.openJob(job),
      onPriority: (job, p) => this._setPriority(job, p),
      onRegister: this._options.models?.register,
      hasModel: job => this._withModel.has(job.id)
    };
    const entries = groupJobs(jobs ?? []);
    return (
      <div className="nbrunner-JobsPanel-content">
        <PanelHeader title="nbrunner jobs">
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
          <ActionButton
            testid="nbrunner-refresh"
            label="Refresh jobs"
            title="Refresh jobs"
            onClick={() => void this.refresh()}
          >
            Refresh
          </ActionButton>
          <ActionButton
            testid="nbrunner-open-cluster"
            label="Open the cluster view"
            title="Open the cluster view: slots per host and GPU timeline"
            onClick={() => this._options.openCluster()}
          >
            Cluster
          </ActionButton>
          {this._options.openSchedules && (
            <ActionButton
              testid="nbrunner-open-schedules"
              label="Open the schedules view"
              title="Schedules: notebooks that run on a clock"
              onClick={() => this._options.openSchedules?.()}
            >
              Schedules
            </ActionButton>
          )}
        </PanelHeader>

        {this._cluster && <ClusterSummary cluster={this._cluster} />}

        {this._error && (
          <Banner tone={this._unavailable ? 'error' : 'warn'} testid="nbrunner-jobs-error">
            <p>
              {this._unavailable || jobs === null
                ? 'Cannot list jobs. '
                : 'Could not refresh the job list. '}
              {this._error}
            </p>
            <ActionButton testid="nbrunner-retry" onClick={() => void this.refresh()}>
              Retry
            </ActionButton>
          </Banner>
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
  private _jobs: IJob[] | null = null;
  private _cluster: ICluster | null = null;
  private _withModel = new Set<string>();
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
