/**
 * The Jobs table's listing: the page shown of `GET /jobs` (filters, order, size), paging
 * newer and older, and the changes the push channel brings applied to it (`job-table.ts`).
 * Changes that arrive while a page is being read are applied after it, so the page never
 * shows a state older than one already received.
 */
import { listJobsPage } from './api';
import { Change } from './events';
import { applyChange, EMPTY_QUERY, IJobQuery, pageParams } from './job-table';
import { IJob } from './types';

type From = { cursor: string } | { after: string } | null;

export class JobListing {
  /** The query; change it with `setQuery`. */
  get query(): IJobQuery {
    return this._query;
  }
  /** The rows of the page (null before the first read). */
  get rows(): IJob[] | null {
    return this._rows;
  }
  /** The index of the page shown: 0 is the first. */
  get index(): number {
    return this._shown;
  }
  /** Whether a page is being read. */
  get reading(): boolean {
    return this._reading > 0;
  }
  get hasOlder(): boolean {
    return this._next !== null || (this._trimmed && !!this._rows?.length);
  }
  get hasNewer(): boolean {
    return this._stack.length > 1;
  }
  /** Jobs that belong to the listing and arrived where the page does not show them. */
  get unseen(): number {
    return this._unseen.size;
  }

  /** Read the current page again. */
  async read(): Promise<void> {
    this._reading++;
    try {
      const at = this._stack.length - 1;
      const answer = await listJobsPage(pageParams(this._query, this._stack[at]));
      this._rows = Array.isArray(answer?.jobs) ? answer.jobs : [];
      this._shown = at;
      this._next = answer?.next ?? null;
      this._trimmed = false;
      this._unseen.clear();
    } finally {
      this._reading--;
    }
    if (this._reading === 0) {
      const held = this._held;
      this._held = [];
      held.forEach(change => this.apply(change));
    }
  }

  /** Start over at the first page, with `change` made to the query. */
  setQuery(change: Partial<IJobQuery>): void {
    this._query = { ...this._query, ...change };
    this._stack = [null];
  }

  /** Move to the older page (then `read`); false if there is none. */
  older(): boolean {
    const rows = this._rows ?? [];
    if (!this.hasOlder || this.reading) {
      return false;
    }
    // Rows pushed in moved others past the page's end: continue after the last row shown.
    this._stack.push(this._trimmed || this._next === null ? { after: rows[rows.length - 1].id } : { cursor: this._next });
    return true;
  }

  newer(): boolean {
    if (!this.hasNewer || this.reading) {
      return false;
    }
    this._stack.pop();
    return true;
  }

  /** Go back to the first page (then `read`). */
  first(): void {
    this._stack = [null];
  }

  /** A pushed change; whether the rows changed. */
  apply(change: Change<IJob>): boolean {
    if (this._reading > 0) {
      this._held.push(change);
      return false;
    }
    if (this._rows === null) {
      return false;
    }
    const applied = applyChange(this._rows, change, this._query, {
      first: this._shown === 0,
      last: this._next === null && !this._trimmed
    });
    this._trimmed = this._trimmed || applied.trimmed;
    if (applied.unseen && !change.deleted) {
      this._unseen.add(change.record.id);
    } else if (change.deleted) {
      this._unseen.delete(change.id);
    }
    const changed = applied.rows !== this._rows || applied.unseen;
    this._rows = applied.rows;
    return changed;
  }

  private _query: IJobQuery = { ...EMPTY_QUERY };
  private _stack: From[] = [null];
  private _shown = 0;
  private _rows: IJob[] | null = null;
  private _next: string | null = null;
  private _trimmed = false;
  private _unseen = new Set<string>();
  private _reading = 0;
  private _held: Change<IJob>[] = [];
}
