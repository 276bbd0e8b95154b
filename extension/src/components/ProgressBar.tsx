/** A job's progress (0..1) as a bar; nothing when the job reports none. */
import * as React from 'react';

import { IJob } from '../types';

export function ProgressBar(props: { job: IJob }): React.ReactElement | null {
  const { progress } = props.job;
  if (typeof progress !== 'number' || !Number.isFinite(progress)) {
    return null;
  }
  const pct = Math.round(Math.max(0, Math.min(1, progress)) * 100);
  return (
    <div
      className={`nbrunner-Progress nbrunner-status-${props.job.status}`}
      data-testid="nbrunner-job-progress"
      role="progressbar"
      aria-label={`Progress of job ${props.job.name}`}
      aria-valuemin={0}
      aria-valuemax={100}
      aria-valuenow={pct}
      data-progress={progress}
    >
      <div className="nbrunner-Progress-bar" style={{ width: `${pct}%` }} />
      <span className="nbrunner-Progress-label">{pct}%</span>
    </div>
  );
}
