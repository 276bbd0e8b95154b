/** The status of a job as a colored badge. */
import * as React from 'react';

export function StatusBadge(props: { status: string }): React.ReactElement {
  return (
    <span
      className={`nbrunner-StatusBadge nbrunner-status-${props.status}`}
      data-testid="nbrunner-job-status"
      data-status={props.status}
    >
      {props.status}
    </span>
  );
}
