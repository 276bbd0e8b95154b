/**
 * The leaderboard of a sweep: one row per planned trial (pending ones too), best
 * objective first; what matters first (rank, objective, job, status, each wide enough for
 * its whole value), then the parameters on one line with short numbers in the width left
 * (full values in the tooltip), so the table fits the sidebar.
 */
import * as React from 'react';

import { formatNumber, formatParameters, formatParametersShort } from '../format';
import { ILeaderboardEntry } from '../types';

/** A key that stays the same for a trial across refreshes (pending trials have no job). */
export function trialKey(entry: ILeaderboardEntry, index: number): string {
  if (typeof entry.trial === 'number') {
    return `trial-${entry.trial}`;
  }
  return entry.job ? `job-${entry.job}` : `pending-${index}`;
}

export function Leaderboard(props: {
  sweep: string;
  entries: ILeaderboardEntry[];
  names: Map<string, string>;
}): React.ReactElement {
  return (
    <div className="nbrunner-Leaderboard-wrap">
      <table
        className="nbrunner-Leaderboard"
        data-testid="nbrunner-leaderboard"
        aria-label={`Leaderboard of sweep ${props.sweep}`}
      >
        <colgroup>
          <col className="nbrunner-col-rank" />
          <col className="nbrunner-col-objective" />
          <col className="nbrunner-col-job" />
          <col className="nbrunner-col-status" />
          <col className="nbrunner-col-params" />
        </colgroup>
        <thead>
          <tr>
            <th scope="col">#</th>
            <th scope="col">Objective</th>
            <th scope="col">Job</th>
            <th scope="col" title="Status">
              <span aria-hidden="true">●</span>
              <span className="nbrunner-sr-only">Status</span>
            </th>
            <th scope="col">Parameters</th>
          </tr>
        </thead>
        <tbody>
          {props.entries.map((entry, index) => (
            <tr
              key={trialKey(entry, index)}
              data-testid="nbrunner-leaderboard-row"
              data-job-id={entry.job ?? ''}
              data-trial={entry.trial ?? index}
              data-rank={entry.rank ?? ''}
            >
              <td>{entry.rank ?? '–'}</td>
              <td className="nbrunner-Leaderboard-objective" data-testid="nbrunner-leaderboard-objective">
                {entry.objective === null || entry.objective === undefined
                  ? '–'
                  : formatNumber(entry.objective)}
              </td>
              <td title={entry.job ? (props.names.get(entry.job) ?? entry.job) : 'not started yet'}>
                {entry.job ? <code>{entry.job}</code> : '–'}
              </td>
              <td>
                <span
                  className={`nbrunner-StatusDot nbrunner-status-${entry.status}`}
                  data-testid="nbrunner-leaderboard-status"
                  data-status={entry.status}
                  title={entry.status}
                >
                  <span className="nbrunner-sr-only">{entry.status}</span>
                </span>
              </td>
              <td
                className="nbrunner-Leaderboard-params"
                data-testid="nbrunner-leaderboard-params"
                title={formatParameters(entry.parameters)}
              >
                {formatParametersShort(entry.parameters)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
