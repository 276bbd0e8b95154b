/**
 * A job's priority, editable inline: Enter applies, Escape undoes.  An out-of-range
 * value is refused with a message next to the box, and the box goes back to the job's
 * priority.
 */
import * as React from 'react';

import { MAX_PRIORITY, MIN_PRIORITY } from '../constants';
import { priorityError } from '../validation';
import { IJob, isFinished } from '../types';

export function PriorityInput(props: {
  job: IJob;
  onCommit: (job: IJob, priority: number) => Promise<boolean>;
  /** In a table: the column header says "Priority", the label is for screen readers only. */
  compact?: boolean;
}): React.ReactElement {
  const { job } = props;
  const [draft, setDraft] = React.useState<string | null>(null);
  const [saving, setSaving] = React.useState(false);
  const [refused, setRefused] = React.useState<string | null>(null);
  const id = `nbrunner-priority-${job.id}`;
  const errorId = `${id}-error`;
  const editable = !isFinished(job.status);
  const commit = async () => {
    if (draft === null) {
      return;
    }
    const problem = priorityError(draft);
    if (problem !== null) {
      setRefused(`${problem} Kept ${job.priority}.`);
      setDraft(null);
      return;
    }
    setRefused(null);
    const value = Number(draft.trim());
    if (value === job.priority) {
      setDraft(null);
      return;
    }
    setSaving(true);
    await props.onCommit(job, value);
    setSaving(false);
    setDraft(null);
  };
  return (
    <span className="nbrunner-Priority">
      <label htmlFor={id} className={props.compact ? 'nbrunner-sr-only' : undefined}>
        Priority
      </label>
      <input
        id={id}
        type="number"
        min={MIN_PRIORITY}
        max={MAX_PRIORITY}
        step={1}
        className="nbrunner-Priority-input"
        data-testid="nbrunner-job-priority"
        data-job-id={job.id}
        aria-label={`Priority of job ${job.name} (${job.id}); press Enter to apply`}
        aria-describedby={refused ? errorId : undefined}
        title={
          editable
            ? `Priority ${MIN_PRIORITY}–${MAX_PRIORITY}; press Enter to apply, Escape to undo`
            : 'The job has finished'
        }
        disabled={!editable}
        readOnly={saving}
        aria-busy={saving}
        value={draft ?? String(job.priority)}
        onChange={e => {
          setDraft(e.target.value);
          setRefused(null);
        }}
        onKeyDown={e => {
          if (e.key === 'Enter') {
            e.preventDefault();
            void commit();
          } else if (e.key === 'Escape') {
            e.preventDefault();
            setDraft(null);
            setRefused(null);
          }
        }}
        onBlur={() => {
          if (!saving) {
            setDraft(null);
          }
        }}
      />
      {refused && (
        <span
          id={errorId}
          className="nbrunner-Priority-error"
          data-testid="nbrunner-job-priority-error"
          role="alert"
        >
          {refused}
        </span>
      )}
    </span>
  );
}
