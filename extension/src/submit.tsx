/**
 * "Run as job": the submit dialog, pre-filled from the notebook's parameters cell.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { Dialog } from '@jupyterlab/apputils';
import { PathExt } from '@jupyterlab/coreutils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { ReactWidget, UseSignal } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { ISignal, Signal } from '@lumino/signaling';
import * as React from 'react';

import {
  ApiError,
  errorMessage,
  getNotebookParameters,
  submitJob
} from './api';
import {
  inferType,
  inputToValue,
  parametersFromNotebook,
  valueToInput
} from './params';
import {
  IJob,
  INotebookParameter,
  ISubmitRequest,
  JSONValue
} from './types';

/** Default priority of a job (DESIGN section 3). */
export const DEFAULT_PRIORITY = 5000;
export const MIN_PRIORITY = 1;
export const MAX_PRIORITY = 10000;

interface IParamField {
  name: string;
  type: string;
  input: string | boolean;
  help?: string;
}

interface IFormValues {
  params: IParamField[];
  name: string;
  minGpus: string;
  maxGpus: string;
  priority: string;
  timeout: string;
  kernel: string;
}

interface IFormStatus {
  error: string | null;
  /** Key of the invalid field (a parameter name or a job field), if known. */
  field: string | null;
  busy: boolean;
}

/** A validation error that names the field it is about. */
class FieldError extends Error {
  constructor(
    message: string,
    readonly field: string
  ) {
    super(message);
  }
}

let idCounter = 0;

/**
 * The dialog body: typed inputs for the parameters plus the job options.
 */
export class SubmitForm extends ReactWidget {
  constructor(options: SubmitForm.IOptions) {
    super();
    this.addClass('nbrunner-SubmitForm');
    this.node.dataset.testid = 'nbrunner-submit-form';
    this.notebook = options.notebook;
    this._note = options.note ?? null;
    this._uid = `nbrunner-submit-${++idCounter}`;
    this._values = {
      params: options.parameters.map(p => {
        const type = String(p.type || inferType(p.value ?? null));
        return {
          name: p.name,
          type,
          input: valueToInput(type, p.value ?? null),
          help: p.help ?? undefined
        };
      }),
      name: options.defaultName,
      minGpus: '0',
      maxGpus: '0',
      priority: String(DEFAULT_PRIORITY),
      timeout: '',
      kernel: ''
    };
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

  setError(error: string | null, field: string | null = null): void {
    this._status = { ...this._status, error, field };
    this._statusChanged.emit();
  }

  setBusy(busy: boolean): void {
    this._status = { ...this._status, busy };
    this._statusChanged.emit();
  }

  /** Current values of the inputs (for tests and callers). */
  get values(): IFormValues {
    return this._values;
  }

  /**
   * Build the POST /jobs body from the inputs; throws FieldError when an
   * input is invalid.
   */
  getRequest(): ISubmitRequest {
    const v = this._values;
    const parameters: { [key: string]: JSONValue } = {};
    for (const p of v.params) {
      try {
        parameters[p.name] = inputToValue(p.name, p.type, p.input);
      } catch (error) {
        throw new FieldError((error as Error).message, `param:${p.name}`);
      }
    }
    const request: ISubmitRequest = { notebook: this.notebook, parameters };
    const name = v.name.trim();
    if (name) {
      request.name = name;
    }
    const minGpus = parseWhole(v.minGpus, 'Min GPUs', 'minGpus', 0);
    const maxGpus = parseWhole(v.maxGpus, 'Max GPUs', 'maxGpus', 0);
    if (minGpus > maxGpus) {
      throw new FieldError(
        `Min GPUs (${minGpus}) cannot be more than max GPUs (${maxGpus}).`,
        'minGpus'
      );
    }
    request.min_gpus = minGpus;
    request.max_gpus = maxGpus;
    const priority = parseWhole(v.priority, 'Priority', 'priority', DEFAULT_PRIORITY);
    if (priority < MIN_PRIORITY || priority > MAX_PRIORITY) {
      throw new FieldError(
        `Priority must be between ${MIN_PRIORITY} and ${MAX_PRIORITY}.`,
        'priority'
      );
    }
    request.priority = priority;
    if (v.timeout.trim() !== '') {
      const timeout = Number(v.timeout);
      if (!Number.isFinite(timeout) || timeout <= 0) {
        throw new FieldError(
          'Timeout must be a positive number of seconds (or empty for none).',
          'timeout'
        );
      }
      request.timeout = timeout;
    }
    const kernel = v.kernel.trim();
    if (kernel) {
      request.kernel = kernel;
    }
    return request;
  }

  /** Names of the float parameters (sent as floats even when whole). */
  get floatParameters(): string[] {
    return this._values.params.filter(p => p.type === 'float').map(p => p.name);
  }

  /** The dialog's value: the created job (null until submitted). */
  getValue(): IJob | null {
    return this.job;
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    // Focus the first input, its text selected so typing replaces the default,
    // once React has rendered it (a frame alone can come before the render)
    // and after the dialog has moved the focus into its body.
    const focusFirst = () =>
      requestAnimationFrame(() => {
        const first = this.node.querySelector<HTMLElement>('input, textarea');
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
            initial={this._values}
            status={this._status}
            onChange={values => {
              this._values = values;
            }}
          />
        )}
      </UseSignal>
    );
  }

  private _values: IFormValues;
  private _note: string | null;
  private _uid: string;
  private _status: IFormStatus = { error: null, field: null, busy: false };
  private _statusChanged = new Signal<this, void>(this);
}

export namespace SubmitForm {
  export interface IOptions {
    notebook: string;
    parameters: INotebookParameter[];
    defaultName: string;
    /** A note shown above the parameters (e.g. where they were read from). */
    note?: string | null;
  }
}

function parseWhole(
  text: string,
  label: string,
  field: string,
  fallback: number
): number {
  const trimmed = text.trim();
  if (trimmed === '') {
    return fallback;
  }
  if (!/^\+?\d+$/.test(trimmed)) {
    throw new FieldError(`${label} must be a whole number ≥ 0.`, field);
  }
  return parseInt(trimmed, 10);
}

function typeHint(type: string): string {
  switch (type) {
    case 'int':
      return 'integer';
    case 'float':
      return 'number';
    case 'bool':
      return 'boolean';
    case 'str':
      return 'text';
    case 'list':
      return 'JSON list';
    case 'dict':
      return 'JSON object';
    default:
      return 'any; empty = None';
  }
}

interface IFormViewProps {
  uid: string;
  notebook: string;
  note: string | null;
  initial: IFormValues;
  status: IFormStatus;
  onChange: (values: IFormValues) => void;
}

function SubmitFormView(props: IFormViewProps): React.ReactElement {
  const { uid, status } = props;
  const [values, setValues] = React.useState<IFormValues>(props.initial);
  const update = (patch: Partial<IFormValues>) => {
    const next = { ...values, ...patch };
    setValues(next);
    props.onChange(next);
  };
  const updateParam = (index: number, input: string | boolean) => {
    const params = values.params.slice();
    params[index] = { ...params[index], input };
    update({ params });
  };
  const invalid = (field: string) =>
    status.field === field ? { 'aria-invalid': true as const } : {};
  const errorId = `${uid}-error`;

  return (
    <form
      className="nbrunner-SubmitForm-form"
      aria-label="Job options"
      onSubmit={event => event.preventDefault()}
    >
      <div className="nbrunner-SubmitForm-notebook">
        Notebook: <code data-testid="nbrunner-submit-notebook">{props.notebook}</code>
      </div>
      <fieldset
        className="nbrunner-SubmitForm-section"
        data-testid="nbrunner-params"
        disabled={status.busy}
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
              const hintId = `${id}-hint`;
              const common = {
                id,
                name: p.name,
                className: 'nbrunner-param-input',
                'data-param': p.name,
                'data-param-type': p.type,
                'aria-describedby': hintId,
                ...invalid(`param:${p.name}`)
              };
              let input: React.ReactElement;
              if (p.type === 'bool') {
                input = (
                  <input
                    {...common}
                    type="checkbox"
                    checked={p.input === true}
                    onChange={e => updateParam(index, e.target.checked)}
                  />
                );
              } else if (p.type === 'int' || p.type === 'float') {
                input = (
                  <input
                    {...common}
                    type="number"
                    step={p.type === 'int' ? 1 : 'any'}
                    className="nbrunner-param-input jp-mod-styled"
                    value={String(p.input)}
                    onChange={e => updateParam(index, e.target.value)}
                  />
                );
              } else if (p.type === 'list' || p.type === 'dict') {
                input = (
                  <textarea
                    {...common}
                    className="nbrunner-param-input nbrunner-param-json jp-mod-styled"
                    spellCheck={false}
                    rows={Math.min(6, Math.max(1, Math.ceil(String(p.input).length / 48)))}
                    value={String(p.input)}
                    onChange={e => updateParam(index, e.target.value)}
                  />
                );
              } else {
                input = (
                  <input
                    {...common}
                    type="text"
                    className="nbrunner-param-input jp-mod-styled"
                    value={String(p.input)}
                    placeholder={p.type === 'none' ? 'None' : undefined}
                    onChange={e => updateParam(index, e.target.value)}
                  />
                );
              }
              return (
                <div
                  className="nbrunner-SubmitForm-row"
                  key={p.name}
                  data-testid="nbrunner-param-row"
                >
                  <label
                    htmlFor={id}
                    className="nbrunner-SubmitForm-label nbrunner-mod-code"
                  >
                    {p.name}
                  </label>
                  {input}
                  <span
                    id={hintId}
                    className="nbrunner-SubmitForm-hint"
                    title={p.help}
                  >
                    {typeHint(p.type)}
                    {p.help ? ` — ${p.help}` : ''}
                  </span>
                </div>
              );
            })}
          </div>
        )}
      </fieldset>

      <fieldset className="nbrunner-SubmitForm-section" disabled={status.busy}>
        <legend>Job</legend>
        <div className="nbrunner-SubmitForm-grid">
          <div className="nbrunner-SubmitForm-row">
            <label htmlFor={`${uid}-name`} className="nbrunner-SubmitForm-label">
              Name
            </label>
            <input
              id={`${uid}-name`}
              type="text"
              className="jp-mod-styled"
              data-testid="nbrunner-job-name"
              value={values.name}
              onChange={e => update({ name: e.target.value })}
            />
            <span className="nbrunner-SubmitForm-hint">display name</span>
          </div>
          <div className="nbrunner-SubmitForm-row">
            <label htmlFor={`${uid}-min`} className="nbrunner-SubmitForm-label">
              Min GPUs
            </label>
            <input
              id={`${uid}-min`}
              type="number"
              min={0}
              step={1}
              className="jp-mod-styled"
              data-testid="nbrunner-min-gpus"
              value={values.minGpus}
              onChange={e => update({ minGpus: e.target.value })}
              {...invalid('minGpus')}
            />
            <span className="nbrunner-SubmitForm-hint">needed to start</span>
          </div>
          <div className="nbrunner-SubmitForm-row">
            <label htmlFor={`${uid}-max`} className="nbrunner-SubmitForm-label">
              Max GPUs
            </label>
            <input
              id={`${uid}-max`}
              type="number"
              min={0}
              step={1}
              className="jp-mod-styled"
              data-testid="nbrunner-max-gpus"
              value={values.maxGpus}
              onChange={e => update({ maxGpus: e.target.value })}
              {...invalid('maxGpus')}
            />
            <span className="nbrunner-SubmitForm-hint">0 = no GPU</span>
          </div>
          <div className="nbrunner-SubmitForm-row">
            <label htmlFor={`${uid}-priority`} className="nbrunner-SubmitForm-label">
              Priority
            </label>
            <input
              id={`${uid}-priority`}
              type="number"
              min={MIN_PRIORITY}
              max={MAX_PRIORITY}
              step={1}
              className="jp-mod-styled"
              data-testid="nbrunner-priority"
              value={values.priority}
              onChange={e => update({ priority: e.target.value })}
              {...invalid('priority')}
            />
            <span className="nbrunner-SubmitForm-hint">
              {MIN_PRIORITY}–{MAX_PRIORITY}
            </span>
          </div>
          <div className="nbrunner-SubmitForm-row">
            <label htmlFor={`${uid}-timeout`} className="nbrunner-SubmitForm-label">
              Timeout (s)
            </label>
            <input
              id={`${uid}-timeout`}
              type="number"
              min={1}
              step="any"
              className="jp-mod-styled"
              data-testid="nbrunner-timeout"
              placeholder="none"
              value={values.timeout}
              onChange={e => update({ timeout: e.target.value })}
              {...invalid('timeout')}
            />
            <span className="nbrunner-SubmitForm-hint">optional</span>
          </div>
          <div className="nbrunner-SubmitForm-row">
            <label htmlFor={`${uid}-kernel`} className="nbrunner-SubmitForm-label">
              Kernel
            </label>
            <input
              id={`${uid}-kernel`}
              type="text"
              className="jp-mod-styled"
              data-testid="nbrunner-kernel"
              placeholder="the notebook's kernel"
              value={values.kernel}
              onChange={e => update({ kernel: e.target.value })}
            />
            <span className="nbrunner-SubmitForm-hint">optional</span>
          </div>
        </div>
      </fieldset>

      <div
        id={errorId}
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
          Submitting…
        </div>
      )}
    </form>
  );
}

const SUBMIT_INDEX = 1;

/**
 * A dialog that submits when its accept button is pressed and stays open,
 * showing the server's message, when the submission is refused.
 */
export class SubmitDialog extends Dialog<IJob | null> {
  constructor(
    form: SubmitForm,
    submit: (request: ISubmitRequest, floats: string[]) => Promise<IJob>
  ) {
    super({
      title: `Run as job: ${PathExt.basename(form.notebook)}`,
      body: form,
      buttons: [
        Dialog.cancelButton({
          label: 'Cancel',
          ariaLabel: 'Cancel, do not submit',
          className: 'nbrunner-SubmitDialog-cancel'
        }),
        Dialog.okButton({
          label: 'Submit',
          ariaLabel: 'Submit job',
          className: 'nbrunner-SubmitDialog-submit'
        })
      ],
      defaultButton: SUBMIT_INDEX,
      focusNodeSelector: 'input, textarea'
    });
    this._form = form;
    this._submit = submit;
    this.addClass('nbrunner-SubmitDialog');
    this.node.dataset.testid = 'nbrunner-submit-dialog';
    this.node.setAttribute('aria-label', 'Run notebook as job');
    this._submitNode()?.setAttribute('data-testid', 'nbrunner-submit');
    this.node
      .querySelector('.nbrunner-SubmitDialog-cancel')
      ?.setAttribute('data-testid', 'nbrunner-cancel-dialog');
  }

  resolve(index?: number): void {
    const target = index ?? SUBMIT_INDEX;
    if (target !== SUBMIT_INDEX) {
      if (!this._busy) {
        super.resolve(target);
      }
      return;
    }
    if (!this._busy) {
      void this._doSubmit();
    }
  }

  reject(): void {
    if (!this._busy) {
      super.reject();
    }
  }

  private _submitNode(): HTMLButtonElement | null {
    return this.node.querySelector<HTMLButtonElement>(
      '.nbrunner-SubmitDialog-submit'
    );
  }

  private async _doSubmit(): Promise<void> {
    const form = this._form;
    let request: ISubmitRequest;
    try {
      request = form.getRequest();
    } catch (error) {
      const field = error instanceof FieldError ? error.field : null;
      form.setError(errorMessage(error), field);
      this._focusInvalid(field);
      return;
    }
    this._busy = true;
    const button = this._submitNode();
    if (button) {
      button.disabled = true;
    }
    form.setError(null);
    form.setBusy(true);
    let job: IJob | null = null;
    try {
      job = await this._submit(request, form.floatParameters);
    } catch (error) {
      const message =
        error instanceof ApiError && error.status >= 400 && error.status < 500
          ? error.message
          : `Submission failed: ${errorMessage(error)}`;
      form.setError(message);
    } finally {
      this._busy = false;
      form.setBusy(false);
      if (button) {
        button.disabled = false;
      }
    }
    if (job) {
      form.job = job;
      super.resolve(SUBMIT_INDEX);
    } else {
      button?.focus();
    }
  }

  private _focusInvalid(field: string | null): void {
    if (!field) {
      return;
    }
    requestAnimationFrame(() => {
      const node = this.node.querySelector<HTMLElement>('[aria-invalid="true"]');
      node?.focus();
    });
  }

  private _form: SubmitForm;
  private _submit: (request: ISubmitRequest, floats: string[]) => Promise<IJob>;
  private _busy = false;
}

/**
 * Read the notebook's parameters: from the server (papermill's inspection),
 * else from the notebook itself.
 */
async function loadParameters(
  app: JupyterFrontEnd,
  docManager: IDocumentManager,
  path: string
): Promise<{ parameters: INotebookParameter[]; note: string | null }> {
  try {
    const answer = await getNotebookParameters(path);
    return { parameters: answer.parameters ?? [], note: null };
  } catch (error) {
    if (error instanceof ApiError && !error.unavailable && error.status >= 400 && error.status < 500) {
      // The server looked at the notebook and refused it: say why, keep going.
      return { parameters: [], note: error.message };
    }
    // No server route: read the parameters cell here.
    try {
      const widget = docManager.findWidget(path);
      const context = widget ? docManager.contextForWidget(widget) : undefined;
      let content: any;
      if (context) {
        content = context.model.toJSON();
      } else {
        const model = await app.serviceManager.contents.get(path, {
          content: true,
          type: 'notebook'
        });
        content = model.content;
      }
      return {
        parameters: parametersFromNotebook(content ?? {}),
        note: null
      };
    } catch (inner) {
      return {
        parameters: [],
        note: `Could not read the notebook's parameters: ${errorMessage(inner)}`
      };
    }
  }
}

/** Save the notebook if it is open with unsaved changes. */
async function saveIfDirty(
  docManager: IDocumentManager,
  path: string
): Promise<void> {
  const widget = docManager.findWidget(path);
  const context = widget ? docManager.contextForWidget(widget) : undefined;
  if (context && context.model.dirty && !context.model.readOnly) {
    await context.save();
  }
}

let dialogOpen = false;

/**
 * The whole "Run as job" flow for the notebook at `path` (relative to the
 * server root). Resolves with the created job, or null when cancelled.
 */
export async function runAsJob(
  app: JupyterFrontEnd,
  docManager: IDocumentManager,
  path: string
): Promise<IJob | null> {
  if (dialogOpen) {
    return null;
  }
  dialogOpen = true;
  try {
    // The server snapshots the file on disk: save pending edits first.
    await saveIfDirty(docManager, path);
    const { parameters, note } = await loadParameters(app, docManager, path);
    const form = new SubmitForm({
      notebook: path,
      parameters,
      defaultName: PathExt.basename(path, PathExt.extname(path)),
      note
    });
    const dialog = new SubmitDialog(form, async (request, floats) => {
      await saveIfDirty(docManager, path);
      return submitJob(request, floats);
    });
    const result = await dialog.launch();
    if (result.button.accept && result.value) {
      return result.value;
    }
    return null;
  } finally {
    dialogOpen = false;
  }
}
