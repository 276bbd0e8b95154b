/**
 * A dense table of jobs, one line each (`JobTableRow`), under headers that sort the rows
 * shown (`job-table.ts`: ascending, descending, then the listing's own order).
 */
import * as React from 'react';

import { Column, COLUMNS, ISort } from '../job-table';
import { IJob } from '../types';
import { IRowHandlers, JobTableRow } from './JobTableRow';

const TITLES: { [key in Column]: string } = {
  name: 'Name',
  status: 'Status',
  gpus: 'GPUs',
  priority: 'Priority',
  owner: 'Owner',
  created: 'Created',
  duration: 'Duration',
  metric: 'Metric'
};

export interface IJobTableProps {
  rows: IJob[];
  label: string;
  now: number;
  handlers: IRowHandlers;
  /** The sort shown in the headers, and what a click on a header asks for (none: not sortable). */
  sort?: ISort;
  onSort?: (column: Column) => void;
  pending?: Set<string>;
  highlight?: string | null;
  testid?: string;
}

export function JobTable(props: IJobTableProps): React.ReactElement {
  const { sort, onSort } = props;
  return (
    <table className="nbrunner-JobTable" aria-label={props.label} data-testid={props.testid ?? 'nbrunner-job-list'}>
      <thead>
        <tr>
          {COLUMNS.map(column => {
            const active = sort?.column === column;
            const direction = active ? (sort!.descending ? 'descending' : 'ascending') : 'none';
            return (
              <th
                key={column}
                scope="col"
                aria-sort={onSort ? direction : undefined}
                className={`nbrunner-JobTable-col-${column}`}
              >
                {onSort ? (
                  <button
                    type="button"
                    className="nbrunner-JobTable-sort"
                    data-testid={`nbrunner-sort-${column}`}
                    data-sort={direction}
                    title={`Sort by ${TITLES[column].toLowerCase()}`}
                    onClick={() => onSort(column)}
                  >
                    {TITLES[column]}
                    <span aria-hidden="true">
                      {active ? (sort!.descending ? ' ▾' : ' ▴') : ''}
                    </span>
                  </button>
                ) : (
                  TITLES[column]
                )}
              </th>
            );
          })}
          <th scope="col" className="nbrunner-JobTable-actions">
            <span className="nbrunner-sr-only">Actions</span>
          </th>
        </tr>
      </thead>
      <tbody>
        {props.rows.map(job => (
          <JobTableRow
            key={job.id}
            job={job}
            now={props.now}
            busy={props.pending?.has(job.id) ?? false}
            highlighted={props.highlight === job.id}
            handlers={props.handlers}
          />
        ))}
      </tbody>
    </table>
  );
}
