/**
 * One job in a jobs table, on one line: name (a trial's sweep tag beside it, always in view:
 * the name gives way; its error below), status (a queued job's waiting label below, its
 * message on hover), GPUs, priority (editable), owner, created, duration, metric, and the
 * row's actions.  Clicking the row (anywhere but a control) opens the job's page.
 */
import * as React from 'react';

import { CANCELLABLE_STATUSES } from '../constants';
import { jobElapsed, latestMetric, metricsTitle, parseTime, relativeTime } from '../format';
import { IJob } from '../types';
import { ActionButton } from './ActionButton';
import { PriorityInput } from './PriorityInput';
import { ProgressBar } from './ProgressBar';
import { StatusBadge } from './StatusBadge';
import { waitingLabel } from '../waiting';

export interface IRowHandlers {
  onCancel: (job: IJob) => void;
  onLog: (job: IJob) => void;
  onOpen: (job: IJob) => void;
  /** Open the job's page. */
  onDetails: (job: IJob) => void;
  onPriority: (job: IJob, priority: number) => Promise<boolean>;
  /** Show the trials of a sweep (the row's sweep tag). */
  onSweep?: (sweep: string) => void;
  /** Register the model a job saved (shown only where `hasModel` says it saved one). */
  onRegister?: (job: IJob) => void;
  hasModel?: (job: IJob) => boolean;
}

export interface IJobTableRowProps {
  job: IJob;
  now: number;
  busy: boolean;
  highlighted: boolean;
  handlers: IRowHandlers;
}

/** Whether a click landed on a control of the row (which acts by itself). */
function onControl(target: EventTarget | null): boolean {
  return target instanceof Element && !!target.closest('button, input, select, a, label, textarea');
}

export function JobTableRow(props: IJobTableRowProps): React.ReactElement {
  const { job, now, handlers } = props;
  const elapsed = jobElapsed(job, now);
  const metric = latestMetric(job);
  const created = parseTime(job.created_at);
  const cancellable = CANCELLABLE_STATUSES.includes(job.status);
  const hasOutput = !!job.output && job.status !== 'queued';
  const registrable =
    job.status === 'completed' && !!handlers.onRegister && !!handlers.hasModel?.(job);
  const label = `${job.name} (${job.id})`;
  const waiting = waitingLabel(job, now);
  // A cancelled job's error is "cancelled": the badge says it already.
  const error = job.error && job.error !== job.status ? job.error : null;
  return (
    <tr
      className={
        `nbrunner-JobTable-row nbrunner-status-${job.status}` +
        (props.highlighted ? ' nbrunner-mod-highlight' : '')
      }
      data-testid="nbrunner-job"
      data-job-id={job.id}
      data-status={job.status}
      aria-label={`Job ${label}, ${job.status}`}
      onClick={e => {
        if (!onControl(e.target)) {
          handlers.onDetails(job);
        }
      }}
    >
      <th scope="row" className="nbrunner-JobTable-name">
        <div className="nbrunner-JobTable-nameLine">
          <button
            type="button"
            className="nbrunner-LinkButton"
            title={`${job.name} (${job.id}) — ${job.notebook}: open the job's page`}
            data-testid="nbrunner-job-name"
            onClick={() => handlers.onDetails(job)}
          >
            {job.name}
          </button>
          {job.sweep && (
            <button
              type="button"
              className="nbrunner-Tag"
              data-testid="nbrunner-job-sweep"
              title={`A trial of sweep ${job.sweep}: show the sweep's trials and leaderboard`}
              aria-label={`Show the trials of sweep ${job.sweep}`}
              onClick={() => handlers.onSweep?.(job.sweep!)}
            >
              sweep
            </button>
          )}
        </div>
        {error && (
          <div className="nbrunner-JobTable-error" data-testid="nbrunner-job-error" title={error}>
            {error}
          </div>
        )}
      </th>
      <td className="nbrunner-JobTable-status">
        <StatusBadge status={job.status} />
        {job.status === 'running' && <ProgressBar job={job} />}
        {waiting && (
          <div
            className="nbrunner-WaitingLabel"
            data-testid="nbrunner-job-waiting"
            data-code={waiting.code}
            title={waiting.title}
            aria-label={`Waiting: ${waiting.title}`}
          >
            {waiting.label}
          </div>
        )}
      </td>
      <td
        className="nbrunner-JobTable-num"
        data-testid="nbrunner-job-gpus"
        title={`GPUs held now / max (min ${job.min_gpus})`}
      >
        {job.gpus ?? 0}/{job.max_gpus ?? 0}
      </td>
      <td className="nbrunner-JobTable-priority">
        <PriorityInput job={job} onCommit={handlers.onPriority} compact />
      </td>
      <td className="nbrunner-JobTable-owner" data-testid="nbrunner-job-owner">
        {job.owner ?? ''}
      </td>
      <td
        className="nbrunner-JobTable-created"
        title={created === null ? '' : new Date(created).toLocaleString()}
        data-testid="nbrunner-job-created"
      >
        {created === null ? '–' : relativeTime(created, now)}
      </td>
      <td className="nbrunner-JobTable-num" data-testid="nbrunner-job-elapsed" title={elapsed.title}>
        {elapsed.text}
      </td>
      <td
        className="nbrunner-JobTable-metric"
        data-testid="nbrunner-job-metric"
        data-metric={metric ? metric[0] : undefined}
        title={metricsTitle(job)}
      >
        {metric ? `${metric[0]} ${metric[1]}` : ''}
      </td>
      <td className="nbrunner-JobTable-actions">
        {!cancellable && <span className="nbrunner-IconButton-slot" aria-hidden="true" />}
        {cancellable && (
          <ActionButton
            testid="nbrunner-job-cancel"
            label={`Cancel job ${label}`}
            title="Cancel this job"
            tone="warn"
            disabled={props.busy}
            className="nbrunner-IconButton"
            onClick={() => handlers.onCancel(job)}
          >
            <span aria-hidden="true">✕</span>
          </ActionButton>
        )}
        <ActionButton
          testid="nbrunner-job-log"
          label={`Show the log of job ${label}`}
          title="Log: tail the job's log (with its learners' logs once it has finished)"
          className="nbrunner-IconButton"
          onClick={() => handlers.onLog(job)}
        >
          <span aria-hidden="true">☰</span>
        </ActionButton>
        <ActionButton
          testid="nbrunner-job-open-output"
          label={`Open the executed notebook of job ${label}, read-only`}
          title={hasOutput ? `Output: open ${job.output} read-only (no kernel)` : 'No executed notebook yet'}
          disabled={!hasOutput}
          className="nbrunner-IconButton"
          onClick={() => handlers.onOpen(job)}
        >
          <span aria-hidden="true">↗</span>
        </ActionButton>
        {registrable && (
          <ActionButton
            testid="nbrunner-job-register"
            label={`Register the model of job ${label}`}
            title="Register the model this job saved, under a name (see the Models panel)"
            onClick={() => handlers.onRegister!(job)}
          >
            Register model
          </ActionButton>
        )}
      </td>
    </tr>
  );
}
