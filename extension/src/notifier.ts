/**
 * Notifications when a job or sweep of the user's ends, from the push channel's changes
 * (and, while it cannot be opened, from polling the newest jobs): once per job, for jobs that
 * end while JupyterLab is open; never for what had ended before.  "The user's": a job
 * submitted from this browser, or owned by the user the server names on the channel (or,
 * without the channel, by the owner of the jobs submitted here, or the only owner listed).
 */
import { Notification } from '@jupyterlab/apputils';
import { IDisposable } from '@lumino/disposable';
import { Signal } from '@lumino/signaling';

import { getSweep, listJobs } from './api';
import { PushChannel } from './channel';
import { cancelledHere } from './components/confirmCancel';
import { PENDING_TRIAL } from './constants';
import { Change, ISweepChange } from './events';
import { formatNumber, jobElapsed, parseTime } from './format';
import { Poller } from './poller';
import { IJob, isFinished } from './types';

export namespace JobNotifier {
  export interface IOptions {
    channel: PushChannel;
    openJob: (id: string, name?: string) => void;
    revealJobs: () => void;
    /** Poll interval in ms while the channel cannot be opened. */
    interval?: number;
  }
}

const SUBMITTED_KEY = 'nbrunner:submitted-jobs';
const OWNER_KEY = 'nbrunner:owners';
const KEEP = 500;
/** A job or sweep the notifier never saw unfinished counts as ending now if it ended this recently. */
const RECENT_MS = 5000;

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
    this._channel = options.channel;
    this._poller = new Poller({
      interval: options.interval ?? 3000,
      active: () => this._channel.mode === 'polling',
      tick: () => this.check()
    });
  }

  get isDisposed(): boolean {
    return this._poller.isDisposed;
  }

  start(): void {
    this._loadedAt = Date.now();
    this._channel.jobChanged.connect((_, change) => this._onJob(change), this);
    this._channel.sweepChanged.connect((_, change) => void this._onSweep(change), this);
    this._poller.start();
  }

  dispose(): void {
    this._poller.dispose();
    Signal.clearData(this);
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

  /** Poll once (while the channel cannot be opened): the newest jobs, as changes. */
  async check(): Promise<void> {
    let jobs: IJob[];
    try {
      jobs = (await listJobs(undefined, 50)).jobs ?? [];
    } catch {
      return; // the panel shows why; try again next tick
    }
    const owners = new Set(jobs.map(j => j.owner).filter(o => !!o));
    this._sole = owners.size === 1 ? Array.from(owners)[0]! : null;
    for (const job of jobs) {
      this._onJob({ record: job, deleted: false });
    }
    for (const sweep of Array.from(this._activeSweeps)) {
      await this._sweepEnded(sweep, null);
    }
  }

  private _mine(owner: string | null | undefined, id?: string): boolean {
    if (id !== undefined && this._submitted.has(id)) {
      return true;
    }
    const user = this._channel.user;
    if (user !== null) {
      return owner === user;
    }
    return !!owner && (this._owners.has(owner) || (!this._owners.size && owner === this._sole));
  }

  /** Whether a finished record ended while JupyterLab was open (it was seen unfinished, or just ended). */
  private _endedNow(previous: string | undefined, finishedAt: string | null | undefined): boolean {
    if (previous !== undefined) {
      return !isFinished(previous);
    }
    return (parseTime(finishedAt) ?? 0) >= this._loadedAt - RECENT_MS;
  }

  private _onJob(change: Change<IJob>): void {
    if (change.deleted) {
      return;
    }
    const job = change.record;
    const previous = this._known.get(job.id);
    this._known.set(job.id, job.status);
    if (job.sweep) {
      if (this._mine(job.owner, job.id) && !isFinished(job.status)) {
        this._activeSweeps.add(job.sweep); // one notification for the whole sweep
      }
      return;
    }
    if (!isFinished(job.status) || this._notified.has(job.id)) {
      return;
    }
    this._notified.add(job.id);
    // The user who cancelled a job here knows: the badge says it.
    if (
      this._mine(job.owner, job.id) &&
      this._endedNow(previous, job.finished_at) &&
      !(job.status === 'cancelled' && cancelledHere.has(job.id))
    ) {
      this._notifyJob(job);
    }
  }

  private async _onSweep(change: Change<ISweepChange>): Promise<void> {
    if (change.deleted) {
      return;
    }
    const sweep = change.record;
    if (!this._mine(sweep.owner) || !['completed', 'cancelled'].includes(sweep.status)) {
      return;
    }
    if (this._activeSweeps.has(sweep.id) || this._endedNow(undefined, sweep.finished_at)) {
      await this._sweepEnded(sweep.id, sweep);
    }
  }

  /** Notify that `id` ended, once, if its leaderboard says every trial has ended. */
  private async _sweepEnded(id: string, known: ISweepChange | null): Promise<void> {
    if (this._notifiedSweeps.has(id)) {
      return;
    }
    try {
      const state = await getSweep(id);
      const board = state.leaderboard ?? [];
      if (!known && board.some(e => e.status === PENDING_TRIAL || !isFinished(e.status))) {
        return;
      }
      if (this._notifiedSweeps.has(id)) {
        return;
      }
      this._notifiedSweeps.add(id);
      this._activeSweeps.delete(id);
      const trials = (state.jobs ?? []).filter((j): j is IJob => typeof j !== 'string');
      this._notifySweep(id, trials, board);
    } catch {
      // asked again at the next change (or poll)
    }
  }

  private _notifyJob(job: IJob): void {
    const { openJob } = this._options;
    const actions = [
      { label: 'Open job', caption: `Open the page of job ${job.name}`, callback: () => openJob(job.id, job.name) }
    ];
    const took = jobElapsed(job).text;
    if (job.status === 'completed') {
      Notification.success(`Job ${job.name} completed in ${took}.`, { autoClose: 15000, actions });
    } else if (job.status === 'failed') {
      Notification.error(`Job ${job.name} failed: ${job.error ?? 'unknown error'}`, { autoClose: 30000, actions });
    } else {
      Notification.warning(`Job ${job.name} was cancelled.`, { autoClose: 10000, actions });
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
        ? `; best ${bestJob?.name ?? best.job}` + (best.objective !== null ? ` (${formatNumber(best.objective)})` : '')
        : '') +
      '.';
    const actions = [{ label: 'Show jobs', caption: 'Open the Jobs panel', callback: this._options.revealJobs }];
    if (best?.job) {
      const id = best.job;
      actions.unshift({
        label: 'Open best trial',
        caption: `Open the page of job ${id}`,
        callback: () => this._options.openJob(id, bestJob?.name)
      });
    }
    (failed === board.length ? Notification.error : Notification.success)(text, { autoClose: 20000, actions });
  }

  private _options: JobNotifier.IOptions;
  private _channel: PushChannel;
  private _poller: Poller;
  private _loadedAt = Date.now();
  private _sole: string | null = null;
  private _known = new Map<string, string>();
  private _notified = new Set<string>();
  private _notifiedSweeps = new Set<string>();
  private _submitted = new Set<string>(loadList(SUBMITTED_KEY));
  private _owners = new Set<string>(loadList(OWNER_KEY));
  private _activeSweeps = new Set<string>();
}
