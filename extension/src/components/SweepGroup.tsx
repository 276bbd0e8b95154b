/**
 * A sweep above the Jobs table when the table lists its trials: a header counting its
 * planned trials by status, and its leaderboard.
 */
import * as React from 'react';

import { IJob, ISweep } from '../types';
import { ActionButton } from './ActionButton';
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
  /** The trials the table shows (names for the leaderboard; counts until the sweep is known). */
  jobs: IJob[];
  state: ISweepState | null;
  collapsed: boolean;
  onToggle: () => void;
  onClose: () => void;
}): React.ReactElement {
  const { id, jobs, state } = props;
  const sweep = state?.sweep ?? null;
  const names = new Map(jobs.map(j => [j.id, j.name]));
  for (const entry of sweep?.jobs ?? []) {
    if (typeof entry !== 'string' && entry && entry.id) {
      names.set(entry.id, entry.name);
    }
  }
  const leaderboard = sweep?.leaderboard ?? [];
  const bodyId = `nbrunner-sweep-${id}-body`;
  return (
    <section className="nbrunner-SweepGroup" data-testid="nbrunner-sweep" data-sweep-id={id} aria-label={`Sweep ${id}`}>
      <div className="nbrunner-SweepGroup-head">
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
        <ActionButton
          testid="nbrunner-sweep-close"
          label={`Stop showing sweep ${id}: list every job`}
          title="List every job again"
          onClick={props.onClose}
        >
          All jobs
        </ActionButton>
      </div>
      {!props.collapsed && (
        <div id={bodyId} className="nbrunner-SweepGroup-body">
          {state?.error && !sweep && (
            <p className="nbrunner-Empty" data-testid="nbrunner-leaderboard-error">
              Leaderboard unavailable: {state.error}
            </p>
          )}
          {leaderboard.length > 0 && <Leaderboard sweep={id} entries={leaderboard} names={names} />}
        </div>
      )}
    </section>
  );
}
