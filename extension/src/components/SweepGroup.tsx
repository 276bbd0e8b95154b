/**
 * A sweep in the Jobs panel: a header counting its planned trials by status, its
 * leaderboard, and the rows of its trials' jobs.
 */
import * as React from 'react';

import { IJob, ISweep } from '../types';
import { JobRow, IRowHandlers } from './JobRow';
import { Leaderboard } from './Leaderboard';

export interface ISweepState {
  sweep: ISweep | null;
  error: string | null;
}

/** "12 trials: 2 running, 10 pending" -- of the planned trials when the sweep is known. */
export function sweepSummary(jobs: IJob[], sweep: ISweep | null): string {
  const statuses =
    sweep && sweep.leaderboard.length > 0
      ? sweep.leaderboard.map(e => e.status)
      : jobs.map(j => j.status);
  const counts = new Map<string, number>();
  for (const status of statuses) {
    counts.set(status, (counts.get(status) ?? 0) + 1);
  }
  const detail = Array.from(counts.entries())
    .map(([status, n]) => `${n} ${status}`)
    .join(', ');
  const n = statuses.length;
  return `${n} trial${n === 1 ? '' : 's'}: ${detail}`;
}

export function SweepGroup(props: {
  id: string;
  jobs: IJob[];
  state: ISweepState | null;
  collapsed: boolean;
  onToggle: () => void;
  now: number;
  pending: Set<string>;
  highlight: string | null;
  handlers: IRowHandlers;
}): React.ReactElement {
  const { id, jobs, state } = props;
  const sweep = state?.sweep ?? null;
  const names = new Map(jobs.map(j => [j.id, j.name]));
  const leaderboard = sweep?.leaderboard ?? [];
  const bodyId = `nbrunner-sweep-${id}-body`;
  return (
    <li
      className="nbrunner-SweepGroup"
      data-testid="nbrunner-sweep"
      data-sweep-id={id}
      aria-label={`Sweep ${id}`}
    >
      <button
        type="button"
        className="nbrunner-SweepGroup-toggle"
        data-testid="nbrunner-sweep-toggle"
        aria-expanded={!props.collapsed}
        aria-controls={bodyId}
        onClick={props.onToggle}
      >
        <span className="nbrunner-SweepGroup-caret" aria-hidden="true">
          {props.collapsed ? '▸' : '▾'}
        </span>
        Sweep <code>{id}</code>
        <span className="nbrunner-SweepGroup-summary" data-testid="nbrunner-sweep-summary">
          {sweepSummary(jobs, sweep)}
        </span>
      </button>
      {!props.collapsed && (
        <div id={bodyId} className="nbrunner-SweepGroup-body">
          {state?.error && !sweep && (
            <p className="nbrunner-Empty" data-testid="nbrunner-leaderboard-error">
              Leaderboard unavailable: {state.error}
            </p>
          )}
          {leaderboard.length > 0 && (
            <Leaderboard sweep={id} entries={leaderboard} names={names} />
          )}
          <ul
            className="nbrunner-JobList nbrunner-SweepGroup-trials"
            aria-label={`Trials of sweep ${id}`}
          >
            {jobs.map(job => (
              <JobRow
                key={job.id}
                job={job}
                now={props.now}
                busy={props.pending.has(job.id)}
                highlighted={props.highlight === job.id}
                handlers={props.handlers}
              />
            ))}
          </ul>
        </div>
      )}
    </li>
  );
}
