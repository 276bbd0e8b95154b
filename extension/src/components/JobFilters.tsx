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

/** A labelled select of the filters. */
function FilterSelect(props: {
  id: string;
  label: string;
  testid: string;
  value: string | number;
  options: Array<{ value: string | number; label: string }>;
  onChange: (value: string) => void;
}): React.ReactElement {
  return (
    <span className="nbrunner-Filter">
      <label htmlFor={props.id}>{props.label}</label>
      <select
        id={props.id}
        className="nbrunner-Select"
        data-testid={props.testid}
        value={props.value}
        onChange={e => props.onChange(e.target.value)}
      >
        {props.options.map(o => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
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
  const schedules = props.schedules.map(s => ({ value: s.id, label: `${s.name} (${s.id})` }));
  if (query.schedule && !props.schedules.some(s => s.id === query.schedule)) {
    schedules.unshift({ value: query.schedule, label: query.schedule });
  }
  return (
    <div className="nbrunner-Filters" role="search" aria-label="Filter jobs">
      <FilterSelect
        id="nbrunner-jobs-filter"
        label="Status"
        testid="nbrunner-jobs-filter"
        value={query.status}
        options={[{ value: '', label: 'all' }, ...STATUSES.map(s => ({ value: s, label: s }))]}
        onChange={status => onChange({ status })}
      />
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
      <FilterSelect
        id="nbrunner-jobs-schedule"
        label="Schedule"
        testid="nbrunner-jobs-schedule"
        value={query.schedule}
        options={[{ value: '', label: 'any' }, ...schedules]}
        onChange={schedule => onChange({ schedule })}
      />
      <FilterText
        id="nbrunner-jobs-sweep"
        label="Sweep"
        testid="nbrunner-jobs-sweep"
        placeholder="sweep id"
        value={query.sweep}
        onChange={sweep => onChange({ sweep })}
      />
      <FilterSelect
        id="nbrunner-jobs-limit"
        label="Rows"
        testid="nbrunner-jobs-limit"
        value={query.limit}
        options={PAGE_SIZES.map(n => ({ value: n, label: String(n) }))}
        onChange={limit => onChange({ limit: Number(limit) })}
      />
    </div>
  );
}
