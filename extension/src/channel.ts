/**
 * The push channel: one `GET /events` stream per browser tab, shared by every view (Jobs
 * panel, job pages, cluster view, Schedules view, notifier).  It reconnects by itself,
 * resuming after the last event id it saw (`Last-Event-ID`); when it cannot be opened
 * (an older server, a proxy that drops streams, no cluster yet) its mode is `polling` and the
 * views refresh themselves on a timer until it opens again.  The wire format is `events.ts`.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import {
  Change,
  clusterChange,
  FALLBACK_AFTER,
  IReady,
  IServerEvent,
  ISweepChange,
  jobChange,
  pipelineChange,
  readyOf,
  retryDelay,
  scheduleChange,
  ServerEventParser,
  SILENCE_MS,
  sweepChange
} from './events';
import { ICluster, IJob, IPipeline, ISchedule } from './types';
import { API_PREFIX } from './wire';

/** `connecting` until the first answer; `live` while the stream is open; `polling` when it
 * cannot be opened (the views poll; the channel keeps trying). */
export type ChannelMode = 'connecting' | 'live' | 'polling';

/** While polling, how long before the channel tries to open again. */
const REOPEN_MS = 30000;

export class PushChannel implements IDisposable {
  /** A job changed (or was deleted). */
  get jobChanged(): ISignal<this, Change<IJob>> {
    return this._job;
  }
  get sweepChanged(): ISignal<this, Change<ISweepChange>> {
    return this._sweep;
  }
  get scheduleChanged(): ISignal<this, Change<ISchedule>> {
    return this._schedule;
  }
  get pipelineChanged(): ISignal<this, Change<IPipeline>> {
    return this._pipeline;
  }
  get clusterChanged(): ISignal<this, ICluster> {
    return this._cluster;
  }
  /** Read everything again: the channel (re)started from now, or what was missed is gone. */
  get reloaded(): ISignal<this, void> {
    return this._reloaded;
  }
  get modeChanged(): ISignal<this, ChannelMode> {
    return this._modeChanged;
  }

  get mode(): ChannelMode {
    return this._mode;
  }
  get live(): boolean {
    return this._mode === 'live';
  }
  /** Who the server takes this browser for (null before the first `ready`). */
  get user(): string | null {
    return this._ready?.user ?? null;
  }
  get admin(): boolean {
    return this._ready?.admin ?? false;
  }
  /** The last event id received (what a reconnect resumes from). */
  get lastId(): string | null {
    return this._lastId;
  }
  /** Connections opened so far (1 + reconnects). */
  get connections(): number {
    return this._connections;
  }
  get isDisposed(): boolean {
    return this._disposed;
  }

  /** Open the channel (once; it then keeps itself open until disposed). */
  start(): void {
    if (!this._started && !this._disposed) {
      this._started = true;
      void this._run();
    }
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this._abort?.abort();
    window.clearTimeout(this._sleepTimer);
    this._wake?.();
    Signal.clearData(this);
  }

  /** Try to open again now (e.g. the user asks), instead of at the next attempt. */
  retryNow(): void {
    this._failures = 0;
    window.clearTimeout(this._sleepTimer);
    this._wake?.();
  }

  private async _run(): Promise<void> {
    while (!this._disposed) {
      let opened = false;
      try {
        opened = await this._connect();
      } catch {
        opened = false;
      }
      if (this._disposed) {
        return;
      }
      this._failures = opened ? 1 : this._failures + 1;
      if (this._failures > FALLBACK_AFTER) {
        this._setMode('polling');
      } else if (this._mode === 'live') {
        this._setMode('connecting');
      }
      const wait = this._mode === 'polling' ? REOPEN_MS : retryDelay(this._failures, Math.random());
      await this._sleep(wait);
    }
  }

  /** One connection, read until it ends; whether it opened. */
  private async _connect(): Promise<boolean> {
    const settings = ServerConnection.makeSettings();
    const url = URLExt.join(settings.baseUrl, API_PREFIX, 'events');
    const headers = new Headers({ Accept: 'text/event-stream' });
    if (this._lastId) {
      headers.set('Last-Event-ID', this._lastId);
    }
    this._abort = new AbortController();
    const response = await ServerConnection.makeRequest(
      url,
      { method: 'GET', headers, signal: this._abort.signal },
      settings
    );
    const type = response.headers.get('Content-Type') ?? '';
    if (!response.ok || !type.startsWith('text/event-stream') || !response.body) {
      void response.body?.cancel();
      return false;
    }
    this._connections++;
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    const parser = new ServerEventParser();
    parser.lastId = this._lastId;
    let silence = window.setTimeout(() => this._abort?.abort(), SILENCE_MS);
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done || this._disposed) {
          break;
        }
        window.clearTimeout(silence);
        silence = window.setTimeout(() => this._abort?.abort(), SILENCE_MS);
        for (const event of parser.push(value)) {
          this._dispatch(event);
        }
        this._lastId = parser.lastId;
      }
    } catch {
      // the connection dropped (or went silent): reconnect and resume
    } finally {
      window.clearTimeout(silence);
    }
    return true;
  }

  private _dispatch(event: IServerEvent): void {
    switch (event.event) {
      case 'ready': {
        this._ready = readyOf(event.data);
        const reload = !this._ready.resumed;
        this._setMode('live');
        this._failures = 0;
        if (reload) {
          this._reloaded.emit();
        }
        break;
      }
      case 'reload':
        this._reloaded.emit();
        break;
      case 'job': {
        const change = jobChange(event.data);
        if (change) {
          this._job.emit(change);
        }
        break;
      }
      case 'sweep': {
        const change = sweepChange(event.data);
        if (change) {
          this._sweep.emit(change);
        }
        break;
      }
      case 'schedule': {
        const change = scheduleChange(event.data);
        if (change) {
          this._schedule.emit(change);
        }
        break;
      }
      case 'pipeline': {
        const change = pipelineChange(event.data);
        if (change) {
          this._pipeline.emit(change);
        }
        break;
      }
      case 'cluster': {
        const cluster = clusterChange(event.data);
        if (cluster) {
          this._cluster.emit(cluster);
        }
        break;
      }
    }
  }

  private _setMode(mode: ChannelMode): void {
    if (mode !== this._mode) {
      this._mode = mode;
      this._modeChanged.emit(mode);
    }
  }

  private _sleep(ms: number): Promise<void> {
    return new Promise(resolve => {
      this._wake = resolve;
      this._sleepTimer = window.setTimeout(resolve, ms);
    });
  }

  private _job = new Signal<this, Change<IJob>>(this);
  private _sweep = new Signal<this, Change<ISweepChange>>(this);
  private _schedule = new Signal<this, Change<ISchedule>>(this);
  private _pipeline = new Signal<this, Change<IPipeline>>(this);
  private _cluster = new Signal<this, ICluster>(this);
  private _reloaded = new Signal<this, void>(this);
  private _modeChanged = new Signal<this, ChannelMode>(this);
  private _mode: ChannelMode = 'connecting';
  private _ready: IReady | null = null;
  private _lastId: string | null = null;
  private _connections = 0;
  private _failures = 0;
  private _started = false;
  private _disposed = false;
  private _abort: AbortController | null = null;
  private _sleepTimer = 0;
  private _wake: (() => void) | null = null;
}
