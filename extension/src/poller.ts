/**
 * One poller for the views that refresh themselves (Jobs panel, cluster view): it calls
 * `tick` every `interval` ms while `active()` holds and the browser tab is visible, and
 * never runs two ticks at once.
 */
import { IDisposable } from '@lumino/disposable';

export namespace Poller {
  export interface IOptions {
    /** Milliseconds between ticks. */
    interval: number;
    /** The work of one tick. */
    tick: () => Promise<void> | void;
    /** Whether to tick now (e.g. the widget is visible). */
    active: () => boolean;
  }
}

export class Poller implements IDisposable {
  constructor(options: Poller.IOptions) {
    this._options = options;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  get running(): boolean {
    return this._timer !== null;
  }

  /** Start ticking (a no-op when already started or disposed). */
  start(): void {
    if (this._timer !== null || this._disposed) {
      return;
    }
    this._timer = window.setInterval(() => void this._tick(), this._options.interval);
  }

  stop(): void {
    if (this._timer !== null) {
      window.clearInterval(this._timer);
      this._timer = null;
    }
  }

  dispose(): void {
    this.stop();
    this._disposed = true;
  }

  private async _tick(): Promise<void> {
    if (this._busy || !this._options.active() || document.hidden) {
      return;
    }
    this._busy = true;
    try {
      await this._options.tick();
    } finally {
      this._busy = false;
    }
  }

  private _options: Poller.IOptions;
  private _timer: number | null = null;
  private _busy = false;
  private _disposed = false;
}
