import { describe, expect, it } from 'vitest';

import {
  browserTimeZone,
  cronError,
  defaultWhen,
  describeTiming,
  IWhenValues,
  Preset,
  timezoneError,
  validateWhen,
  whenFromSchedule,
  whenToTiming
} from '../src/schedule';
import { ISchedule } from '../src/types';

function when(fields: Partial<IWhenValues>): IWhenValues {
  return { ...defaultWhen('schedule'), timezone: 'UTC', ...fields };
}

function schedule(fields: Partial<ISchedule>): ISchedule {
  return {
    id: 's1',
    name: 'nightly',
    notebook: 'nb.ipynb',
    parameters: null,
    cron: null,
    every: null,
    timezone: 'Europe/Paris',
    overlap: 'skip',
    paused: false,
    next_run_at: null,
    last_run_at: null,
    created_at: null,
    min_gpus: 0,
    max_gpus: 0,
    priority: 5000,
    timeout: null,
    ...fields
  };
}

describe('cronError', () => {
  it.each([
    '0 9 * * 1-5',
    '*/15 * * * *',
    '0,30 8-18/2 1 1-12 0',
    '59 23 31 12 7',
    '0 0 * jan-mar MON',
    '  5   4 * * sun ',
    '@daily',
    '@HOURLY',
    '@midnight'
  ])('accepts %j', text => {
    expect(cronError(text)).toBeNull();
  });

  it.each([
    ['', 'Enter a cron expression (5 fields: minute hour day-of-month month day-of-week), e.g. 0 9 * * 1-5.'],
    ['@yearly', 'Unknown cron shortcut "@yearly": use @hourly, @daily, @midnight, @weekly, @monthly or 5 fields.'],
    ['0 9 * *', 'A cron expression has 5 fields (minute hour day-of-month month day-of-week); "0 9 * *" has 4.'],
    ['0 9 * * * *', 'A cron expression has 5 fields (minute hour day-of-month month day-of-week); "0 9 * * * *" has 6.'],
    ['60 * * * *', 'The minute field "60" is not valid: the minute must be 0–59, not 60.'],
    ['0 24 * * *', 'The hour field "24" is not valid: the hour must be 0–23, not 24.'],
    ['0 0 0 * *', 'The day of month field "0" is not valid: the day of month must be 1–31, not 0.'],
    ['0 0 * 13 *', 'The month field "13" is not valid: the month must be 1–12, not 13.'],
    ['0 0 * * 8', 'The day of week field "8" is not valid: the day of week must be 0–7, not 8.'],
    ['0 0 * foo *', 'The month field "foo" is not valid: "foo" is not a number.'],
    ['0 0 * * mon-xyz', 'The day of week field "mon-xyz" is not valid: "xyz" is not a number.'],
    ['*/0 * * * *', 'The minute field "*/0" is not valid: the step after "/" must be a whole number ≥ 1.'],
    ['*/x * * * *', 'The minute field "*/x" is not valid: the step after "/" must be a whole number ≥ 1.'],
    ['1-2-3 * * * *', 'The minute field "1-2-3" is not valid (expected e.g. *, 5, 1-5, */15 or 1,3).'],
    ['1/2/3 * * * *', 'The minute field "1/2/3" is not valid (expected e.g. *, 5, 1-5, */15 or 1,3).'],
    [',5 * * * *', 'The minute field ",5" is not valid (expected e.g. *, 5, 1-5, */15 or 1,3).']
  ])('refuses %j: %s', (text, message) => {
    expect(cronError(text)).toBe(message);
  });
});

describe('timezoneError', () => {
  it('accepts IANA names and refuses others', () => {
    expect(timezoneError('UTC')).toBeNull();
    expect(timezoneError(' Europe/Paris ')).toBeNull();
    expect(timezoneError('Mars/Olympus')).toBe(
      '"Mars/Olympus" is not a time zone (use an IANA name such as UTC or Europe/Paris).'
    );
    expect(timezoneError(' ')).toBe('Enter a time zone, e.g. UTC or Europe/Paris.');
  });
});

describe('defaultWhen', () => {
  it('starts daily at 09:00 in the browser zone, skipping overlaps', () => {
    expect(browserTimeZone()).toBe('UTC');
    expect(defaultWhen('sweep', 'grid.yaml')).toMatchObject({
      mode: 'sweep',
      preset: 'daily',
      time: '09:00',
      timezone: 'UTC',
      overlap: 'skip',
      spec: 'grid.yaml'
    });
    expect(defaultWhen().mode).toBe('now');
  });
});

describe('validateWhen', () => {
  it('checks nothing for a run now', () => {
    expect(validateWhen(when({ mode: 'now', cron: 'bad', preset: 'cron' }))).toEqual({});
  });

  it('checks a sweep spec path', () => {
    expect(validateWhen(when({ mode: 'sweep', spec: ' ' }))).toEqual({
      'when:spec': 'Enter the path of a sweep spec (a .yaml file).'
    });
    expect(validateWhen(when({ mode: 'sweep', spec: 'grid.json' }))).toEqual({
      'when:spec': 'The sweep spec must be a .yaml or .yml file; "grid.json" is not.'
    });
    expect(validateWhen(when({ mode: 'sweep', spec: 'dir/grid.YML' }))).toEqual({});
  });

  it.each([
    ['seconds', { seconds: '0' }, 'when:seconds', 'Every (seconds) must be ≥ 1, not 0.'],
    ['minutes', { minutes: '60' }, 'when:minutes', 'Every (minutes) must be between 1 and 59, not 60.'],
    ['hourly', { minute: '-1' }, 'when:minute', 'Minute past the hour must be between 0 and 59, not -1.'],
    ['daily', { time: '24:00' }, 'when:time', 'Time must be HH:MM (00:00–23:59); "24:00" is not.'],
    ['weekly', { time: '9h' }, 'when:time', 'Time must be HH:MM (00:00–23:59); "9h" is not.'],
    ['cron', { cron: '* * *' }, 'when:cron', 'A cron expression has 5 fields (minute hour day-of-month month day-of-week); "* * *" has 3.']
  ] as const)('checks the %s preset', (preset, fields, key, message) => {
    expect(validateWhen(when({ preset: preset as Preset, ...fields }))).toEqual({ [key]: message });
  });

  it('checks the time zone of every schedule', () => {
    const errors = validateWhen(when({ preset: 'daily', time: '9:05', timezone: 'Nowhere' }));
    expect(Object.keys(errors)).toEqual(['when:timezone']);
  });
});

describe('whenToTiming', () => {
  it.each([
    [{ preset: 'seconds', seconds: ' 30 ' }, { every: 30 }],
    [{ preset: 'minutes', minutes: '15' }, { cron: '*/15 * * * *' }],
    [{ preset: 'hourly', minute: '5' }, { cron: '5 * * * *' }],
    [{ preset: 'daily', time: '09:30' }, { cron: '30 9 * * *' }],
    [{ preset: 'weekly', time: '7:05', weekday: '1' }, { cron: '5 7 * * 1' }],
    [{ preset: 'cron', cron: ' 0  9 *\t* 1-5 ' }, { cron: '0 9 * * 1-5' }]
  ] as const)('%j -> %j', (fields, timing) => {
    const values = when({ ...(fields as Partial<IWhenValues>), timezone: ' Asia/Tokyo ', overlap: 'queue' });
    expect(whenToTiming(values)).toEqual({ timezone: 'Asia/Tokyo', overlap: 'queue', ...timing });
  });
});

describe('whenFromSchedule', () => {
  it.each([
    [{ every: 45 }, { preset: 'seconds', seconds: '45' }],
    [{ cron: '*/10 * * * *' }, { preset: 'minutes', minutes: '10' }],
    [{ cron: '7 * * * *' }, { preset: 'hourly', minute: '7' }],
    [{ cron: '30 9 * * *' }, { preset: 'daily', time: '09:30' }],
    [{ cron: '0 18 * * 5' }, { preset: 'weekly', time: '18:00', weekday: '5' }],
    [{ cron: '0 9 * * 1-5' }, { preset: 'cron', cron: '0 9 * * 1-5' }],
    [{ cron: '0 9 * * 7' }, { preset: 'cron', cron: '0 9 * * 7' }],
    [{ cron: '75 9 * * *' }, { preset: 'cron', cron: '75 9 * * *' }]
  ] as const)('%j -> %j', (timing, fields) => {
    const values = whenFromSchedule(schedule(timing));
    expect(values).toMatchObject({ mode: 'schedule', timezone: 'Europe/Paris', ...fields });
  });

  it('keeps the overlap policy and defaults the zone to UTC', () => {
    expect(whenFromSchedule(schedule({ every: 5, overlap: 'queue', timezone: '' }))).toMatchObject({
      overlap: 'queue',
      timezone: 'UTC'
    });
    expect(whenFromSchedule(schedule({ every: 5, overlap: 'other' })).overlap).toBe('skip');
  });

  it('round-trips each preset through whenToTiming', () => {
    const presets: Array<Partial<IWhenValues>> = [
      { preset: 'seconds', seconds: '90' },
      { preset: 'minutes', minutes: '20' },
      { preset: 'hourly', minute: '45' },
      { preset: 'daily', time: '23:59' },
      { preset: 'weekly', time: '00:00', weekday: '0' },
      { preset: 'cron', cron: '0 12 1 * *' }
    ];
    for (const fields of presets) {
      const values = when(fields);
      const timing = whenToTiming(values);
      const back = whenFromSchedule(
        schedule({ cron: timing.cron ?? null, every: timing.every ?? null, timezone: 'UTC' })
      );
      expect(back).toMatchObject(fields);
    }
  });
});

describe('describeTiming', () => {
  it.each([
    [{ every: 7200 }, 'every 2 h'],
    [{ every: 120 }, 'every 2 min'],
    [{ every: 45 }, 'every 45 s'],
    [{ cron: '*/5 * * * *' }, 'every 5 min'],
    [{ cron: '7 * * * *' }, 'hourly at :07'],
    [{ cron: '30 9 * * *' }, 'daily at 09:30'],
    [{ cron: '0 18 * * 5' }, 'weekly on Friday at 18:00'],
    [{ cron: '0 9 * * 1-5' }, '0 9 * * 1-5'],
    [{ cron: '  ' }, '–'],
    [{}, '–']
  ])('%j is "%s"', (timing, text) => {
    expect(describeTiming(timing)).toBe(text);
  });
});
