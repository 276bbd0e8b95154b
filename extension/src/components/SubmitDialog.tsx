/**
 * A dialog that submits when its accept button is pressed and stays open, showing why,
 * when a field is invalid or the server refuses the job (or schedule, or sweep).
 */
import { Dialog } from '@jupyterlab/apputils';
import { PathExt } from '@jupyterlab/coreutils';

import { ApiError, errorMessage } from '../api';
import { RunMode } from '../schedule';
import { FieldError, Submission, SubmitForm } from './SubmitForm';

const SUBMIT_INDEX = 1;

/** The accept button's label in each mode. */
const SUBMIT_LABELS: { [mode in RunMode]: string } = {
  now: 'Submit',
  schedule: 'Save schedule',
  sweep: 'Start sweep'
};

/**
 * `T` is what `submit` answers (the created job, schedule or sweep); the dialog's value.
 */
export class SubmitDialog<T> extends Dialog<T | null> {
  constructor(
    form: SubmitForm,
    submit: (submission: Submission, floats: string[]) => Promise<T>,
    title?: string
  ) {
    super({
      title: title ?? `Run as job: ${PathExt.basename(form.notebook)}`,
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
      focusNodeSelector: 'input:not([readonly]), textarea'
    });
    this._form = form;
    this._submit = submit;
    this.addClass('nbrunner-SubmitDialog');
    this.node.dataset.testid = 'nbrunner-submit-dialog';
    this.node.setAttribute('aria-label', 'Run notebook as job');
    this._submitNode()?.setAttribute('data-testid', 'nbrunner-submit');
    this._setSubmitLabel(form.mode);
    form.modeChanged.connect((_, mode) => this._setSubmitLabel(mode));
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

  private _setSubmitLabel(mode: RunMode): void {
    const label = this._submitNode()?.querySelector('.jp-Dialog-buttonLabel');
    if (label) {
      label.textContent = SUBMIT_LABELS[mode];
    }
    this._submitNode()?.setAttribute('aria-label', SUBMIT_LABELS[mode]);
  }

  private async _doSubmit(): Promise<void> {
    const form = this._form;
    let submission: Submission;
    try {
      submission = form.getSubmission();
    } catch (error) {
      // The field says why, next to it: take the user there.
      this._focusInvalid(error instanceof FieldError ? error.field : null);
      return;
    }
    this._busy = true;
    const button = this._submitNode();
    if (button) {
      button.disabled = true;
    }
    form.setError(null);
    form.setBusy(true);
    let created: T | null = null;
    try {
      created = await this._submit(submission, form.floatParameters);
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
    if (created) {
      this._created = created;
      super.resolve(SUBMIT_INDEX);
    } else {
      button?.focus();
    }
  }

  private _focusInvalid(field: string | null): void {
    requestAnimationFrame(() => {
      const error = field
        ? this.node.querySelector<HTMLElement>(
            `[data-testid="nbrunner-field-error"][data-field="${CSS.escape(field)}"]`
          )
        : null;
      const input =
        (error?.id &&
          this.node.querySelector<HTMLElement>(
            `#${CSS.escape(error.id.replace(/-error$/, ''))}`
          )) ||
        this.node.querySelector<HTMLElement>('[aria-invalid="true"]');
      input?.focus();
    });
  }

  /** What the server created, once submitted (the dialog's value). */
  get created(): T | null {
    return this._created;
  }

  private _form: SubmitForm;
  private _submit: (submission: Submission, floats: string[]) => Promise<T>;
  private _created: T | null = null;
  private _busy = false;
}
