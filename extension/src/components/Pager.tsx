/** Paging through a listing: newer and older pages, and which rows are shown. */
import * as React from 'react';

import { ActionButton } from './ActionButton';

export function Pager(props: {
  label: string;
  hasNewer: boolean;
  hasOlder: boolean;
  busy: boolean;
  onNewer: () => void;
  onOlder: () => void;
}): React.ReactElement {
  return (
    <nav className="nbrunner-Pager" aria-label="Pages of jobs">
      <ActionButton
        testid="nbrunner-page-newer"
        label="Newer jobs: the previous page"
        title="The previous page"
        disabled={!props.hasNewer || props.busy}
        onClick={props.onNewer}
      >
        ‹ Newer
      </ActionButton>
      <span className="nbrunner-Pager-label" data-testid="nbrunner-page-label" aria-live="polite">
        {props.label}
      </span>
      <ActionButton
        testid="nbrunner-page-older"
        label="Older jobs: the next page"
        title="The next page"
        disabled={!props.hasOlder || props.busy}
        onClick={props.onOlder}
      >
        Older ›
      </ActionButton>
    </nav>
  );
}
