/**
 * Why a queued job waits and when it should start or end (the record's `waiting`,
 * `expected_start` and `expected_end`; docs/waiting.md): short labels for the jobs table and
 * the line of the job's page.
 */
import { parseTime, relativeTime } from './format';
import { IJob } from './types';

/** A short label per waiting code (the message, on hover, says the numbers). */
export const WAITING_LABELS: { [code: string]: string } = {
  capacity: 'too big',
  no_workers: 'no workers',
  gpus_busy: 'GPUs busy',
  account_limit: 'at limit',
  account_share: 'at share',
  reclaiming: 'reclaiming',
  needs: 'needs steps'
};

/** The table's label of a queued job's reason: `{label, title}`, or null when it has none. */
export function waitingLabel(
  job: Pick<IJob, 'status' | 'waiting' | 'expected_start'>,
  now: number = Date.now()
): { code: string; label: string; title: string } | null {
  const w = job.waiting;
  if (job.status !== 'queued' || !w || typeof w.code !== 'string') {
    return null;
  }
  const start = parseTime(job.expected_start);
  const when = start === null ? '' : ` Expected to start ${relativeTime(start, now)}.`;
  return {
    code: w.code,
    label: WAITING_LABELS[w.code] ?? w.code.replace(/_/g, ' '),
    title: `${typeof w.message === 'string' ? w.message : w.code}.${when}`
  };
}

/**
 * The job page's line: "Waiting (GPUs busy): needs 4 GPUs; ... Expected to start in 3 min,
 * to end in 12 min." for a queued job, "Expected to end in 5 min." for a running one; null
 * when there is nothing to say (no reason, no estimate).
 */
export function outlookLine(
  job: Pick<IJob, 'status' | 'waiting' | 'expected_start' | 'expected_end'>,
  now: number = Date.now()
): string | null {
  const parts: string[] = [];
  const start = parseTime(job.expected_start);
  const end = parseTime(job.expected_end);
  if (job.status === 'queued') {
    const label = waitingLabel(job, now);
    if (label) {
      parts.push(`Waiting (${label.label}): ${job.waiting!.message}.`);
    }
    const times = [
      start === null ? '' : `to start ${relativeTime(start, now)}`,
      end === null ? '' : `to end ${relativeTime(end, now)}`
    ].filter(t => t);
    if (times.length) {
      parts.push(`Expected ${times.join(', ')}.`);
    }
  } else if (job.status === 'running' && end !== null) {
    parts.push(`Expected to end ${relativeTime(end, now)}.`);
  }
  return parts.length ? parts.join(' ') : null;
}
