/**
 * Whether a view is live (changes pushed by the server) or refreshing on a timer because the
 * push channel cannot be opened; `data-mode` is the channel's mode.
 */
import * as React from 'react';

import { ChannelMode } from '../channel';

export function LiveStatus(props: {
  mode: ChannelMode;
  pollSeconds: number;
  onRetry?: () => void;
}): React.ReactElement {
  const { mode } = props;
  const text =
    mode === 'live'
      ? 'Live'
      : mode === 'polling'
        ? `Live updates unavailable: refreshing every ${props.pollSeconds} s`
        : 'Connecting…';
  const title =
    mode === 'live'
      ? 'Changes arrive as they happen (push channel open)'
      : mode === 'polling'
        ? 'The push channel cannot be opened (an older server, or a proxy that closes streams): ' +
          'this view asks the server again on a timer, and the channel is tried again every 30 s'
        : 'Opening the push channel';
  return (
    <span
      className={`nbrunner-LiveStatus nbrunner-LiveStatus-${mode}`}
      data-testid="nbrunner-live-status"
      data-mode={mode}
      title={title}
      role="status"
    >
      <span className="nbrunner-LiveStatus-dot" aria-hidden="true" />
      {text}
      {mode === 'polling' && props.onRetry && (
        <button type="button" className="nbrunner-LinkButton" data-testid="nbrunner-live-retry" onClick={props.onRetry}>
          Retry now
        </button>
      )}
    </span>
  );
}
