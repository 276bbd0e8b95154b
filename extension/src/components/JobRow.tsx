/** One job in the Jobs panel: status, name, GPUs, elapsed, metric, progress, controls. */
import * as React from 'react';

import { CANCELLABLE_STATUSES } from '../constants';
import { jobElapsed, latestMetric, metricsTitle } from '../format';
import { IJob } from '../types';
import { ActionButton } from './ActionButton';
import { PriorityInput } from './PriorityInput';
import { ProgressBar } from './ProgressBar';
import { StatusBadge } from './StatusBadge';

export interface IRowHandlers {
  onCancel: (job: IJob) => void;
  onLog: (job: IJob) => void;
  onOpen: (job: IJob) => void;
  /** Open the job's page. */
  onDetails: (job: IJob) => void;
  onPriority: (job: IJob, priority: number) => Promise<boolean>;
  /** Register the model a job saved (shown only where `hasModel` says it saved one). */
  onRegister?: (job: IJob) => void;
  hasModel?: (job: IJob) => boolean;
}

export interface IJobRowProps {
  job: IJob;
  now: number;
  busy: boolean;
  highlighted: boolean;
  handlers: IRowHandlers;
}

export function JobRow(props: IJobRowProps): React.ReactElement {
  const { job, now, handlers } = props;
  const elapsed = jobElapsed(job, now);
  const metric = latestMetric(job);
  const cancellable = CANCELLABLE_STATUSES.includes(job.status);
  const hasOutput = !!job.output && job.status !== 'queued';
  const registrable =
    job.status === 'completed' && !!handlers.onRegister && !!handlers.hasModel?.(job);
  const label = `${job.name} (${job.id})`;
  // A cancelled job's error is "cancelled": the badge says it already.
  const error = job.error && job.error !== job.status ? job.error : null;
  return (
    <li
      className={
        `nbrunner-JobRow nbrunner-status-${job.status}` +
        (props.highlighted ? ' nbrunner-mod-highlight' : '')
      }
      data-testid="nbrunner-job"
      data-job-id={job.id}
      data-status={job.status}
      aria-label={`Job ${label}, ${job.status}`}
    >
      <div className="nbrunner-JobRow-head">
        <StatusBadge status={job.status} />
        <button
          type="button"
          className="nbrunner-JobRow-name nbrunner-LinkButton"
          title={`${job.name} — ${job.notebook}: open the job's page`}
          data-testid="nbrunner-job-name"
          onClick={() => handlers.onDetails(job)}
        >
          {job.name}
        </button>
        <code className="nbrunner-JobRow-id" data-testid="nbrunner-job-id">
          {job.id}
        </code>
      </div>
      <div className="nbrunner-JobRow-stats">
        <span
          data-testid="nbrunner-job-gpus"
          title={`GPUs held now / max (min ${job.min_gpus})`}
        >
          GPUs {job.gpus ?? 0}/{job.max_gpus ?? 0}
        </span>
        <span data-testid="nbrunner-job-elapsed" title={elapsed.title}>
          {elapsed.text}
        </span>
        {metric && (
          <span
            className="nbrunner-JobRow-metric"
            data-testid="nbrunner-job-metric"
            data-metric={metric[0]}
            title={metricsTitle(job)}
          >
            {metric[0]} {metric[1]}
          </span>
        )}
        {job.owner && (
          <span className="nbrunner-JobRow-owner" title="Owner">
            {job.owner}
          </span>
        )}
      </div>
      <ProgressBar job={job} />
      {error && (
        <div className="nbrunner-JobRow-error" data-testid="nbrunner-job-error" title={error}>
          {error}
        </div>
      )}
      <div className="nbrunner-JobRow-controls">
        <PriorityInput job={job} onCommit={handlers.onPriority} />
        <span className="nbrunner-JobRow-actions">
          {cancellable && (
            <ActionButton
              testid="nbrunner-job-cancel"
              label={`Cancel job ${label}`}
              title="Cancel this job"
              tone="warn"
              disabled={props.busy}
              onClick={() => handlers.onCancel(job)}
            >
              Cancel
            </ActionButton>
          )}
          <ActionButton
            testid="nbrunner-job-details"
            label={`Open the page of job ${label}`}
            title="The job's page: parameters, history, charts, downloads, re-run, delete"
            onClick={() => handlers.onDetails(job)}
          >
            Details
          </ActionButton>
          <ActionButton
            testid="nbrunner-job-log"
            label={`Show the log of job ${label}`}
            title="Tail the job's log (with its learners' logs once it has finished)"
            onClick={() => handlers.onLog(job)}
          >
            Log
          </ActionButton>
          <ActionButton
            testid="nbrunner-job-open-output"
            label={`Open the executed notebook of job ${label}, read-only`}
            title={hasOutput ? `Open ${job.output} read-only (no kernel)` : 'No executed notebook yet'}
            disabled={!hasOutput}
            onClick={() => handlers.onOpen(job)}
          >
            Output
          </ActionButton>
          {registrable && (
            <ActionButton
              testid="nbrunner-job-register"
              label={`Register the model of job ${label}`}
              title="Register the model this job saved, under a name (see the Models panel)"
              className="nbrunner-JobRow-register"
              onClick={() => handlers.onRegister!(job)}
            >
              Register model
            </ActionButton>
          )}
        </span>
      </div>
    </li>
  );
}
