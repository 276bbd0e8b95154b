/**
 * "Register model" of a job row: ask for a model name, then register the model the job
 * saved (runs/<job>/model/) as that name's next version.
 */
import { Dialog, Notification } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import { errorMessage, registerModel } from '../api';
import { MODEL_NAME_RE } from '../constants';
import { IJob, IModel } from '../types';


/** A valid model name suggested by a job's name (`digits.ipynb` -> `digits`). */
export function suggestModelName(job: IJob): string {
  const base = (job.name || '').replace(/\.ipynb$/, '');
  const cleaned = base
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, 64);
  return MODEL_NAME_RE.test(cleaned) ? cleaned : 'model';
}

/** The dialog's body: a labelled name field whose value the dialog returns. */
class ModelNameBody extends Widget implements Dialog.IBodyWidget<string> {
  constructor(job: IJob) {
    super();
    this.addClass('nbrunner-RegisterModel');
    const label = document.createElement('label');
    label.htmlFor = 'nbrunner-model-name';
    label.textContent = 'Model name';
    this._input = document.createElement('input');
    this._input.id = 'nbrunner-model-name';
    this._input.className = 'jp-mod-styled nbrunner-RegisterModel-input';
    this._input.dataset.testid = 'nbrunner-model-name';
    this._input.value = suggestModelName(job);
    this._input.spellcheck = false;
    const hint = document.createElement('p');
    hint.className = 'nbrunner-RegisterModel-hint';
    hint.textContent =
      'Letters, digits, ".", "_" or "-". An existing name gets a new version.';
    this.node.append(label, this._input, hint);
  }

  getValue(): string {
    return this._input.value.trim();
  }

  protected onAfterAttach(): void {
    this._input.select();
  }

  private _input: HTMLInputElement;
}

/** Ask for a name and register job's model; the new entry, or null (cancelled or failed). */
export async function registerJobModel(job: IJob): Promise<IModel | null> {
  const dialog = new Dialog<string>({
    title: `Register the model of job ${job.id}`,
    body: new ModelNameBody(job),
    buttons: [
      Dialog.cancelButton(),
      Dialog.okButton({ label: 'Register', className: 'nbrunner-RegisterModel-ok' })
    ],
    focusNodeSelector: 'input'
  });
  dialog.node.dataset.testid = 'nbrunner-register-dialog';
  dialog.node
    .querySelector('.nbrunner-RegisterModel-ok')
    ?.setAttribute('data-testid', 'nbrunner-register-ok');
  const result = await dialog.launch();
  if (!result.button.accept || result.value === null) {
    return null;
  }
  const name = result.value;
  if (!MODEL_NAME_RE.test(name)) {
    Notification.error(
      `Invalid model name "${name}": use 1 to 64 letters, digits, ".", "_" or "-", starting with a letter or digit.`,
      { autoClose: 8000 }
    );
    return null;
  }
  try {
    return await registerModel(job.id, name);
  } catch (error) {
    Notification.error(
      `Could not register the model of job ${job.id}: ${errorMessage(error)}`,
      { autoClose: 10000 }
    );
    return null;
  }
}
