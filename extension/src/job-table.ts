/**
 * The Jobs table, without I/O: what a page asks the server for (`GET /jobs` with filters,
 * order, limit and cursor), how a pushed change updates the rows shown (never more than the
 * page size), and how the rows are sorted by a column.
 */
import { latestMetric, parseTime } from './format';
import { Change } from './events';
import { IJob } from './types';

/** Rows per page the table offers; never more than `MAX_ROWS`. */
export const PAGE_SIZES = [25, 50, 100, 200] as const;
export const MAX_ROWS = 200;
export const DEFAULT_PAGE_SIZE = 50;

export type Order = 'newest' | 'oldest';

/** What the table lists: filters (empty: any), order by creation time, page size. */
export interface IJobQuery {
  status: string;
  owner: string;
  schedule: string;
  sweep: string;
  /** A part of the name, any case. */
  q: string;
  order: Order;
  limit: number;
}

export const EMPTY_QUERY: IJobQuery = {
  status: '',
  owner: '',
  schedule: '',
  sweep: '',
  q: '',
  order: 'newest',
  limit: DEFAULT_PAGE_SIZE
};

/**
 * The `GET /jobs` query parameters of a page: the first one, or the one at `from`: the
 * previous page's `next` cursor, or the id of the job it ends with (`after`).
 */
export function pageParams(
  query: IJobQuery,
  from: { cursor: string } | { after: string } | null = null
): { [key: string]: string | number | undefined } {
  return {
    status: query.status || undefined,
    owner: query.owner.trim() || undefined,
    schedule: query.schedule || undefined,
    sweep: query.sweep.trim() || undefined,
    q: query.q.trim() || undefined,
    order: query.order === 'oldest' ? 'oldest' : undefined,
    limit: Math.min(MAX_ROWS, Math.max(1, Math.floor(query.limit) || DEFAULT_PAGE_SIZE)),
    cursor: from && 'cursor' in from ? from.cursor : undefined,
    after: from && 'after' in from ? from.after : undefined
  };
}

/** Whether `job` is one the query lists (as the server filters). */
export function matches(job: IJob, query: IJobQuery): boolean {
  const q = query.q.trim().toLowerCase();
  return (
    (!query.status || job.status === query.status) &&
    (!query.owner.trim() || job.owner === query.owner.trim()) &&
    (!query.schedule || job.schedule === query.schedule) &&
    (!query.sweep.trim() || job.sweep === query.sweep.trim()) &&
    (!q || job.name.toLowerCase().includes(q))
  );
}

/** Whether any filter is set. */
export function filtered(query: IJobQuery): boolean {
  return !!(query.status || query.owner.trim() || query.schedule || query.sweep.trim() || query.q.trim());
}

/** Creation order: [time, id], as the server orders a listing. */
function created(job: IJob): [number, string] {
  return [parseTime(job.created_at) ?? 0, job.id];
}

function newer(a: IJob, b: IJob): boolean {
  const [ta, ia] = created(a);
  const [tb, ib] = created(b);
  return ta > tb || (ta === tb && ia > ib);
}

/** The result of applying a change: the rows; whether a job that belongs to the listing
 * arrived that the page does not show (a newer job while on a later page, say); whether a
 * row left the page at its end to keep it at its size (the next page then starts after the
 * last row shown, not at the server's cursor). */
export interface IApplied {
  rows: IJob[];
  unseen: boolean;
  trimmed: boolean;
}

/**
 * Apply a pushed change to the rows of a page (in server order).  A shown job is replaced,
 * or dropped once it no longer matches; a deleted one is dropped.  A job not shown that
 * matches goes in where it belongs if that is on this page: between its rows, before them
 * on the first page (new jobs, newest first), after them on a last page that is not full;
 * the page keeps `query.limit` rows at most.  Otherwise it is reported as unseen.
 */
export function applyChange(
  rows: IJob[],
  change: Change<IJob>,
  query: IJobQuery,
  page: { first: boolean; last: boolean }
): IApplied {
  const same = { rows, unseen: false, trimmed: false };
  if (change.deleted) {
    return rows.some(r => r.id === change.id) ? { ...same, rows: rows.filter(r => r.id !== change.id) } : same;
  }
  const job = change.record;
  const at = rows.findIndex(r => r.id === job.id);
  const fits = matches(job, query);
  if (at >= 0) {
    const next = rows.slice();
    if (fits) {
      next[at] = job;
    } else {
      next.splice(at, 1);
    }
    return { ...same, rows: next };
  }
  if (!fits) {
    return same;
  }
  const first = (a: IJob, b: IJob) => (query.order === 'oldest' ? newer(b, a) : newer(a, b));
  const index = rows.findIndex(r => first(job, r));
  const size = Math.min(query.limit, MAX_ROWS);
  const belongs =
    index > 0 || (index === 0 && page.first) || (index < 0 && page.last && rows.length < size);
  if (!belongs) {
    return { ...same, unseen: true };
  }
  const next = rows.slice();
  next.splice(index < 0 ? next.length : index, 0, job);
  return { rows: next.slice(0, size), unseen: false, trimmed: next.length > size };
}

/** Columns of the table, in order. */
export const COLUMNS = [
  'name',
  'status',
  'gpus',
  'priority',
  'owner',
  'created',
  'duration',
  'metric'
] as const;
export type Column = (typeof COLUMNS)[number];

/** A column's sort: none (the server's order), ascending or descending. */
export interface ISort {
  column: Column | null;
  descending: boolean;
}

/** The next sort when a column's header is clicked: ascending, descending, then none. */
export function nextSort(sort: ISort, column: Column): ISort {
  if (sort.column !== column) {
    return { column, descending: column === 'created' || column === 'duration' };
  }
  if (sort.descending === (column === 'created' || column === 'duration')) {
    return { column, descending: !sort.descending };
  }
  return { column: null, descending: false };
}

function sortValue(job: IJob, column: Column, now: number): string | number {
  switch (column) {
    case 'name':
      return job.name.toLowerCase();
    case 'status':
      return job.status;
    case 'gpus':
      return job.gpus ?? 0;
    case 'priority':
      return job.priority;
    case 'owner':
      return (job.owner ?? '').toLowerCase();
    case 'created':
      return parseTime(job.created_at) ?? 0;
    case 'duration': {
      const started = parseTime(job.started_at);
      return started === null ? -1 : (parseTime(job.finished_at) ?? now) - started;
    }
    case 'metric': {
      const metric = latestMetric(job);
      const value = metric ? Number(metric[1]) : NaN;
      return Number.isNaN(value) ? -Infinity : value;
    }
  }
}

/** The rows sorted by a column (stable; ties keep the server's order); as given for none. */
export function sortRows(rows: IJob[], sort: ISort, now: number = Date.now()): IJob[] {
  if (!sort.column) {
    return rows;
  }
  const column = sort.column;
  const sign = sort.descending ? -1 : 1;
  return rows
    .map((job, i) => ({ job, i, v: sortValue(job, column, now) }))
    .sort((a, b) => (a.v < b.v ? -sign : a.v > b.v ? sign : a.i - b.i))
    .map(x => x.job);
}

/** "Jobs 51–100" of a page, from its index (0: the first) and its row count. */
export function pageLabel(index: number, size: number, rows: number): string {
  if (rows === 0) {
    return index === 0 ? 'No jobs' : 'No more jobs';
  }
  const first = index * size + 1;
  return `Jobs ${first}–${first + rows - 1}`;
}
