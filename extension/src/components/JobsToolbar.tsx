/** The Jobs panel's header: its title, whether it is live, and its tools. */
import * as React from 'react';

import { ChannelMode } from '../channel';
import { ActionButton } from './ActionButton';
import { LiveStatus } from './LiveStatus';
import { PanelHeader } from './PanelHeader';

export function JobsToolbar(props: {
  mode: ChannelMode;
  pollSeconds: number;
  onRetry: () => void;
  onRefresh: () => void;
  onCluster: () => void;
  /** Open the table full width (the side panel's). */
  onWide?: () => void;
  onSchedules?: () => void;
  /** Open the notification settings (the bell). */
  onNotifications?: () => void;
}): React.ReactElement {
  return (
    <PanelHeader title="nbrunner jobs">
      <LiveStatus mode={props.mode} pollSeconds={props.pollSeconds} onRetry={props.onRetry} />
      <ActionButton testid="nbrunner-refresh" label="Refresh jobs" title="Read the page again" onClick={props.onRefresh}>
        Refresh
      </ActionButton>
      {props.onWide && (
        <ActionButton
          testid="nbrunner-open-wide"
          label="Open the jobs table in the main area"
          title="Open the jobs table in a tab, full width"
          onClick={props.onWide}
        >
          Expand
        </ActionButton>
      )}
      <ActionButton
        testid="nbrunner-open-cluster"
        label="Open the cluster view"
        title="Open the cluster view: slots per host and GPU timeline"
        onClick={props.onCluster}
      >
        Cluster
      </ActionButton>
      {props.onSchedules && (
        <ActionButton
          testid="nbrunner-open-schedules"
          label="Open the schedules view"
          title="Schedules: notebooks that run on a clock"
          onClick={props.onSchedules}
        >
          Schedules
        </ActionButton>
      )}
      {props.onNotifications && (
        <ActionButton
          testid="nbrunner-open-notifications"
          label="Notification settings"
          title="Be told by e-mail or Apprise when your jobs end"
          onClick={props.onNotifications}
        >
          🔔
        </ActionButton>
      )}
    </PanelHeader>
  );
}
