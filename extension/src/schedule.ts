/**
 * "When" of the Run-as-job dialog: run now, on a schedule (a preset, a cron expression
 * or every N seconds, in a time zone) or as a sweep.  Pure functions: validation field
 * by field (the messages show next to the fields), the schedule timing of valid values,
 * and the reverse (a schedule record back into the form) for editing.
 */
import { FieldErrors, wholeNumberError } from './validation';
import { ISchedule, IScheduleTiming, Overlap } from './types';

export type RunMode = 'now' | 'schedule' | 'sweep';

/** The ways to say when a schedule fires. */
export type Preset = 'seconds' | 'minutes' | 'hourly' | 'daily' | 'weekly' | 'cron';

export const PRESETS: ReadonlyArray<[Preset, string]> = [
  ['minutes', 'Every N minutes'],
  ['hourly', 'Hourly'],
  ['daily', 'Daily'],
  ['weekly', 'Weekly'],
  ['seconds', 'Every N seconds'],
  ['cron', 'Custom (cron expression)']
];

export const WEEKDAYS = [
  'Sunday',
  'Monday',
  'Tuesday',
  'Wednesday',
  'Thursday',
  'Friday',
  'Saturday'
];

/** Cron shortcuts the server accepts besides 5-field expressions. */
export const CRON_SHORTCUTS = ['@hourly', '@daily', '@midnight', '@weekly', '@monthly'];

/** The raw inputs of the "when" part of the dialog. */
export interface IWhenValues {
  mode: RunMode;
  preset: Preset;
  /** Every N seconds (the schedule's `every`). */
  seconds: string;
  /** Every N minutes (cron `*\/N`). */
  minutes: string;
  /** Minute of the hour of the hourly preset. */
  minute: string;
  /** HH:MM of the daily and weekly presets. */
  time: string;
  /** Day of the week of the weekly preset, 0 = Sunday (cron's numbering). */
  weekday: string;
  cron: string;
  timezone: string;
  overlap: Overlap;
  /** Path of the sweep spec (YAML), relative to the server root. */
  spec: string;
}

/** The browser's IANA time zone (UTC if it has none). */
export function browserTimeZone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  } catch {
    return 'UTC';
  }
}

/** IANA zone names the browser knows (for suggestions; empty if it cannot list them). */
export function knownTimeZones(): string[] {
  const intl = Intl as unknown as { supportedValuesOf?: (key: string) => string[] };
  try {
    return intl.supportedValuesOf ? intl.supportedValuesOf('timeZone') : [];
  } catch {
    return [];
  }
}

export function defaultWhen(mode: RunMode = 'now', spec = ''): IWhenValues {
  return {
    mode,
    preset: 'daily',
    seconds: '60',
    minutes: '15',
    minute: '0',
    time: '09:00',
    weekday: '1',
    cron: '0 9 * * 1-5',
    timezone: browserTimeZone(),
    overlap: 'skip',
    spec
  };
}

const CRON_FIELDS: ReadonlyArray<[string, number, number]> = [
  ['minute', 0, 59],
  ['hour', 0, 23],
  ['day of month', 1, 31],
  ['month', 1, 12],
  ['day of week', 0, 7]
];

const NAMES: { [field: number]: string[] } = {
  3: ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'],
  4: ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat']
};

function cronValue(text: string, index: number): number | null {
  if (/^\d+$/.test(text)) {
    return parseInt(text, 10);
  }
  const names = NAMES[index];
  const at = names ? names.indexOf(text.toLowerCase()) : -1;
  return at < 0 ? null : index === 3 ? at + 1 : at;
}

/** Why one field of a cron expression is invalid (null if it is valid). */
function cronFieldError(text: string, index: number): string | null {
  const [label, min, max] = CRON_FIELDS[index];
  const bad = `the ${label} field "${text}" is not valid`;
  for (const part of text.split(',')) {
    const [range, step, extra] = part.split('/');
    if (extra !== undefined || range === '') {
      return `${bad} (expected e.g. *, 5, 1-5, */15 or 1,3).`;
    }
    if (step !== undefined && (!/^\d+$/.test(step) || parseInt(step, 10) < 1)) {
      return `${bad}: the step after "/" must be a whole number ≥ 1.`;
    }
    if (range === '*') {
      continue;
    }
    const ends = range.split('-');
    if (ends.length > 2) {
      return `${bad} (expected e.g. *, 5, 1-5, */15 or 1,3).`;
    }
    for (const end of ends) {
      const value = cronValue(end, index);
      if (value === null) {
        return `${bad}: "${end}" is not a number.`;
      }
      if (value < min || value > max) {
        return `${bad}: the ${label} must be ${min}–${max}, not ${value}.`;
      }
    }
  }
  return null;
}

/** Why `text` is not a cron expression the server takes (null if it is). */
export function cronError(text: string): string | null {
  const trimmed = text.trim();
  if (trimmed === '') {
    return 'Enter a cron expression (5 fields: minute hour day-of-month month day-of-week), e.g. 0 9 * * 1-5.';
  }
  if (trimmed.startsWith('@')) {
    return CRON_SHORTCUTS.includes(trimmed.toLowerCase())
      ? null
      : `Unknown cron shortcut "${trimmed}": use ${CRON_SHORTCUTS.join(', ')} or 5 fields.`;
  }
  const fields = trimmed.split(/\s+/);
  if (fields.length !== 5) {
    return `A cron expression has 5 fields (minute hour day-of-month month day-of-week); "${trimmed}" has ${fields.length}.`;
  }
  for (let i = 0; i < 5; i++) {
    const problem = cronFieldError(fields[i], i);
    if (problem) {
      return problem.charAt(0).toUpperCase() + problem.slice(1);
    }
  }
  return null;
}

/** Why `zone` is not an IANA time zone (null if it is). */
export function timezoneError(zone: string): string | null {
  const trimmed = zone.trim();
  if (trimmed === '') {
    return 'Enter a time zone, e.g. UTC or Europe/Paris.';
  }
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: trimmed });
    return null;
  } catch {
    return `"${trimmed}" is not a time zone (use an IANA name such as UTC or Europe/Paris).`;
  }
}

function parseTimeOfDay(text: string): [number, number] | null {
  const match = /^(\d{1,2}):(\d{2})$/.exec(text.trim());
  if (!match) {
    return null;
  }
  const hour = parseInt(match[1], 10);
  const minute = parseInt(match[2], 10);
  return hour <= 23 && minute <= 59 ? [hour, minute] : null;
}

/** Every invalid field of the "when" part, with why (keys: `when:NAME`). */
export function validateWhen(values: IWhenValues): FieldErrors {
  const errors: FieldErrors = {};
  if (values.mode === 'sweep') {
    const spec = values.spec.trim();
    if (spec === '') {
      errors['when:spec'] = 'Enter the path of a sweep spec (a .yaml file).';
    } else if (!/\.ya?ml$/i.test(spec)) {
      errors['when:spec'] = `The sweep spec must be a .yaml or .yml file; "${spec}" is not.`;
    }
    return errors;
  }
  if (values.mode !== 'schedule') {
    return errors;
  }
  const put = (key: string, problem: string | null) => {
    if (problem) {
      errors[`when:${key}`] = problem;
    }
  };
  switch (values.preset) {
    case 'seconds':
      put('seconds', wholeNumberError(values.seconds, 'Every (seconds)', 1));
      break;
    case 'minutes':
      put('minutes', wholeNumberError(values.minutes, 'Every (minutes)', 1, 59));
      break;
    case 'hourly':
      put('minute', wholeNumberError(values.minute, 'Minute past the hour', 0, 59));
      break;
    case 'weekly':
    case 'daily':
      if (!parseTimeOfDay(values.time)) {
        put('time', `Time must be HH:MM (00:00–23:59); "${values.time.trim()}" is not.`);
      }
      break;
    case 'cron':
      put('cron', cronError(values.cron));
      break;
  }
  put('timezone', timezoneError(values.timezone));
  return errors;
}

/** The schedule timing of valid values (call validateWhen first). */
export function whenToTiming(values: IWhenValues): IScheduleTiming {
  const timing: IScheduleTiming = {
    timezone: values.timezone.trim(),
    overlap: values.overlap
  };
  const [hour, minute] = parseTimeOfDay(values.time) ?? [0, 0];
  switch (values.preset) {
    case 'seconds':
      timing.every = parseInt(values.seconds.trim(), 10);
      break;
    case 'minutes':
      timing.cron = `*/${parseInt(values.minutes.trim(), 10)} * * * *`;
      break;
    case 'hourly':
      timing.cron = `${parseInt(values.minute.trim(), 10)} * * * *`;
      break;
    case 'daily':
      timing.cron = `${minute} ${hour} * * *`;
      break;
    case 'weekly':
      timing.cron = `${minute} ${hour} * * ${values.weekday}`;
      break;
    case 'cron':
      timing.cron = values.cron.trim().replace(/\s+/g, ' ');
      break;
  }
  return timing;
}

const pad = (n: number) => String(n).padStart(2, '0');

/** A schedule record back into the form (presets recognized from its cron). */
export function whenFromSchedule(schedule: ISchedule): IWhenValues {
  const values: IWhenValues = {
    ...defaultWhen('schedule'),
    timezone: schedule.timezone || 'UTC',
    overlap: schedule.overlap === 'queue' ? 'queue' : 'skip'
  };
  if (schedule.every) {
    return { ...values, preset: 'seconds', seconds: String(schedule.every) };
  }
  const cron = (schedule.cron ?? '').trim();
  let m = /^\*\/(\d+) \* \* \* \*$/.exec(cron);
  if (m) {
    return { ...values, preset: 'minutes', minutes: m[1] };
  }
  m = /^(\d+) \* \* \* \*$/.exec(cron);
  if (m) {
    return { ...values, preset: 'hourly', minute: m[1] };
  }
  m = /^(\d+) (\d+) \* \* (\*|[0-6])$/.exec(cron);
  if (m && parseInt(m[1], 10) <= 59 && parseInt(m[2], 10) <= 23) {
    const time = `${pad(parseInt(m[2], 10))}:${pad(parseInt(m[1], 10))}`;
    return m[3] === '*'
      ? { ...values, preset: 'daily', time }
      : { ...values, preset: 'weekly', time, weekday: m[3] };
  }
  return { ...values, preset: 'cron', cron };
}

/** "every 3 s", "daily at 09:00", "weekly on Monday at 09:00", or the cron expression. */
export function describeTiming(timing: { cron?: string | null; every?: number | null }): string {
  if (timing.every) {
    const s = timing.every;
    if (s % 3600 === 0) {
      return `every ${s / 3600} h`;
    }
    return s % 60 === 0 ? `every ${s / 60} min` : `every ${s} s`;
  }
  const cron = (timing.cron ?? '').trim();
  if (!cron) {
    return '–';
  }
  const when = whenFromSchedule({ cron, every: null } as ISchedule);
  switch (when.preset) {
    case 'minutes':
      return `every ${when.minutes} min`;
    case 'hourly':
      return `hourly at :${pad(parseInt(when.minute, 10))}`;
    case 'daily':
      return `daily at ${when.time}`;
    case 'weekly':
      return `weekly on ${WEEKDAYS[parseInt(when.weekday, 10)]} at ${when.time}`;
    default:
      return cron;
  }
}
