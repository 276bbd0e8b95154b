/**
 * The lifecycle shared by the views that refresh themselves (Jobs and Models panels,
 * Schedules view, job pages, cluster view): a refresh on show and on attach, coalesced
 * refreshes, and a Poller that runs while the widget is visible and `polls()` says so (the
 * views the push channel keeps up to date poll only while it cannot be opened).
 */
import { ReactWidget } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';

import { Poller } from './poller';

export abstract class PollingWidget extends ReactWidget {
  /** Poll every `interval` ms while visible. */
  constructor(interval: number) {
    super();
    this.poller = new Poller({
      interval,
      active: () => this.isVisible && this.polls(),
      tick: () => this.refresh()
    });
  }

  /**
   * Fetch now, then render.  A call while a fetch is in flight waits for it and asks for
   * one more fetch after it, so every call is followed by data fetched after the call.
   */
  async refresh(): Promise<void> {
    if (this.isDisposed) {
      return;
    }
    if (this._inFlight) {
      this._again = true;
      return this._inFlight;
    }
    this._inFlight = this.fetch();
    try {
      await this._inFlight;
    } finally {
      this._inFlight = null;
    }
    if (this.isDisposed) {
      return;
    }
    this.update();
    if (this._again) {
      this._again = false;
      await this.refresh();
    }
  }

  dispose(): void {
    this.poller.dispose();
    super.dispose();
  }

  /** Whether the timer refreshes the widget now (always, unless a view says otherwise). */
  protected polls(): boolean {
    return true;
  }

  /** Read the server into the widget's state (rendering is done by `refresh`). */
  protected abstract fetch(): Promise<void>;

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this.poller.start();
    void this.refresh();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    // A hidden widget starts on its after-show message instead.
    if (this.isVisible) {
      this.poller.start();
      void this.refresh();
    }
  }

  protected onBeforeHide(msg: Message): void {
    super.onBeforeHide(msg);
    this.poller.stop();
  }

  protected onBeforeDetach(msg: Message): void {
    this.poller.stop();
    super.onBeforeDetach(msg);
  }

  protected readonly poller: Poller;
  private _inFlight: Promise<void> | null = null;
  private _again = false;
}
