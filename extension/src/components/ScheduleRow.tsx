/** One schedule in the Schedules view: name, notebook, timing, next/last run, controls. */
import * as React from 'react';

import { parseTime, relativeTime } from '../format';
import { describeTiming } from '../schedule';
import { ISchedule } from '../types';
import { ActionButton } from './ActionButton';

/** "in 3s", "12s ago", "–": relative to `now` (`past`: never "in ..."), with the local time as the tooltip. */
export function RelativeTime(props: {
  at: string | null;
  now: number;
  testid: string;
  past?: boolean;
}): React.ReactElement {
  const ms = parseTime(props.at);
  if (ms === null) {
    return <span data-testid={props.testid}>–</span>;
  }
  return (
    <time
      dateTime={props.at ?? undefined}
      title={new Date(ms).toLocaleString()}
      data-testid={props.testid}
    >
      {relativeTime(ms, props.now, props.past)}
    </time>
  );
}

export interface IScheduleHandlers {
  onSelect: (schedule: ISchedule) => void;
  onPause: (schedule: ISchedule, paused: boolean) => void;
  onEdit: (schedule: ISchedule) => void;
  onDelete: (schedule: ISchedule) => void;
}

export function ScheduleRow(props: {
  schedule: ISchedule;
  now: number;
  selected: boolean;
  busy: boolean;
  handlers: IScheduleHandlers;
}): React.ReactElement {
  const { schedule: s, handlers, busy } = props;
  const label = `${s.name} (${s.id})`;
  return (
    <tr
      className={
        'nbrunner-ScheduleRow' +
        (props.selected ? ' nbrunner-mod-selected' : '') +
        (s.paused ? ' nbrunner-mod-paused' : '')
      }
      data-testid="nbrunner-schedule"
      data-schedule-id={s.id}
      data-paused={String(!!s.paused)}
      aria-selected={props.selected}
      onClick={() => handlers.onSelect(s)}
    >
      <td>
        <button
          type="button"
          className="nbrunner-LinkButton"
          data-testid="nbrunner-schedule-name"
          aria-label={`Show the runs of schedule ${label}`}
          title="Show its runs"
          onClick={e => {
            e.stopPropagation();
            handlers.onSelect(s);
          }}
        >
          {s.name}
        </button>
        <code className="nbrunner-ScheduleRow-id">{s.id}</code>
      </td>
      <td className="nbrunner-ScheduleRow-notebook" title={s.notebook}>
        {s.notebook}
      </td>
      <td data-testid="nbrunner-schedule-timing" title={s.cron ?? `every ${s.every} s`}>
        {describeTiming(s)}
        {s.cron && describeTiming(s) !== s.cron && (
          <code className="nbrunner-ScheduleRow-cron">{s.cron}</code>
        )}
      </td>
      <td data-testid="nbrunner-schedule-timezone">{s.timezone}</td>
      <td>
        {s.paused ? (
          <span
            className="nbrunner-Muted"
            data-testid="nbrunner-schedule-next"
            title="Paused: no run until resumed"
          >
            –
          </span>
        ) : (
          <RelativeTime at={s.next_run_at} now={props.now} testid="nbrunner-schedule-next" />
        )}
      </td>
      <td>
        <RelativeTime at={s.last_run_at} now={props.now} testid="nbrunner-schedule-last" past />
      </td>
      <td>
        <span
          className={`nbrunner-StatusBadge nbrunner-schedule-${s.paused ? 'paused' : 'active'}`}
          data-testid="nbrunner-schedule-state"
        >
          {s.paused ? 'paused' : 'active'}
        </span>
      </td>
      <td className="nbrunner-ScheduleRow-actions" onClick={e => e.stopPropagation()}>
        <ActionButton
          testid={s.paused ? 'nbrunner-schedule-resume' : 'nbrunner-schedule-pause'}
          label={`${s.paused ? 'Resume' : 'Pause'} schedule ${label}`}
          disabled={busy}
          onClick={() => handlers.onPause(s, !s.paused)}
        >
          {s.paused ? 'Resume' : 'Pause'}
        </ActionButton>
        <ActionButton
          testid="nbrunner-schedule-edit"
          label={`Edit schedule ${label}`}
          disabled={busy}
          onClick={() => handlers.onEdit(s)}
        >
          Edit
        </ActionButton>
        <ActionButton
          testid="nbrunner-schedule-delete"
          label={`Delete schedule ${label}`}
          tone="danger"
          disabled={busy}
          onClick={() => handlers.onDelete(s)}
        >
          Delete
        </ActionButton>
      </td>
    </tr>
  );
}
