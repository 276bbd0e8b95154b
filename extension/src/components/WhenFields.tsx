/**
 * The "When" part of the Run-as-job dialog: Run now / Run on a schedule / Sweep, and the
 * fields of the chosen mode (preset, cron, every N seconds, time zone, overlap; or the
 * sweep spec's path).  Each field's message shows next to it.
 */
import * as React from 'react';

import {
  IWhenValues,
  knownTimeZones,
  PRESETS,
  Preset,
  RunMode,
  WEEKDAYS
} from '../schedule';
import { FieldErrors } from '../validation';
import { FormField, invalidProps } from './FormField';

const MODE_LABELS: { [mode in RunMode]: string } = {
  now: 'Run now',
  schedule: 'Run on a schedule',
  sweep: 'Sweep'
};

export function ModeSwitch(props: {
  modes: ReadonlyArray<RunMode>;
  mode: RunMode;
  onChange: (mode: RunMode) => void;
}): React.ReactElement | null {
  if (props.modes.length < 2) {
    return null;
  }
  return (
    <div
      className="nbrunner-ModeSwitch"
      role="radiogroup"
      aria-label="When to run"
      data-testid="nbrunner-mode"
    >
      {props.modes.map(mode => (
        <button
          key={mode}
          type="button"
          role="radio"
          aria-checked={props.mode === mode}
          className={
            'nbrunner-ModeSwitch-option' +
            (props.mode === mode ? ' nbrunner-mod-selected' : '')
          }
          data-testid={`nbrunner-mode-${mode}`}
          onClick={() => props.onChange(mode)}
        >
          {MODE_LABELS[mode]}
        </button>
      ))}
    </div>
  );
}

export function WhenFields(props: {
  uid: string;
  values: IWhenValues;
  errors: FieldErrors;
  onChange: (patch: Partial<IWhenValues>) => void;
}): React.ReactElement | null {
  const { uid, values, errors, onChange } = props;
  const zones = React.useMemo(() => knownTimeZones(), []);
  const error = (key: string) => errors[`when:${key}`] ?? null;
  const text = (
    key: 'seconds' | 'minutes' | 'minute' | 'time' | 'cron' | 'timezone' | 'spec',
    label: string,
    hint: React.ReactNode,
    extra: { [attr: string]: unknown } = {}
  ) => {
    const id = `${uid}-when-${key}`;
    return (
      <FormField id={id} label={label} field={`when:${key}`} hint={hint} error={error(key)}>
        <input
          id={id}
          type="text"
          className="jp-mod-styled"
          data-testid={`nbrunner-when-${key}`}
          value={values[key]}
          onChange={e => onChange({ [key]: e.target.value })}
          {...invalidProps(id, error(key))}
          {...extra}
        />
      </FormField>
    );
  };

  if (values.mode === 'sweep') {
    return (
      <fieldset className="nbrunner-SubmitForm-section" data-testid="nbrunner-sweep-fields">
        <legend>Sweep</legend>
        <p className="nbrunner-SubmitForm-note">
          One job per trial, with the parameters the spec gives it; the trials show in the
          Jobs panel with the sweep's leaderboard.
        </p>
        <div className="nbrunner-SubmitForm-grid">
          {text('spec', 'Spec', 'a .yaml file', {
            placeholder: 'sweep.yaml'
          })}
        </div>
      </fieldset>
    );
  }
  if (values.mode !== 'schedule') {
    return null;
  }
  const presetId = `${uid}-when-preset`;
  const weekdayId = `${uid}-when-weekday`;
  const overlapId = `${uid}-when-overlap`;
  const preset = values.preset;
  return (
    <fieldset className="nbrunner-SubmitForm-section" data-testid="nbrunner-schedule-fields">
      <legend>Schedule</legend>
      <div className="nbrunner-SubmitForm-grid">
        <FormField id={presetId} label="Repeat" field="when:preset" hint="" error={null}>
          <select
            id={presetId}
            className="nbrunner-Select"
            data-testid="nbrunner-when-preset"
            value={preset}
            onChange={e => onChange({ preset: e.target.value as Preset })}
          >
            {PRESETS.map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </FormField>
        {preset === 'seconds' &&
          text('seconds', 'Every (s)', 'seconds, ≥ 1', { inputMode: 'numeric' })}
        {preset === 'minutes' &&
          text('minutes', 'Every (min)', 'minutes, 1–59', {
            inputMode: 'numeric'
          })}
        {preset === 'hourly' &&
          text('minute', 'At minute', 'past the hour, 0–59', { inputMode: 'numeric' })}
        {preset === 'weekly' && (
          <FormField id={weekdayId} label="On" field="when:weekday" hint="" error={null}>
            <select
              id={weekdayId}
              className="nbrunner-Select"
              data-testid="nbrunner-when-weekday"
              value={values.weekday}
              onChange={e => onChange({ weekday: e.target.value })}
            >
              {WEEKDAYS.map((day, index) => (
                <option key={day} value={String(index)}>
                  {day}
                </option>
              ))}
            </select>
          </FormField>
        )}
        {(preset === 'daily' || preset === 'weekly') &&
          text('time', 'At', 'HH:MM (24 h)', { placeholder: '09:00' })}
        {preset === 'cron' &&
          text('cron', 'Cron', 'min hour day month wday', {
            placeholder: '0 9 * * 1-5',
            spellCheck: false
          })}
        {text('timezone', 'Time zone', 'IANA name', {
          list: zones.length ? `${uid}-zones` : undefined,
          spellCheck: false
        })}
        {zones.length > 0 && (
          <datalist id={`${uid}-zones`}>
            {zones.map(zone => (
              <option key={zone} value={zone} />
            ))}
          </datalist>
        )}
        <FormField
          id={overlapId}
          label="If still running"
          field="when:overlap"
          hint="previous run not over"
          error={null}
        >
          <select
            id={overlapId}
            className="nbrunner-Select"
            data-testid="nbrunner-when-overlap"
            value={values.overlap}
            onChange={e => onChange({ overlap: e.target.value as IWhenValues['overlap'] })}
          >
            <option value="skip">skip this run</option>
            <option value="queue">queue another run</option>
          </select>
        </FormField>
      </div>
    </fieldset>
  );
}
