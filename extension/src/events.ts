/**
 * The push channel's wire format, without I/O: server-sent events parsed from the text of
 * `GET /events` as it arrives, the messages they carry, and when to try again after a
 * failure.  The channel itself (the request, reconnecting, the fallback) is `channel.ts`.
 */
import { ICluster, IJob, IPipeline, ISchedule } from './types';

/** One server-sent event: its id (null: none), its name, and its data parsed as JSON. */
export interface IServerEvent {
  id: string | null;
  event: string;
  data: any;
}

/** A change of a record: the record, or its id once deleted. */
export type Change<T> = { record: T; deleted: false } | { id: string; deleted: true };

/** The sweep fields the channel sends (the leaderboard is `GET /sweeps/{id}`). */
export interface ISweepChange {
  id: string;
  name: string;
  status: string;
  owner: string;
  created_at: string | null;
  finished_at: string | null;
  trials: number;
}

/** What the first message says: whether the channel resumed, and who the server says we are. */
export interface IReady {
  resumed: boolean;
  user: string | null;
  admin: boolean;
}

/**
 * Reads `text/event-stream` text chunk by chunk (a chunk may end anywhere, even inside a
 * line).  `lastId` follows the `id:` fields as the HTML standard says: also those of
 * messages without data (the channel's heartbeats), which are not returned.
 */
export class ServerEventParser {
  lastId: string | null = null;

  /** The events completed by `chunk`. */
  push(chunk: string): IServerEvent[] {
    this._buffer += chunk;
    const out: IServerEvent[] = [];
    let end: number;
    while ((end = this._lineEnd()) >= 0) {
      const line = this._buffer.slice(0, end);
      const skip = this._buffer[end] === '\r' && this._buffer[end + 1] === '\n' ? 2 : 1;
      this._buffer = this._buffer.slice(end + skip);
      if (line === '') {
        const done = this._dispatch();
        if (done) {
          out.push(done);
        }
      } else {
        this._field(line);
      }
    }
    return out;
  }

  /** Where the first complete line ends, or -1 (a lone trailing `\r` may still become `\r\n`). */
  private _lineEnd(): number {
    for (let i = 0; i < this._buffer.length; i++) {
      const c = this._buffer[i];
      if (c === '\n') {
        return i;
      }
      if (c === '\r') {
        return i + 1 < this._buffer.length ? i : -1;
      }
    }
    return -1;
  }

  private _field(line: string): void {
    if (line.startsWith(':')) {
      return; // a comment
    }
    const colon = line.indexOf(':');
    const name = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) {
      value = value.slice(1);
    }
    if (name === 'data') {
      this._data.push(value);
    } else if (name === 'event') {
      this._event = value;
    } else if (name === 'id' && !value.includes('\0')) {
      this._id = value;
    }
  }

  private _dispatch(): IServerEvent | null {
    if (this._id !== undefined) {
      this.lastId = this._id;
    }
    const event = this._event || 'message';
    const data = this._data;
    const id = this._id ?? null;
    this._event = '';
    this._data = [];
    this._id = undefined;
    if (data.length === 0) {
      return null;
    }
    const text = data.join('\n');
    let parsed: any;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
    return { id, event, data: parsed };
  }

  private _buffer = '';
  private _event = '';
  private _data: string[] = [];
  private _id: string | undefined = undefined;
}

/** The job change a `job` event carries, or null if it carries none. */
export function jobChange(data: any): Change<IJob> | null {
  return change<IJob>(data, 'job');
}

export function scheduleChange(data: any): Change<ISchedule> | null {
  return change<ISchedule>(data, 'schedule');
}

export function sweepChange(data: any): Change<ISweepChange> | null {
  return change<ISweepChange>(data, 'sweep');
}

export function pipelineChange(data: any): Change<IPipeline> | null {
  return change<IPipeline>(data, 'pipeline');
}

export function clusterChange(data: any): ICluster | null {
  const cluster = data?.cluster;
  return cluster && Array.isArray(cluster.hosts) ? (cluster as ICluster) : null;
}

export function readyOf(data: any): IReady {
  return {
    resumed: data?.resumed === true,
    user: typeof data?.user === 'string' ? data.user : null,
    admin: data?.admin === true
  };
}

function change<T>(data: any, kind: string): Change<T> | null {
  if (data && data.deleted === true && typeof data.id === 'string') {
    return { id: data.id, deleted: true };
  }
  const record = data?.[kind];
  return record && typeof record.id === 'string' ? { record, deleted: false } : null;
}

/** Milliseconds before the `attempt`-th retry (1, 2, ...): doubling from 0.5 s to 15 s, plus `jitter` (0..1) of it. */
export function retryDelay(attempt: number, jitter = 0): number {
  const base = Math.min(15000, 500 * 2 ** Math.max(0, attempt - 1));
  return Math.round(base * (1 + Math.max(0, Math.min(1, jitter)) * 0.25));
}

/** After this many failed attempts in a row, the views poll until the channel opens again. */
export const FALLBACK_AFTER = 2;

/** A connection with nothing received for this long (heartbeats come every 15 s) is dead. */
export const SILENCE_MS = 40000;
