/**
 * The submit dialog's body as a Lumino widget: holds the values and the status, and
 * builds the POST /jobs body.
 */
import { ReactWidget, UseSignal } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { ISignal, Signal } from '@lumino/signaling';
import * as React from 'react';

import { DEFAULT_PRIORITY } from '../constants';
import { inferType, valueToInput } from '../params';
import { IJob, INotebookParameter, ISubmitRequest } from '../types';
import {
  FieldErrors,
  IFormValues,
  IGpuBounds,
  IParamField,
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
    const params: IParamField[] = options.parameters.map(p => {
      const type = String(p.type || inferType(p.value ?? null));
      const field: IParamField = {
        name: p.name,
        type,
        input: valueToInput(type, p.value ?? null),
        help: p.help ?? undefined
      };
      if (gpus?.minParam === p.name) {
        field.mirrors = 'minGpus';
      } else if (gpus?.maxParam === p.name) {
        field.mirrors = 'maxGpus';
      }
      return field;
    });
    let min = gpus?.min ?? 0;
    let max = gpus?.max ?? null;
    if (max === null) {
      max = min;
    } else if (gpus?.min === null || gpus?.min === undefined) {
      min = Math.min(min, max);
    }
    this._values = {
      params,
      name: options.defaultName,
      minGpus: String(min),
      maxGpus: String(max),
      priority: String(DEFAULT_PRIORITY),
      timeout: '',
      kernel: ''
    };
    this._errors = validate(this._values);
  }

  /** Path of the notebook to submit. */
  readonly notebook: string;

  /** The job the server created, once submitted. */
  job: IJob | null = null;

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

  /** Invalid fields now, with why. */
  get errors(): FieldErrors {
    return this._errors;
  }

  /** The POST /jobs body; throws FieldError (the first invalid field) if any is invalid. */
  getRequest(): ISubmitRequest {
    const errors = validate(this._values);
    const first = Object.keys(errors)[0];
    if (first !== undefined) {
      throw new FieldError(errors[first], first);
    }
    return toRequest(this.notebook, this._values);
  }

  /** Names of the float parameters (sent as floats even when whole). */
  get floatParameters(): string[] {
    return this._values.params
      .filter(p => p.type === 'float' && !p.mirrors)
      .map(p => p.name);
  }

  /** The dialog's value: the created job (null until submitted). */
  getValue(): IJob | null {
    return this.job;
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
          />
        )}
      </UseSignal>
    );
  }

  private _values: IFormValues;
  private _errors: FieldErrors;
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
  }
}
