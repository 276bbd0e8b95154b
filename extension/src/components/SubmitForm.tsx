/**
 * The submit dialog's body as a Lumino widget: holds the values and the status, and
 * builds the body of what it submits (a job, a schedule or a sweep).
 */
import { ReactWidget, UseSignal } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { ISignal, Signal } from '@lumino/signaling';
import * as React from 'react';

import {
  defaultWhen,
  IWhenValues,
  RunMode,
  validateWhen,
  whenToTiming
} from '../schedule';
import {
  INotebookParameter,
  IScheduleRequest,
  ISubmitRequest,
  JSONValue
} from '../types';
import {
  FieldErrors,
  IFormValues,
  IGpuBounds,
  initialValues,
  toRequest,
  validate
} from '../validation';
import { IFormStatus, SubmitFormView } from './SubmitFormView';

/** A validation error that names the field it is about. */
export class FieldError extends Error {
  constructor(
    message: string,
    readonly field: string
  ) {
    super(message);
  }
}

/** What the dialog sends: a job, a schedule (POST /schedules) or a sweep (spec path). */
export type Submission =
  | { mode: 'now'; request: ISubmitRequest }
  | { mode: 'schedule'; request: IScheduleRequest }
  | { mode: 'sweep'; request: ISubmitRequest; spec: string };

let idCounter = 0;

export class SubmitForm extends ReactWidget {
  constructor(options: SubmitForm.IOptions) {
    super();
    this.addClass('nbrunner-SubmitForm');
    this.node.dataset.testid = 'nbrunner-submit-form';
    this.notebook = options.notebook;
    this._note = options.note ?? null;
    this._uid = `nbrunner-submit-${++idCounter}`;
    const gpus = options.gpus ?? null;
    this._gpuSource = gpus?.source ?? null;
    this._modes = options.modes ?? ['now', 'schedule', 'sweep'];
    this._when = options.when ?? defaultWhen(this._modes[0]);
    this._values = initialValues(options.parameters, options.defaultName, gpus, {
      values: options.values,
      options: options.options
    });
    this._errors = validate(this._values);
    this._whenErrors = validateWhen(this._when);
  }

  /** Path of the notebook to submit. */
  readonly notebook: string;

  /** Emitted when the user picks another mode (Run now / on a schedule / sweep). */
  get modeChanged(): ISignal<this, RunMode> {
    return this._modeChanged;
  }

  /** The chosen mode. */
  get mode(): RunMode {
    return this._when.mode;
  }

  get statusChanged(): ISignal<this, void> {
    return this._statusChanged;
  }

  get status(): IFormStatus {
    return this._status;
  }

  /** Show the server's message (null clears it). */
  setError(error: string | null): void {
    this._status = { ...this._status, error };
    this._statusChanged.emit();
  }

  setBusy(busy: boolean): void {
    this._status = { ...this._status, busy };
    this._statusChanged.emit();
  }

  /** Current values of the inputs. */
  get values(): IFormValues {
    return this._values;
  }

  /** Invalid fields now, with why (the job's, then the mode's). */
  get errors(): FieldErrors {
    return { ...this._whenErrors, ...this._errors };
  }

  /**
   * What to send for the chosen mode; throws FieldError (the first invalid field) if any
   * field that mode uses is invalid.
   */
  getSubmission(): Submission {
    const when = this._when;
    const whenErrors = validateWhen(when);
    const first = Object.keys(whenErrors)[0];
    if (first !== undefined) {
      throw new FieldError(whenErrors[first], first);
    }
    if (when.mode === 'sweep') {
      // The spec sets the parameters: only the job options count here.
      const request = toRequest(this.notebook, { ...this._values, params: [] });
      this._checkJobFields(['param:']);
      delete request.parameters;
      return { mode: 'sweep', request, spec: when.spec.trim() };
    }
    const request = this.getRequest();
    if (when.mode === 'schedule') {
      delete request.kernel;
      return { mode: 'schedule', request: { ...request, ...whenToTiming(when) } };
    }
    return { mode: 'now', request };
  }

  /** The POST /jobs body; throws FieldError (the first invalid field) if any is invalid. */
  getRequest(): ISubmitRequest {
    this._checkJobFields([]);
    return toRequest(this.notebook, this._values);
  }

  private _checkJobFields(ignored: string[]): void {
    const errors = validate(this._values);
    const first = Object.keys(errors).find(
      key => !ignored.some(prefix => key.startsWith(prefix))
    );
    if (first !== undefined) {
      throw new FieldError(errors[first], first);
    }
  }

  /** Names of the float parameters (sent as floats even when whole). */
  get floatParameters(): string[] {
    return this._values.params
      .filter(p => p.type === 'float' && !p.mirrors)
      .map(p => p.name);
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    // Focus the first editable input, its text selected so typing replaces the
    // default, once React has rendered it and the dialog has moved the focus here.
    const focusFirst = () =>
      requestAnimationFrame(() => {
        const first = this.node.querySelector<HTMLElement>(
          'input:not([readonly]), textarea'
        );
        const active = document.activeElement;
        if (active && active !== first && this.node.contains(active)) {
          return; // the user has already moved to another field: leave it there
        }
        first?.focus();
        if (first instanceof HTMLInputElement && first.type !== 'checkbox') {
          first.select();
        }
      });
    void (this.renderPromise ?? Promise.resolve()).then(focusFirst, focusFirst);
  }

  protected render(): React.ReactElement {
    return (
      <UseSignal signal={this._statusChanged}>
        {() => (
          <SubmitFormView
            uid={this._uid}
            notebook={this.notebook}
            note={this._note}
            gpuSource={this._gpuSource}
            initial={this._values}
            status={this._status}
            onChange={(values, errors) => {
              this._values = values;
              this._errors = errors;
              if (this._status.error) {
                this.setError(null); // an edit answers the server's refusal
              }
            }}
            modes={this._modes}
            initialWhen={this._when}
            onWhenChange={(when, errors) => {
              const modeChanged = when.mode !== this._when.mode;
              this._when = when;
              this._whenErrors = errors;
              if (this._status.error) {
                this.setError(null);
              }
              if (modeChanged) {
                this._modeChanged.emit(when.mode);
              }
            }}
          />
        )}
      </UseSignal>
    );
  }

  private _values: IFormValues;
  private _errors: FieldErrors;
  private _modes: ReadonlyArray<RunMode>;
  private _when: IWhenValues;
  private _whenErrors: FieldErrors;
  private _modeChanged = new Signal<this, RunMode>(this);
  private _note: string | null;
  private _gpuSource: string | null;
  private _uid: string;
  private _status: IFormStatus = { error: null, busy: false };
  private _statusChanged = new Signal<this, void>(this);
}

export namespace SubmitForm {
  export interface IOptions {
    notebook: string;
    parameters: INotebookParameter[];
    defaultName: string;
    /** A note shown above the parameters (e.g. where they were read from). */
    note?: string | null;
    /** GPU bounds the notebook states for itself. */
    gpus?: IGpuBounds | null;
    /** Modes offered, the first one chosen unless `when` says otherwise (default all). */
    modes?: ReadonlyArray<RunMode>;
    /** Initial "when" values (e.g. of a schedule being edited). */
    when?: IWhenValues;
    /** Job option inputs that replace the defaults (e.g. a schedule's). */
    options?: Partial<Omit<IFormValues, 'params'>>;
    /** Parameter values that replace the notebook's defaults (e.g. a schedule's). */
    values?: { [name: string]: JSONValue };
  }
}
