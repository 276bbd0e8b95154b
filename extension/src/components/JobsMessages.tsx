/** What the Jobs panel says above its table: a failed read (with Retry), changes on other
 * pages, loading, no jobs. */
import * as React from 'react';

import { IJob } from '../types';
import { ActionButton } from './ActionButton';
import { Banner } from './Banner';

export interface IJobsMessagesProps {
  /** Why the last read failed, if it did. */
  error: string | null;
  /** The server cannot list jobs at all (not just this once). */
  unavailable: boolean;
  /** The rows of the page (null before the first read). */
  rows: IJob[] | null;
  /** How many jobs changed on other pages. */
  unseen: number;
  /** The page shown is the first. */
  firstPage: boolean;
  /** Filters are set. */
  filtered: boolean;
  onRetry: () => void;
  /** Show the first page. */
  onFirst: () => void;
}

export function JobsMessages(props: IJobsMessagesProps): React.ReactElement {
  const { error, unavailable, rows, unseen } = props;
  return (
    <>
      {error && (
        <Banner tone={unavailable ? 'error' : 'warn'} testid="nbrunner-jobs-error">
          <p>
            {unavailable || rows === null ? 'Cannot list jobs. ' : 'Could not refresh the job list. '}
            {error}
          </p>
          <ActionButton testid="nbrunner-retry" onClick={props.onRetry}>
            Retry
          </ActionButton>
        </Banner>
      )}
      {unseen > 0 && (
        <button
          type="button"
          className="nbrunner-LinkButton nbrunner-JobsPanel-unseen"
          data-testid="nbrunner-jobs-unseen"
          onClick={props.onFirst}
        >
          {unseen} more job{unseen === 1 ? '' : 's'} changed on other pages: show the first page
        </button>
      )}
      {rows === null && !error && (
        <p className="nbrunner-Empty" data-testid="nbrunner-jobs-loading">
          Loading jobs…
        </p>
      )}
      {rows !== null && rows.length === 0 && props.firstPage && (
        <p className="nbrunner-Empty" data-testid="nbrunner-jobs-empty">
          {props.filtered
            ? 'No jobs match these filters.'
            : 'No jobs yet. Open a notebook and click “Run as job”, or right-click a notebook in the file browser.'}
        </p>
      )}
    </>
  );
}
