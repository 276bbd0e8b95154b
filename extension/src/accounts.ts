/**
 * The accounts sharing the GPUs as the extension shows them, without I/O: the cluster view's
 * table and each account's GPUs over time (from `GET /accounts`), when a job's change moves
 * the accounts, and on a job's page why its GPUs were taken back.
 */
import { formatNumber } from './format';
import { IAccount, IAccounts, IJob, ITimelineJob } from './types';

/** One account as the table shows it. */
export interface IAccountRow {
  path: string;
  name: string;
  /** 0 for a top-level account, 1 for its sub-accounts, ... */
  depth: number;
  weight: string;
  guaranteed: string;
  /** "–" without a limit. */
  limit: string;
  demand: number;
  share: number;
  held: number;
  /** "2 borrowed", "3 lent" or "–". */
  balance: string;
  balanceKind: 'borrowed' | 'lent' | 'even';
  gpuHours24h: string;
  gpuHoursTotal: string;
}

const count = (value: unknown): number => {
  const n = Number(value);
  return Number.isFinite(n) ? n : 0;
};

/** GPU-hours with two decimals ("0.00" for none). */
export function formatGpuHours(hours: unknown): string {
  return count(hours).toFixed(2);
}

/** What an account borrows beyond its share, or lends of it. */
export function accountBalance(
  account: Pick<IAccount, 'borrowed' | 'lent'>
): Pick<IAccountRow, 'balance' | 'balanceKind'> {
  const borrowed = count(account.borrowed);
  const lent = count(account.lent);
  if (borrowed > 0) {
    return { balance: `${borrowed} borrowed`, balanceKind: 'borrowed' };
  }
  if (lent > 0) {
    return { balance: `${lent} lent`, balanceKind: 'lent' };
  }
  return { balance: '–', balanceKind: 'even' };
}

/** The table's rows, in the server's order (parents first, `default` last). */
export function accountRows(view: IAccounts | null | undefined): IAccountRow[] {
  const accounts = view?.accounts;
  return (Array.isArray(accounts) ? accounts : [])
    .filter(a => a && typeof a.path === 'string')
    .map(a => ({
      path: a.path,
      name: a.name || a.path,
      depth: a.path.split('/').length - 1,
      weight: formatNumber(count(a.weight)),
      guaranteed: String(count(a.guaranteed)),
      limit: a.limit === null || a.limit === undefined ? '–' : String(a.limit),
      demand: count(a.demand),
      share: count(a.share),
      held: count(a.held),
      ...accountBalance(a),
      gpuHours24h: formatGpuHours(a.gpu_hours_24h),
      gpuHoursTotal: formatGpuHours(a.gpu_hours_total)
    }));
}

/** Paths none of `paths` is under: the accounts whose jobs hold GPUs (a parent's are its children's). */
export function leafPaths(paths: string[]): string[] {
  const unique = Array.from(new Set(paths));
  return unique.filter(p => !unique.some(q => q.startsWith(`${p}/`)));
}

/**
 * Each leaf account's GPUs over time, as the timeline chart draws jobs (`id` and `name`: its
 * path; a point where its GPUs changed).  The accounts of the table first, in its order, then
 * those only the timeline knows (an account since removed from the file); accounts that never
 * held a GPU are left out.
 */
export function accountSeries(view: IAccounts | null | undefined): ITimelineJob[] {
  const raw = view?.timeline;
  const timeline = Array.isArray(raw) ? raw : [];
  const known = accountRows(view).map(r => r.path);
  const seen = new Set(known);
  const extra = new Set<string>();
  for (const entry of timeline) {
    for (const path of Object.keys(entry?.gpus ?? {})) {
      if (!seen.has(path)) {
        extra.add(path);
      }
    }
  }
  const paths = leafPaths([...known, ...Array.from(extra).sort()]);
  const series: ITimelineJob[] = [];
  for (const path of paths) {
    const points: ITimelineJob['points'] = [];
    let last: number | null = null;
    for (const entry of timeline) {
      if (!entry || typeof entry.t !== 'string') {
        continue;
      }
      const gpus = count(entry.gpus?.[path]);
      if (gpus !== last) {
        points.push({ t: entry.t, gpus });
        last = gpus;
      }
    }
    if (points.some(p => p.gpus > 0)) {
      series.push({ id: path, name: path, points });
    }
  }
  return series;
}

/**
 * Whether a job's change may move the accounts' figures (a new job's demand, one that ended):
 * its status differs from the one seen before (`before`: undefined for a job not seen yet).
 * Changes of progress or metrics do not.
 */
export function movesAccounts(before: string | undefined, job: Pick<IJob, 'status'>): boolean {
  return before !== job.status;
}

/** A line of a job's page saying why it lost GPUs. */
export interface IReclaimNote {
  kind: 'requeued' | 'shrunk';
  text: string;
}

/**
 * Why a job lost GPUs: each reason it went back to the queue (its history's re-queues:
 * "Re-queued: reclaimed by account vision", with how often if more than once), and why its
 * grant was last cut while it kept running ("Shrunk: reclaimed by account vision") when
 * that is not the reason of its last re-queue.  (A job being stopped to be re-queued keeps
 * `reclaimed` until it is back in the queue, so it never shows as shrunk meanwhile.)
 */
export function reclaimNotes(job: Pick<IJob, 'history' | 'reclaimed'>): IReclaimNote[] {
  const history = Array.isArray(job.history) ? job.history : [];
  const reasons = history
    .map(h => (h && typeof h.reason === 'string' ? h.reason.trim() : ''))
    .filter(r => r !== '');
  const counts = new Map<string, number>();
  for (const reason of reasons) {
    counts.set(reason, (counts.get(reason) ?? 0) + 1);
  }
  const notes: IReclaimNote[] = Array.from(counts, ([reason, n]) => ({
    kind: 'requeued' as const,
    text: n > 1 ? `Re-queued (${n} times): ${reason}` : `Re-queued: ${reason}`
  }));
  const reclaimed = typeof job.reclaimed === 'string' ? job.reclaimed.trim() : '';
  if (reclaimed && reclaimed !== reasons[reasons.length - 1]) {
    notes.push({ kind: 'shrunk', text: `Shrunk: ${reclaimed}` });
  }
  return notes;
}
