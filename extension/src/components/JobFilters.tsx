/**
 * The Jobs table's filters: status, owner (admins: anyone's), schedule, sweep, a part of the
 * name, and the rows per page.  Text fields apply a moment after typing stops.
 */
import * as React from 'react';

import { STATUSES } from '../constants';
import { IJobQuery, PAGE_SIZES } from '../job-table';
import { ISchedule } from '../types';

const TYPING_MS = 300;

/** A text field that reports its value a moment after the last keystroke (or on Enter). */
function FilterText(props: {
  id: string;
  label: string;
  value: string;
  placeholder: string;
  testid: string;
  onChange: (value: string) => void;
}): React.ReactElement {
  const [draft, setDraft] = React.useState(props.value);
  const timer = React.useRef(0);
  React.useEffect(() => setDraft(props.value), [props.value]);
  React.useEffect(() => () => window.clearTimeout(timer.current), []);
  const apply = (value: string) => {
    window.clearTimeout(timer.current);
    if (value !== props.value) {
      props.onChange(value);
    }
  };
  return (
    <span className="nbrunner-Filter">
      <label htmlFor={props.id}>{props.label}</label>
      <input
        id={props.id}
        type="search"
        className="nbrunner-Filter-input"
        data-testid={props.testid}
        placeholder={props.placeholder}
        value={draft}
        onChange={e => {
          const value = e.target.value;
          setDraft(value);
          window.clearTimeout(timer.current);
          timer.current = window.setTimeout(() => apply(value), TYPING_MS);
        }}
        onKeyDown={e => {
          if (e.key === 'Enter') {
            apply(draft);
          }
        }}
      />
    </span>
  );
}

export function JobFilters(props: {
  query: IJobQuery;
  schedules: ISchedule[];
  /** Whether the owner filter is offered (an admin sees other users' jobs). */
  owners: boolean;
  onChange: (change: Partial<IJobQuery>) => void;
}): React.ReactElement {
  const { query, onChange } = props;
  return (
    <div className="nbrunner-Filters" role="search" aria-label="Filter jobs">
      <span className="nbrunner-Filter">
        <label htmlFor="nbrunner-jobs-filter">Status</label>
        <select
          id="nbrunner-jobs-filter"
          className="nbrunner-Select"
          data-testid="nbrunner-jobs-filter"
          value={query.status}
          onChange={e => onChange({ status: e.target.value })}
        >
          <option value="">all</option>
          {STATUSES.map(s => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </span>
      <FilterText
        id="nbrunner-jobs-search"
        label="Name"
        testid="nbrunner-jobs-search"
        placeholder="part of the name"
        value={query.q}
        onChange={q => onChange({ q })}
      />
      {props.owners && (
        <FilterText
          id="nbrunner-jobs-owner"
          label="Owner"
          testid="nbrunner-jobs-owner"
          placeholder="user"
          value={query.owner}
          onChange={owner => onChange({ owner })}
        />
      )}
      <span className="nbrunner-Filter">
        <label htmlFor="nbrunner-jobs-schedule">Schedule</label>
        <select
          id="nbrunner-jobs-schedule"
          className="nbrunner-Select"
          data-testid="nbrunner-jobs-schedule"
          value={query.schedule}
          onChange={e => onChange({ schedule: e.target.value })}
        >
          <option value="">any</option>
          {query.schedule && !props.schedules.some(s => s.id === query.schedule) && (
            <option value={query.schedule}>{query.schedule}</option>
          )}
          {props.schedules.map(s => (
            <option key={s.id} value={s.id}>
              {s.name} ({s.id})
            </option>
          ))}
        </select>
      </span>
      <FilterText
        id="nbrunner-jobs-sweep"
        label="Sweep"
        testid="nbrunner-jobs-sweep"
        placeholder="sweep id"
        value={query.sweep}
        onChange={sweep => onChange({ sweep })}
      />
      <span className="nbrunner-Filter">
        <label htmlFor="nbrunner-jobs-limit">Rows</label>
        <select
          id="nbrunner-jobs-limit"
          className="nbrunner-Select"
          data-testid="nbrunner-jobs-limit"
          value={query.limit}
          onChange={e => onChange({ limit: Number(e.target.value) })}
        >
          {PAGE_SIZES.map(n => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
        </select>
      </span>
    </div>
  );
}
