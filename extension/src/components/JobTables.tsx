/** A job page's tables: the job's details, its parameters and its status history. */
import * as React from 'react';

import { formatDuration, jobElapsed, parseTime } from '../format';
import { IJob, JSONValue } from '../types';
import { StatusBadge } from './StatusBadge';

function formatTime(value: string | null | undefined): string {
  const ms = parseTime(value);
  return ms === null ? '–' : new Date(ms).toLocaleString();
}

function formatValue(value: JSONValue): string {
  return typeof value === 'string' ? JSON.stringify(value) : JSON.stringify(value);
}

export function JobDetails({ job }: { job: IJob }): React.ReactElement {
  const elapsed = jobElapsed(job);
  const rows: Array<[string, React.ReactNode, string]> = [
    ['Status', job.status, 'status'],
    ['Attempt', job.attempt ?? '–', 'attempt'],
    ['Worker', job.worker || '–', 'worker'],
    ['GPUs', `${job.gpus ?? 0} now (min ${job.min_gpus}, max ${job.max_gpus})`, 'gpus'],
    ['Priority', job.priority, 'priority'],
    ['Owner', job.owner || '–', 'owner'],
    ['Created', formatTime(job.created_at), 'created'],
    ['Started', formatTime(job.started_at), 'started'],
    ['Finished', formatTime(job.finished_at), 'finished'],
    [elapsed.title, elapsed.text, 'elapsed']
  ];
  if (job.host) {
    rows.splice(3, 0, ['Host', job.host, 'host']);
  }
  if (job.account) {
    rows.splice(rows.findIndex(([, , key]) => key === 'owner') + 1, 0, ['Account', job.account, 'account']);
  }
  if (job.sweep) {
    rows.push(['Sweep', job.sweep, 'sweep']);
  }
  if (job.schedule) {
    rows.push(['Schedule', job.schedule, 'schedule']);
  }
  return (
    <section className="nbrunner-JobPage-section" data-testid="nbrunner-jobpage-details">
      <h3>Job</h3>
      <table className="nbrunner-JobPage-table">
        <tbody>
          {rows.map(([label, value, key]) => (
            <tr key={key} data-field={key}>
              <th scope="row">{label}</th>
              <td>{value}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

export function JobParameters({ job }: { job: IJob }): React.ReactElement {
  const params = Object.entries(job.parameters ?? {});
  return (
    <section className="nbrunner-JobPage-section" data-testid="nbrunner-jobpage-parameters">
      <h3>Parameters</h3>
      {params.length === 0 ? (
        <p className="nbrunner-Empty">The notebook's defaults.</p>
      ) : (
        <table className="nbrunner-JobPage-table">
          <tbody>
            {params.map(([name, value]) => (
              <tr key={name} data-param={name}>
                <th scope="row">{name}</th>
                <td>
                  <code>{formatValue(value)}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

export function JobHistory({ job }: { job: IJob }): React.ReactElement {
  const history = Array.isArray(job.history) ? job.history : [];
  const first = parseTime(history[0]?.at);
  return (
    <section className="nbrunner-JobPage-section" data-testid="nbrunner-jobpage-history">
      <h3>Status history</h3>
      {history.length === 0 ? (
        <p className="nbrunner-Empty">No status change recorded.</p>
      ) : (
        <ol className="nbrunner-JobPage-history">
          {history.map((h, i) => {
            const at = parseTime(h.at);
            return (
              <li key={i} data-status={h.status}>
                <StatusBadge status={h.status} />{' '}
                <time dateTime={h.at}>{formatTime(h.at)}</time>
                {i > 0 && at !== null && first !== null && (
                  <span className="nbrunner-JobPage-since">
                    {' '}
                    (+{formatDuration(at - first)})
                  </span>
                )}
                {h.reason && (
                  <span className="nbrunner-JobPage-reason" data-testid="nbrunner-jobpage-history-reason">
                    {' '}
                    {h.reason}
                  </span>
                )}
              </li>
            );
          })}
        </ol>
      )}
    </section>
  );
}
