/**
 * The body of the submit dialog: the notebook's parameters as typed inputs, then the job
 * options.  Each field is validated on every change; its message shows next to it.
 */
import * as React from 'react';

import { MAX_PRIORITY, MIN_PRIORITY } from '../constants';
import { IWhenValues, RunMode, validateWhen } from '../schedule';
import { FieldErrors, IFormValues, validate } from '../validation';
import { FormField, invalidProps } from './FormField';
import { ParameterInput, typeHint } from './ParameterInput';
import { ModeSwitch, WhenFields } from './WhenFields';

export interface IFormStatus {
  /** The server's answer to a refused submission (not a field's error). */
  error: string | null;
  busy: boolean;
}

export interface ISubmitFormViewProps {
  uid: string;
  notebook: string;
  note: string | null;
  /** Where the GPU fields' defaults were read from, if from the notebook. */
  gpuSource: string | null;
  initial: IFormValues;
  status: IFormStatus;
  onChange: (values: IFormValues, errors: FieldErrors) => void;
  /** Modes the dialog offers (Run now, on a schedule, sweep); one hides the switch. */
  modes: ReadonlyArray<RunMode>;
  initialWhen: IWhenValues;
  onWhenChange: (when: IWhenValues, errors: FieldErrors) => void;
}

type JobFieldKey = 'name' | 'minGpus' | 'maxGpus' | 'priority' | 'timeout' | 'kernel';

export function SubmitFormView(props: ISubmitFormViewProps): React.ReactElement {
  const { uid, status } = props;
  const [values, setValues] = React.useState<IFormValues>(props.initial);
  const errors = React.useMemo(() => validate(values), [values]);
  const update = (patch: Partial<IFormValues>) => {
    const next = { ...values, ...patch };
    setValues(next);
    props.onChange(next, validate(next));
  };
  const updateParam = (index: number, input: string | boolean) => {
    const params = values.params.slice();
    params[index] = { ...params[index], input };
    update({ params });
  };
  const [when, setWhen] = React.useState<IWhenValues>(props.initialWhen);
  const whenErrors = React.useMemo(() => validateWhen(when), [when]);
  const updateWhen = (patch: Partial<IWhenValues>) => {
    const next = { ...when, ...patch };
    setWhen(next);
    props.onWhenChange(next, validateWhen(next));
  };
  const error = (field: string) => errors[field] ?? null;

  const jobField = (
    key: JobFieldKey,
    label: string,
    testid: string,
    hint: React.ReactNode,
    extra: { [attr: string]: unknown } = {}
  ) => {
    const id = `${uid}-${key}`;
    return (
      <FormField id={id} label={label} field={key} hint={hint} error={error(key)}>
        <input
          id={id}
          type="text"
          className="jp-mod-styled"
          data-testid={testid}
          value={values[key]}
          onChange={e => update({ [key]: e.target.value } as Partial<IFormValues>)}
          {...invalidProps(id, error(key))}
          {...extra}
        />
      </FormField>
    );
  };

  const gpuHint = (text: string) =>
    props.gpuSource ? `${text}; from ${props.gpuSource}` : text;

  return (
    <form
      className="nbrunner-SubmitForm-form"
      aria-label="Job options"
      onSubmit={event => event.preventDefault()}
    >
      <div className="nbrunner-SubmitForm-notebook">
        Notebook: <code data-testid="nbrunner-submit-notebook">{props.notebook}</code>
      </div>
      <ModeSwitch
        modes={props.modes}
        mode={when.mode}
        onChange={mode => updateWhen({ mode })}
      />
      <fieldset className="nbrunner-SubmitForm-when" disabled={status.busy}>
        <WhenFields uid={uid} values={when} errors={whenErrors} onChange={updateWhen} />
      </fieldset>
      <fieldset
        className="nbrunner-SubmitForm-section"
        data-testid="nbrunner-params"
        disabled={status.busy}
        hidden={when.mode === 'sweep'}
      >
        <legend>Parameters</legend>
        {props.note && (
          <p className="nbrunner-SubmitForm-note" data-testid="nbrunner-params-note">
            {props.note}
          </p>
        )}
        {values.params.length === 0 ? (
          <p className="nbrunner-SubmitForm-note" data-testid="nbrunner-params-empty">
            No <code>parameters</code> cell found: the notebook runs with its own
            values.
          </p>
        ) : (
          <div className="nbrunner-SubmitForm-grid">
            {values.params.map((p, index) => {
              const id = `${uid}-param-${index}`;
              const field = `param:${p.name}`;
              const mirrored = p.mirrors ? values[p.mirrors] || '0' : null;
              return (
                <FormField
                  key={p.name}
                  id={id}
                  label={p.name}
                  code
                  field={field}
                  testid="nbrunner-param-row"
                  hint={
                    p.mirrors
                      ? `= ${p.mirrors === 'minGpus' ? 'Min' : 'Max'} GPUs below`
                      : `${typeHint(p.type)}${p.help ? ` — ${p.help}` : ''}`
                  }
                  hintTitle={p.help}
                  error={error(field)}
                >
                  <ParameterInput
                    id={id}
                    param={p}
                    mirrored={mirrored}
                    invalid={invalidProps(id, error(field))}
                    onChange={input => updateParam(index, input)}
                  />
                </FormField>
              );
            })}
          </div>
        )}
      </fieldset>

      <fieldset className="nbrunner-SubmitForm-section" disabled={status.busy}>
        <legend>Job</legend>
        <div className="nbrunner-SubmitForm-grid">
          {jobField('name', 'Name', 'nbrunner-job-name', 'display name')}
          {jobField('minGpus', 'Min GPUs', 'nbrunner-min-gpus', gpuHint('needed to start'), {
            inputMode: 'numeric'
          })}
          {jobField('maxGpus', 'Max GPUs', 'nbrunner-max-gpus', gpuHint('0 = no GPU'), {
            inputMode: 'numeric'
          })}
          {jobField(
            'priority',
            'Priority',
            'nbrunner-priority',
            `${MIN_PRIORITY}–${MAX_PRIORITY}`,
            { inputMode: 'numeric' }
          )}
          {jobField('timeout', 'Timeout (s)', 'nbrunner-timeout', 'optional', {
            inputMode: 'decimal',
            placeholder: 'none'
          })}
          {when.mode !== 'schedule' &&
            jobField('kernel', 'Kernel', 'nbrunner-kernel', 'optional', {
              placeholder: "the notebook's kernel"
            })}
        </div>
      </fieldset>

      <div
        className="nbrunner-SubmitForm-error"
        data-testid="nbrunner-submit-error"
        role="alert"
        aria-live="assertive"
        hidden={!status.error}
      >
        {status.error}
      </div>
      {status.busy && (
        <div className="nbrunner-SubmitForm-busy" data-testid="nbrunner-submit-busy">
          {when.mode === 'schedule'
            ? 'Saving the schedule…'
            : when.mode === 'sweep'
              ? 'Starting the sweep…'
              : 'Submitting…'}
        </div>
      )}
    </form>
  );
}
