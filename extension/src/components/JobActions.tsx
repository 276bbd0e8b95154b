/** A job page's actions: open its output or log, downloads, re-run, cancel, delete. */
import * as React from 'react';

import { downloadUrl } from '../api';
import { CANCELLABLE_STATUSES } from '../constants';
import { DownloadFormat, IJob, isFinished } from '../types';
import { ActionButton } from './ActionButton';
import type { JobPage } from './JobPage';

export interface IJobActionsProps {
  job: IJob;
  /** The job was deleted. */
  gone: boolean;
  /** An action (cancel, delete) is under way. */
  acting: boolean;
  actions: JobPage.IActions;
  /** Run one of the page's actions (cancel, delete), one at a time. */
  run: (what: string, action: () => Promise<unknown>) => void;
}

export function JobActions({ job, gone, acting, actions, run }: IJobActionsProps): React.ReactElement {
  const ended = isFinished(job.status);
  const busy = acting || gone;
  const hasOutput = !!job.output && job.status !== 'queued';
  // A job cancelled before it ran has no executed notebook (its HTML shows the input).
  const available = (format: DownloadFormat) =>
    ended && !gone && (format !== 'ipynb' || !!job.started_at);
  const download = (format: DownloadFormat, label: string) =>
    available(format) ? (
      <a
        key={format}
        className="nbrunner-Button"
        href={downloadUrl(job.id, format)}
        download
        data-testid={`nbrunner-jobpage-download-${format}`}
        title={`Download the ${label}`}
      >
        {format === 'zip' ? 'zip' : format === 'html' ? 'HTML' : 'ipynb'}
      </a>
    ) : (
      <button
        key={format}
        type="button"
        className="nbrunner-Button"
        disabled
        data-testid={`nbrunner-jobpage-download-${format}`}
        title={ended ? 'The job never ran: no executed notebook' : 'Available once the job has ended'}
      >
        {format === 'zip' ? 'zip' : format === 'html' ? 'HTML' : 'ipynb'}
      </button>
    );
  return (
    <div className="nbrunner-JobPage-actions" role="toolbar" aria-label="Job actions">
      <ActionButton
        testid="nbrunner-jobpage-open-output"
        disabled={!hasOutput || gone}
        title={hasOutput ? 'Open the executed notebook, read-only' : 'No output yet'}
        onClick={() => actions.openOutput(job)}
      >
        Open output
      </ActionButton>
      <ActionButton
        testid="nbrunner-jobpage-log"
        onClick={() => actions.openLog(job)}
      >
        Log
      </ActionButton>
      <span className="nbrunner-JobPage-downloads" aria-label="Download">
        <span className="nbrunner-JobPage-label">Download</span>
        {download('ipynb', 'executed notebook')}
        {download('html', 'executed notebook as HTML')}
        {download('zip', 'job directory as a zip')}
      </span>
      <ActionButton
        testid="nbrunner-jobpage-rerun"
        disabled={busy}
        title="Run again from the same notebook snapshot, with the same or edited parameters"
        onClick={() => actions.rerun(job)}
      >
        Re-run…
      </ActionButton>
      {CANCELLABLE_STATUSES.includes(job.status) && (
        <ActionButton
          testid="nbrunner-jobpage-cancel"
          tone="warn"
          disabled={busy}
          onClick={() => run('cancel', () => actions.cancel(job))}
        >
          Cancel
        </ActionButton>
      )}
      {ended && (
        <ActionButton
          testid="nbrunner-jobpage-delete"
          tone="warn"
          disabled={busy}
          title="Delete the job's record and directory"
          onClick={() => run('delete', () => actions.remove(job))}
        >
          Delete…
        </ActionButton>
      )}
    </div>
  );
}
