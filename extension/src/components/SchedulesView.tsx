/**
 * The Schedules view (main area): every schedule with its timing, next and last run,
 * pause/resume, edit and delete; below, the runs of the selected schedule, newest first,
 * live.  Kept up to date by the push channel (on a timer while it cannot be opened).
 */
import { Notification } from '@jupyterlab/apputils';
import { LabIcon } from '@jupyterlab/ui-components';
import * as React from 'react';

import {
  ApiError,
  deleteSchedule,
  errorMessage,
  listScheduleRuns,
  listSchedules,
  updateSchedule
} from '../api';
import { JOBS_POLL_MS } from '../constants';
import { PushChannel } from '../channel';
import { Change } from '../events';
import { applyChange, EMPTY_QUERY } from '../job-table';
import { PollingWidget } from '../polling-widget';
import { IJob, ISchedule } from '../types';
import { ActionButton } from './ActionButton';
import { Banner } from './Banner';
import { confirmDeleteSchedule } from './confirmDeleteSchedule';
import { cancelAfterConfirming, changePriority } from './rowActions';
import { JobTable } from './JobTable';
import { IRowHandlers } from './JobTableRow';
import { LiveStatus } from './LiveStatus';
import { PanelHeader } from './PanelHeader';
import { IScheduleHandlers, ScheduleRow } from './ScheduleRow';

/** A clock face: schedules. */
const SCHEDULE_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <path class="jp-icon3" fill="#616161" d="M12 2a10 10 0 1 1 0 20 10 10 0 0 1 0-20zm0 2a8 8 0 1 0 0 16 8 8 0 0 0 0-16zm-1 3h2v4.6l3.4 2-1 1.7L11 12.7z"/>
</svg>`;

/** Runs of the selected schedule shown, newest first. */
const RUNS_SHOWN = 50;

export const scheduleIcon = new LabIcon({
  name: 'nbrunner:schedule',
  svgstr: SCHEDULE_SVG
});

export namespace SchedulesView {
  export interface IOptions {
    channel: PushChannel;
    openLog: (job: IJob) => void;
    openOutput: (job: IJob) => void;
    openJob: (job: IJob) => void;
    /** Edit a schedule in the Run-as-job dialog; the updated one, or null. */
    edit: (schedule: ISchedule) => Promise<ISchedule | null>;
    interval?: number;
  }
}

export class SchedulesView extends PollingWidget {
  constructor(options: SchedulesView.IOptions) {
    super(options.interval ?? JOBS_POLL_MS);
    this._options = options;
    this.addClass('nbrunner-SchedulesView');
    this.node.dataset.testid = 'nbrunner-schedules-view';
    this.node.setAttribute('role', 'region');
    this.node.setAttribute('aria-label', 'nbrunner schedules');
    this.title.label = 'Schedules';
    this.title.caption = 'nbrunner schedules and their runs';
    this.title.icon = scheduleIcon;
    const channel = (this._channel = options.channel);
    channel.scheduleChanged.connect((_, change) => this._onSchedule(change), this);
    channel.jobChanged.connect((_, change) => this._onRun(change), this);
    channel.reloaded.connect(() => void this.refresh(), this);
    channel.modeChanged.connect(() => this.update(), this);
  }

  protected polls(): boolean {
    return this._channel.mode === 'polling';
  }

  private _onSchedule(change: Change<ISchedule>): void {
    if (this._schedules === null) {
      return;
    }
    if (change.deleted) {
      this._schedules = this._schedules.filter(s => s.id !== change.id);
    } else if (this._schedules.some(s => s.id === change.record.id)) {
      this._replace(change.record);
    } else {
      this._schedules = [...this._schedules, change.record];
    }
    this.update();
  }

  /** A job changed: a run of the selected schedule goes into its runs, newest first. */
  private _onRun(change: Change<IJob>): void {
    if (!this._selected || this._runs === null) {
      return;
    }
    const query = { ...EMPTY_QUERY, schedule: this._selected, limit: RUNS_SHOWN };
    const applied = applyChange(this._runs, change, query, { first: true, last: this._runs.length < RUNS_SHOWN });
    if (applied.rows !== this._runs) {
      this._runs = applied.rows;
      this.update();
    }
  }

  /** Show the runs of this schedule (e.g. one just created). */
  select(id: string): void {
    this._selected = id;
    this._runs = null;
    this.update();
    void this.refresh();
  }

  /** The schedules and the runs of the selected one. */
  protected async fetch(): Promise<void> {
    const selected = this._selected;
    const [schedules, runs] = await Promise.allSettled([
      listSchedules(),
      selected ? listScheduleRuns(selected, RUNS_SHOWN) : Promise.resolve(null)
    ]);
    if (schedules.status === 'fulfilled') {
      this._schedules = Array.isArray(schedules.value?.schedules)
        ? schedules.value.schedules
        : [];
      this._error = null;
    } else {
      this._error = errorMessage(schedules.reason);
      if (schedules.reason instanceof ApiError && schedules.reason.unavailable) {
        this._schedules = null;
      }
    }
    if (selected === this._selected) {
      if (runs.status === 'fulfilled') {
        this._runs = runs.value ? runs.value.jobs : null;
        this._runsError = null;
      } else {
        this._runsError = errorMessage(runs.reason);
      }
    }
  }

  private async _act(schedule: ISchedule, what: string, action: () => Promise<void>) {
    if (this._pending.has(schedule.id)) {
      return;
    }
    this._pending.add(schedule.id);
    this.update();
    try {
      await action();
    } catch (error) {
      Notification.error(
        `Could not ${what} schedule ${schedule.name}: ${errorMessage(error)}`,
        { autoClose: 8000 }
      );
    } finally {
      this._pending.delete(schedule.id);
      await this.refresh();
    }
  }

  private _replace(updated: ISchedule): void {
    if (this._schedules && updated && updated.id) {
      this._schedules = this._schedules.map(s => (s.id === updated.id ? updated : s));
    }
  }

  private _scheduleHandlers(): IScheduleHandlers {
    return {
      onSelect: s => this.select(s.id),
      onPause: (s, paused) =>
        void this._act(s, paused ? 'pause' : 'resume', async () =>
          this._replace(await updateSchedule(s.id, { paused }))
        ),
      onEdit: s =>
        void this._act(s, 'edit', async () => {
          const updated = await this._options.edit(s);
          if (updated) {
            this._replace(updated);
          }
        }),
      onDelete: s =>
        void this._act(s, 'delete', async () => {
          if (!(await confirmDeleteSchedule(s))) {
            return;
          }
          await deleteSchedule(s.id);
          this._schedules = (this._schedules ?? []).filter(x => x.id !== s.id);
          if (this._selected === s.id) {
            this._selected = null;
            this._runs = null;
          }
        })
    };
  }

  private _runHandlers(): IRowHandlers {
    return {
      onCancel: job =>
        void cancelAfterConfirming(job).then(() => {
          if (!this._channel.live) {
            void this.refresh();
          }
        }),
      onLog: job => this._options.openLog(job),
      onOpen: job => this._options.openOutput(job),
      onDetails: job => this._options.openJob(job),
      onPriority: async (job, priority) => {
        const updated = await changePriority(job, priority);
        if (updated && !this._channel.live) {
          void this.refresh();
        }
        return updated !== null;
      }
    };
  }


  protected render(): React.ReactElement {
    const now = Date.now();
    const schedules = this._schedules;
    const selected = schedules?.find(s => s.id === this._selected) ?? null;
    const handlers = this._scheduleHandlers();
    return (
      <div className="nbrunner-SchedulesView-content">
        <PanelHeader title="nbrunner schedules">
          <LiveStatus mode={this._channel.mode} pollSeconds={JOBS_POLL_MS / 1000} />
          <ActionButton
            testid="nbrunner-schedules-refresh"
            label="Refresh schedules"
            onClick={() => void this.refresh()}
          >
            Refresh
          </ActionButton>
        </PanelHeader>
        {this._error && (
          <Banner tone="error">{this._error}</Banner>
        )}
        {schedules === null ? (
          <p className="nbrunner-Empty">Loading schedules…</p>
        ) : schedules.length === 0 ? (
          <p className="nbrunner-Empty" data-testid="nbrunner-schedules-empty">
            No schedules yet. Open a notebook, click <b>Run as job</b> and choose{' '}
            <b>Run on a schedule</b>.
          </p>
        ) : (
          <table className="nbrunner-ScheduleTable" data-testid="nbrunner-schedules">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Notebook</th>
                <th scope="col">When</th>
                <th scope="col">Time zone</th>
                <th scope="col">Next run</th>
                <th scope="col">Last run</th>
                <th scope="col">State</th>
                <th scope="col">
                  <span className="nbrunner-sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {schedules.map(s => (
                <ScheduleRow
                  key={s.id}
                  schedule={s}
                  now={now}
                  selected={s.id === this._selected}
                  busy={this._pending.has(s.id)}
                  handlers={handlers}
                />
              ))}
            </tbody>
          </table>
        )}
        {selected && (
          <section
            className="nbrunner-ScheduleRuns"
            data-testid="nbrunner-schedule-runs"
            data-schedule-id={selected.id}
            aria-label={`Runs of schedule ${selected.name}`}
          >
            <h3 className="nbrunner-ScheduleRuns-title">
              Runs of <b>{selected.name}</b>{' '}
              <span className="nbrunner-Muted" data-testid="nbrunner-schedule-run-count">
                {this._runs ? `${this._runs.length} run${this._runs.length === 1 ? '' : 's'}` : ''}
              </span>
            </h3>
            {this._runsError && (
              <Banner tone="warn">{this._runsError}</Banner>
            )}
            {this._runs && this._runs.length === 0 && (
              <p className="nbrunner-Empty" data-testid="nbrunner-schedule-runs-empty">
                No runs yet{selected.paused ? ' (paused)' : ''}.
              </p>
            )}
            {this._runs && this._runs.length > 0 && (
              <div className="nbrunner-JobTable-wrap">
                <JobTable
                  rows={this._runs}
                  label={`Runs of ${selected.name}`}
                  now={now}
                  handlers={this._runHandlers()}
                  testid="nbrunner-schedule-run-list"
                />
              </div>
            )}
          </section>
        )}
      </div>
    );
  }

  private _options: SchedulesView.IOptions;
  private _channel: PushChannel;
  private _schedules: ISchedule[] | null = null;
  private _error: string | null = null;
  private _selected: string | null = null;
  private _runs: IJob[] | null = null;
  private _runsError: string | null = null;
  private _pending = new Set<string>();
}
