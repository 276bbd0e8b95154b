/**
 * Notifications when a job or sweep of the user's ends: polls the job list (also while
 * the Jobs panel is closed) and notifies once per job, for jobs seen running or queued
 * (or submitted) since JupyterLab loaded; never for what had ended before.
 */
import { Notification } from '@jupyterlab/apputils';
import { IDisposable } from '@lumino/disposable';

import { getSweep, listJobs } from './api';
import { cancelledHere } from './components/confirmCancel';
import { PENDING_TRIAL } from './constants';
import { formatNumber, jobElapsed, parseTime } from './format';
import { Poller } from './poller';
import { IJob, isFinished } from './types';

export namespace JobNotifier {
  export interface IOptions {
    openJob: (id: string, name?: string) => void;
    revealJobs: () => void;
    interval?: number;
  }
}

const SUBMITTED_KEY = 'nbrunner:submitted-jobs';
const OWNER_KEY = 'nbrunner:owners';
const KEEP = 500;

function loadList(key: string): string[] {
  try {
    const value = JSON.parse(window.localStorage.getItem(key) ?? '[]');
    return Array.isArray(value) ? value.filter(v => typeof v === 'string') : [];
  } catch {
    return [];
  }
}

function saveList(key: string, values: Iterable<string>): void {
  try {
    window.localStorage.setItem(key, JSON.stringify(Array.from(values).slice(-KEEP)));
  } catch {
    // storage full or disabled: notifications still work for this session
  }
}

export class JobNotifier implements IDisposable {
  constructor(options: JobNotifier.IOptions) {
    this._options = options;
    this._poller = new Poller({
      interval: options.interval ?? 3000,
      active: () => true,
      tick: () => this.check()
    });
  }

  get isDisposed(): boolean {
    return this._poller.isDisposed;
  }

  start(): void {
    this._poller.start();
    void this.check();
  }

  dispose(): void {
    this._poller.dispose();
  }

  /** A job submitted from this browser: notify when it ends; its owner is the user. */
  watch(job: IJob): void {
    this._submitted.add(job.id);
    saveList(SUBMITTED_KEY, this._submitted);
    if (job.owner && !this._owners.has(job.owner)) {
      this._owners.add(job.owner);
      saveList(OWNER_KEY, this._owners);
    }
    if (!this._known.has(job.id)) {
      this._known.set(job.id, job.status);
    }
  }

  /** Poll once: notify for the user's jobs and sweeps that ended since the last poll. */
  async check(): Promise<void> {
    let jobs: IJob[];
    try {
      jobs = (await listJobs()).jobs ?? [];
    } catch {
      return; // the panel shows why; try again next tick
    }
    const owners = new Set(jobs.map(j => j.owner).filter(o => !!o));
    // A single-user server: every job is the user's.
    const sole = owners.size === 1 ? Array.from(owners)[0] : null;
    const mine = (job: IJob) =>
      this._submitted.has(job.id) ||
      (!!job.owner && (this._owners.has(job.owner) || (!this._owners.size && job.owner === sole)));

    if (!this._baseline) {
      this._baseline = true;
      for (const job of jobs) {
        if (!this._known.has(job.id)) {
          this._known.set(job.id, job.status);
        }
        if (job.sweep && !isFinished(job.status)) {
          this._activeSweeps.add(job.sweep);
        }
      }
      // Jobs submitted here that ended while Lab was closed: no notification.
      for (const job of jobs) {
        if (isFinished(job.status)) {
          this._notified.add(job.id);
        }
      }
      return;
    }
    for (const job of jobs) {
      const previous = this._known.get(job.id);
      this._known.set(job.id, job.status);
      const isNew =
        previous === undefined &&
        (parseTime(job.created_at) ?? 0) >= this._loadedAt - 5000;
      if (job.sweep) {
        if (mine(job) && (!isFinished(job.status) || isNew)) {
          this._activeSweeps.add(job.sweep);
        }
        continue; // trials: one notification for the whole sweep
      }
      if (!isFinished(job.status) || this._notified.has(job.id) || !mine(job)) {
        continue;
      }
      const wasActive = previous !== undefined ? !isFinished(previous) : isNew;
      this._notified.add(job.id);
      // The user who cancelled a job here knows: the badge says it.
      if (wasActive && !(job.status === 'cancelled' && cancelledHere.has(job.id))) {
        this._notifyJob(job);
      }
    }
    for (const sweep of Array.from(this._activeSweeps)) {
      const trials = jobs.filter(j => j.sweep === sweep);
      if (trials.length === 0 || !trials.every(j => isFinished(j.status))) {
        continue;
      }
      try {
        const state = await getSweep(sweep);
        const board = state.leaderboard ?? [];
        if (board.some(e => e.status === PENDING_TRIAL || !isFinished(e.status))) {
          continue;
        }
        this._activeSweeps.delete(sweep);
        this._notifySweep(sweep, trials, board);
      } catch {
        // ask again next tick
      }
    }
  }

  private _notifyJob(job: IJob): void {
    const { openJob } = this._options;
    const actions = [
      {
        label: 'Open job',
        caption: `Open the page of job ${job.name}`,
        callback: () => openJob(job.id, job.name)
      }
    ];
    const took = jobElapsed(job).text;
    if (job.status === 'completed') {
      Notification.success(`Job ${job.name} completed in ${took}.`, {
        autoClose: 15000,
        actions
      });
    } else if (job.status === 'failed') {
      Notification.error(`Job ${job.name} failed: ${job.error ?? 'unknown error'}`, {
        autoClose: 30000,
        actions
      });
    } else {
      Notification.warning(`Job ${job.name} was cancelled.`, {
        autoClose: 10000,
        actions
      });
    }
  }

  private _notifySweep(
    sweep: string,
    trials: IJob[],
    board: Array<{ rank: number | null; job: string | null; objective: number | null; status: string }>
  ): void {
    const best = board.find(e => e.rank === 1 && e.job) ?? null;
    const failed = board.filter(e => e.status === 'failed').length;
    const bestJob = best ? trials.find(j => j.id === best.job) : undefined;
    const text =
      `Sweep ${sweep} ended: ${board.length} trials` +
      (failed ? `, ${failed} failed` : '') +
      (best
        ? `; best ${bestJob?.name ?? best.job}` +
          (best.objective !== null ? ` (${formatNumber(best.objective)})` : '')
        : '') +
      '.';
    const actions = [
      { label: 'Show jobs', caption: 'Open the Jobs panel', callback: this._options.revealJobs }
    ];
    if (best?.job) {
      const id = best.job;
      actions.unshift({
        label: 'Open best trial',
        caption: `Open the page of job ${id}`,
        callback: () => this._options.openJob(id, bestJob?.name)
      });
    }
    (failed === board.length ? Notification.error : Notification.success)(text, {
      autoClose: 20000,
      actions
    });
  }

  private _options: JobNotifier.IOptions;
  private _poller: Poller;
  private _baseline = false;
  private _loadedAt = Date.now();
  private _known = new Map<string, string>();
  private _notified = new Set<string>();
  private _submitted = new Set<string>(loadList(SUBMITTED_KEY));
  private _owners = new Set<string>(loadList(OWNER_KEY));
  private _activeSweeps = new Set<string>();
}
