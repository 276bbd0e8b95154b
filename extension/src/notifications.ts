/**
 * Notification settings as the settings form shows them, pure: an e-mail address, Apprise URLs
 * (one per line) and the events, to and from the `{targets, on}` of `/me/notifications`.
 */

import { CommandIDs } from './command-ids';

/** What a user may be told about (the server's order). */
export const NOTIFY_EVENTS = ['completed', 'failed', 'cancelled', 'sweep', 'pipeline'] as const;
export type NotifyEvent = (typeof NOTIFY_EVENTS)[number];

export const EVENT_LABELS: Record<NotifyEvent, string> = {
  completed: 'A job completed',
  failed: 'A job failed',
  cancelled: 'A job was cancelled',
  sweep: 'A sweep ended',
  pipeline: 'A pipeline ended'
};

/** The body and answer of `GET`/`PUT /me/notifications`. */
export interface INotificationSettings {
  targets: string[];
  on: string[];
}

/** One entry of `GET /me/notifications/log`. */
export interface INotificationLogEntry {
  time: string;
  target: string;
  event: string;
  subject: string;
  outcome: 'sent' | 'retrying' | 'failed';
  attempt: number;
  error: string | null;
}

export interface INotifyForm {
  email: string;
  urls: string;
  on: Set<string>;
}

const MAILTO = 'mailto:';

/** The form for `settings`: its first e-mail target in the address field, every other target a line of URLs. */
export function formFromSettings(settings: INotificationSettings): INotifyForm {
  const first = settings.targets.find(t => t.toLowerCase().startsWith(MAILTO) && !t.includes('://'));
  return {
    email: first ? first.slice(MAILTO.length) : '',
    urls: settings.targets.filter(t => t !== first).join('\n'),
    on: new Set(settings.on)
  };
}

const ADDRESS = /^[^\s@<>,;:]+@[^\s@<>,;:]+$/;

/** The settings the form asks for, or the one-line reason it cannot be saved. */
export function settingsFromForm(form: INotifyForm): INotificationSettings | string {
  const targets: string[] = [];
  const email = form.email.trim();
  if (email) {
    const address = email.toLowerCase().startsWith(MAILTO) ? email.slice(MAILTO.length) : email;
    if (!ADDRESS.test(address)) {
      return `"${email}" is not an e-mail address (name@example.org)`;
    }
    targets.push(MAILTO + address);
  }
  for (const raw of form.urls.split('\n')) {
    const url = raw.trim();
    if (!url) {
      continue;
    }
    if (!/^[a-z][a-z0-9+.-]*:/i.test(url)) {
      return `"${url}" is not an Apprise URL (scheme://...)`;
    }
    if (!targets.includes(url)) {
      targets.push(url);
    }
  }
  return { targets, on: NOTIFY_EVENTS.filter(e => form.on.has(e)) };
}

const ID = /^[a-z0-9]{1,32}$/;

/** The command a notification's link asks for: `?nbrunner-job=ID` opens the job's page,
 * `?nbrunner-sweep=ID` the Jobs panel on the sweep's trials; null for any other page. */
export function linkTarget(
  search: string
): { command: string; args: { id?: string; name?: string; sweep?: string } } | null {
  const params = new URLSearchParams(search);
  const job = params.get('nbrunner-job');
  if (job && ID.test(job)) {
    return { command: CommandIDs.openJob, args: { id: job, name: job } };
  }
  const sweep = params.get('nbrunner-sweep');
  if (sweep && ID.test(sweep)) {
    return { command: CommandIDs.openJobs, args: { sweep } };
  }
  return null;
}
