/**
 * The notification settings form (a main-area tab opened from the Jobs panel's bell): an e-mail
 * address, Apprise URLs and the events, read from and saved to `/me/notifications`, with the
 * newest deliveries below.
 */
import { Widget } from '@lumino/widgets';

import { errorMessage, getNotificationLog, getNotifications, putNotifications } from './api';
import {
  EVENT_LABELS,
  formFromSettings,
  INotificationSettings,
  NOTIFY_EVENTS,
  settingsFromForm
} from './notifications';

/** Deliveries the form lists. */
const LOG_SHOWN = 10;

function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  text = ''
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    node.setAttribute(k, v);
  }
  node.textContent = text;
  return node;
}

export class NotificationSettings extends Widget {
  constructor() {
    super();
    this.id = 'nbrunner-notifications';
    this.addClass('nbrunner-Notifications');
    this.title.label = 'nbrunner notifications';
    this.title.caption = 'Where and when you are told that a job, sweep or pipeline ended';
    const node = this.node;
    node.appendChild(element('h2', {}, 'Notifications'));
    node.appendChild(
      element('p', {}, 'Be told outside the browser when your jobs end: by e-mail, or at Apprise URLs ' +
        '(slack://…, msteams://…, json://host/path) your administrator allows.')
    );
    this._email = element('input', { type: 'email', 'data-testid': 'nbrunner-notify-email',
      placeholder: 'you@example.org', 'aria-label': 'E-mail address' });
    this._urls = element('textarea', { rows: '4', 'data-testid': 'nbrunner-notify-urls',
      placeholder: 'one Apprise URL per line', 'aria-label': 'Apprise URLs' });
    node.appendChild(this._field('E-mail address', this._email));
    node.appendChild(this._field('Apprise URLs', this._urls));
    const events = element('fieldset');
    events.appendChild(element('legend', {}, 'Tell me when'));
    for (const event of NOTIFY_EVENTS) {
      const box = element('input', { type: 'checkbox', 'data-testid': `nbrunner-notify-on-${event}` });
      this._boxes.set(event, box);
      const label = element('label');
      label.append(box, ` ${EVENT_LABELS[event]}`);
      events.appendChild(label);
    }
    node.appendChild(events);
    this._save = element('button', { type: 'button', class: 'nbrunner-Button', 'data-testid': 'nbrunner-notify-save' },
      'Save');
    this._save.addEventListener('click', () => void this.save());
    node.appendChild(this._save);
    this._status = element('div', { class: 'nbrunner-Notifications-status', 'data-testid': 'nbrunner-notify-status',
      role: 'status' });
    node.appendChild(this._status);
    node.appendChild(element('h3', {}, 'Latest deliveries'));
    this._log = element('ul', { 'data-testid': 'nbrunner-notify-log' });
    node.appendChild(this._log);
    void this.load();
  }

  /** Read the settings (and the log) from the server into the form. */
  async load(): Promise<void> {
    try {
      this._show(await getNotifications());
      this._say('');
    } catch (error) {
      this._say(`Could not read your notification settings: ${errorMessage(error)}`, true);
    }
    await this._loadLog();
  }

  /** Save the form with PUT /me/notifications; the server's one-line refusal is shown as it is. */
  async save(): Promise<void> {
    const on = new Set(NOTIFY_EVENTS.filter(e => this._boxes.get(e)?.checked));
    const settings = settingsFromForm({ email: this._email.value, urls: this._urls.value, on });
    if (typeof settings === 'string') {
      this._say(settings, true);
      return;
    }
    this._save.disabled = true;
    try {
      this._show(await putNotifications(settings));
      this._say('Saved.');
    } catch (error) {
      this._say(errorMessage(error), true);
    } finally {
      this._save.disabled = false;
    }
  }

  private _field(label: string, input: HTMLElement): HTMLElement {
    const row = element('label', { class: 'nbrunner-Notifications-field' });
    row.append(element('span', {}, label), input);
    return row;
  }

  private _show(settings: INotificationSettings): void {
    const form = formFromSettings(settings);
    this._email.value = form.email;
    this._urls.value = form.urls;
    for (const [event, box] of this._boxes) {
      box.checked = form.on.has(event);
    }
  }

  private async _loadLog(): Promise<void> {
    try {
      const entries = (await getNotificationLog()).log.slice(0, LOG_SHOWN);
      this._log.replaceChildren(
        ...(entries.length
          ? entries.map(e =>
              element('li', {}, `${e.time} ${e.outcome} ${e.event} ${e.subject} → ${e.target}` +
                (e.error ? ` (${e.error})` : ''))
            )
          : [element('li', {}, 'Nothing sent yet.')])
      );
    } catch {
      this._log.replaceChildren();
    }
  }

  private _say(text: string, error = false): void {
    this._status.textContent = text;
    this._status.classList.toggle('nbrunner-mod-error', error);
  }

  private _email: HTMLInputElement;
  private _urls: HTMLTextAreaElement;
  private _boxes = new Map<string, HTMLInputElement>();
  private _save: HTMLButtonElement;
  private _status: HTMLDivElement;
  private _log: HTMLUListElement;
}
