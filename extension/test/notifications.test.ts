import { describe, expect, it } from 'vitest';

import { formFromSettings, linkTarget, NOTIFY_EVENTS, settingsFromForm } from '../src/notifications';

describe('formFromSettings', () => {
  it('puts the first e-mail target in the address field and every other target on a line', () => {
    const form = formFromSettings({
      targets: ['slack://a/b/c', 'mailto:alice@example.org', 'mailto:bob@example.org', 'json://h/p'],
      on: ['failed']
    });
    expect(form.email).toBe('alice@example.org');
    expect(form.urls).toBe('slack://a/b/c\nmailto:bob@example.org\njson://h/p');
    expect([...form.on]).toEqual(['failed']);
  });
});

describe('settingsFromForm', () => {
  it('round-trips what the server keeps, in the server order of events', () => {
    const settings = { targets: ['mailto:alice@example.org', 'json://hooks.example.org/x'], on: ['completed', 'failed'] };
    const form = formFromSettings(settings);
    form.on = new Set(['failed', 'completed']);
    expect(settingsFromForm(form)).toEqual(settings);
  });

  it('takes an address with or without mailto:, skips blank and repeated lines', () => {
    expect(
      settingsFromForm({ email: ' mailto:a@example.org ', urls: '\n json://h/p \njson://h/p\n', on: new Set(NOTIFY_EVENTS) })
    ).toEqual({ targets: ['mailto:a@example.org', 'json://h/p'], on: [...NOTIFY_EVENTS] });
    expect(settingsFromForm({ email: '', urls: '', on: new Set() })).toEqual({ targets: [], on: [] });
  });

  it('says in one line what cannot be saved', () => {
    expect(settingsFromForm({ email: 'alice', urls: '', on: new Set() })).toMatch(/not an e-mail address/);
    expect(settingsFromForm({ email: '', urls: 'hooks.example.org', on: new Set() })).toMatch(/not an Apprise URL/);
  });
});

describe('linkTarget', () => {
  it('opens the job page or the sweep a notification links to, and nothing else', () => {
    expect(linkTarget('?token=t&nbrunner-job=ab12cd34')).toEqual({
      command: 'nbrunner:open-job',
      args: { id: 'ab12cd34', name: 'ab12cd34' }
    });
    expect(linkTarget('?nbrunner-sweep=s1')).toEqual({ command: 'nbrunner:open-jobs', args: { sweep: 's1' } });
    expect(linkTarget('?nbrunner-job=../x')).toBeNull();
    expect(linkTarget('?token=t')).toBeNull();
  });
});
