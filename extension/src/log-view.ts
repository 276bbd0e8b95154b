/**
 * A main-area view tailing a job's log (GET /jobs/{id}/log?offset=N).
 */
import { Widget } from '@lumino/widgets';

import { ApiError, errorMessage, getJob, getLog } from './api';
import { LOG_TAIL_MS } from './constants';
import { logIcon } from './icons';
import { IJob, isFinished } from './types';

/** How often the log is polled while the job runs (ms). */
/** Polls after the job finished that bring no new text before stopping. */
const DRAIN_POLLS = 2;
/** A chunk at least this long may have more behind it: read again at once. */
const CHUNK_HINT = 65536;

export class JobLogView extends Widget {
  constructor(options: JobLogView.IOptions) {
    super();
    this.jobId = options.id;
    this._name = options.name ?? options.id;
    this._interval = options.interval ?? LOG_TAIL_MS;
    this.id = `nbrunner-log-${options.id}`;
    this.addClass('nbrunner-LogView');
    this.node.dataset.testid = 'nbrunner-log-view';
    this.node.dataset.jobId = options.id;
    this.title.label = `Log: ${this._name}`;
    this.title.caption = `Log of nbrunner job ${this._name} (${options.id})`;
    this.title.icon = logIcon;
    this.title.closable = true;

    this._statusNode = document.createElement('div');
    this._statusNode.className = 'nbrunner-LogView-status';
    this._statusNode.dataset.testid = 'nbrunner-log-status';
    this._statusNode.setAttribute('role', 'status');
    this._statusNode.setAttribute('aria-live', 'polite');
    this._statusNode.textContent = 'Loading…';

    this._textNode = document.createElement('pre');
    this._textNode.className = 'nbrunner-LogView-text';
    this._textNode.dataset.testid = 'nbrunner-log-text';
    this._textNode.tabIndex = 0;
    this._textNode.setAttribute('aria-label', `Log of job ${this._name}`);

    this.node.appendChild(this._statusNode);
    this.node.appendChild(this._textNode);
    void this._tick();
  }

  readonly jobId: string;

  /** Display name of the job. */
  get jobName(): string {
    return this._name;
  }

  /** Whether the view stopped polling (the job finished and the log is drained). */
  get done(): boolean {
    return this._done;
  }

  /** All log text received so far. */
  get text(): string {
    return this._textNode.textContent ?? '';
  }

  dispose(): void {
    if (this._timer !== null) {
      window.clearTimeout(this._timer);
      this._timer = null;
    }
    super.dispose();
  }

  private _schedule(delay: number): void {
    if (this.isDisposed) {
      return;
    }
    this._timer = window.setTimeout(() => {
      this._timer = null;
      void this._tick();
    }, delay);
  }

  private async _tick(): Promise<void> {
    if (this.isDisposed) {
      return;
    }
    // Status first, then the log: when the job is seen finished, the log read
    // after it holds everything up to the end.
    let job: IJob | null = null;
    try {
      job = await getJob(this.jobId);
      this._job = job;
    } catch (error) {
      if (error instanceof ApiError && error.status === 404 && !error.unavailable) {
        this._setStatus(`Job ${this.jobId} not found: ${error.message}`, 'error');
        this._done = true;
        return;
      }
      this._setStatus(`Cannot read job ${this.jobId}: ${errorMessage(error)}`, 'error');
      this._schedule(this._interval * 5);
      return;
    }
    let gotText = false;
    try {
      // The server may answer a long log in chunks.
      for (let i = 0; i < 50 && !this.isDisposed; i++) {
        const chunk = await getLog(this.jobId, this._offset);
        const text = chunk?.text ?? '';
        if (typeof chunk?.offset === 'number') {
          this._offset = chunk.offset;
        } else {
          this._offset += text.length;
        }
        if (text) {
          gotText = true;
          this._append(text);
        }
        if (text.length < CHUNK_HINT) {
          break;
        }
      }
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 404 && !error.unavailable)) {
        this._setStatus(`Cannot read the log: ${errorMessage(error)}`, 'error');
        this._schedule(this._interval * 3);
        return;
      }
      // 404 with a message: no log yet (the job has not started).
    }
    if (this.isDisposed) {
      return;
    }
    const finished = isFinished(job.status);
    if (finished) {
      this._drained = gotText ? 0 : this._drained + 1;
    }
    if (finished && this._drained >= DRAIN_POLLS) {
      this._done = true;
      this._setStatus(
        `Job ${job.status}` +
          (job.error ? `: ${job.error}` : '') +
          ' — end of log.',
        job.status === 'completed' ? 'done' : 'error'
      );
      this.node.dataset.done = 'true';
      return;
    }
    this._setStatus(
      finished
        ? `Job ${job.status}; reading the end of the log…`
        : job.status === 'queued'
          ? 'Job queued; waiting for it to start…'
          : `Job ${job.status}; following the log…`,
      'live'
    );
    this._schedule(this._interval);
  }

  private _append(text: string): void {
    const pre = this._textNode;
    const atBottom =
      pre.scrollHeight - pre.scrollTop - pre.clientHeight < 24;
    pre.appendChild(document.createTextNode(text));
    if (atBottom) {
      pre.scrollTop = pre.scrollHeight;
    }
  }

  private _setStatus(text: string, kind: 'live' | 'done' | 'error'): void {
    this._statusNode.textContent = text;
    this._statusNode.dataset.kind = kind;
    if (this._job) {
      this.node.dataset.status = this._job.status;
    }
  }

  private _name: string;
  private _interval: number;
  private _offset = 0;
  private _drained = 0;
  private _done = false;
  private _job: IJob | null = null;
  private _timer: number | null = null;
  private _statusNode: HTMLDivElement;
  private _textNode: HTMLPreElement;
}

export namespace JobLogView {
  export interface IOptions {
    id: string;
    name?: string;
    interval?: number;
  }
}
