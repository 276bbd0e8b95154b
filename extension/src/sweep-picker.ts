/**
 * "Run sweep…" on a spec file: ask which notebook the sweep runs (the notebooks next to
 * the spec are offered), then the Run-as-job dialog opens in its Sweep mode.
 */
import { Dialog } from '@jupyterlab/apputils';
import { PathExt } from '@jupyterlab/coreutils';
import { Contents } from '@jupyterlab/services';
import { Widget } from '@lumino/widgets';

/** Notebooks in the directory of `path` (server paths), sorted. */
export async function notebooksNextTo(
  contents: Contents.IManager,
  path: string
): Promise<string[]> {
  try {
    const dir = await contents.get(PathExt.dirname(path), { content: true });
    const items = (dir.content ?? []) as Contents.IModel[];
    return items
      .filter(item => item.type === 'notebook')
      .map(item => item.path)
      .sort();
  } catch {
    return [];
  }
}

class NotebookPicker extends Widget {
  constructor(spec: string, notebooks: string[]) {
    super();
    this.addClass('nbrunner-SweepPicker');
    this.node.dataset.testid = 'nbrunner-sweep-picker';
    const intro = document.createElement('p');
    intro.textContent = `Spec: ${spec}. Which notebook does each trial run?`;
    const label = document.createElement('label');
    label.textContent = 'Notebook ';
    label.htmlFor = 'nbrunner-sweep-notebook';
    this._input = document.createElement('input');
    this._input.id = 'nbrunner-sweep-notebook';
    this._input.className = 'jp-mod-styled';
    this._input.dataset.testid = 'nbrunner-sweep-notebook';
    this._input.placeholder = 'path/to/notebook.ipynb';
    this._input.value = notebooks[0] ?? '';
    this._input.setAttribute('list', 'nbrunner-sweep-notebooks');
    const list = document.createElement('datalist');
    list.id = 'nbrunner-sweep-notebooks';
    for (const nb of notebooks) {
      const option = document.createElement('option');
      option.value = nb;
      list.appendChild(option);
    }
    label.appendChild(this._input);
    this.node.append(intro, label, list);
  }

  getValue(): string {
    return this._input.value.trim();
  }

  private _input: HTMLInputElement;
}

/** The notebook picked for a sweep over `spec`, or null when cancelled. */
export async function pickSweepNotebook(
  contents: Contents.IManager,
  spec: string
): Promise<string | null> {
  const notebooks = await notebooksNextTo(contents, spec);
  const result = await new Dialog<string>({
    title: `Run sweep: ${PathExt.basename(spec)}`,
    body: new NotebookPicker(spec, notebooks),
    buttons: [
      Dialog.cancelButton(),
      Dialog.okButton({ label: 'Next…', className: 'nbrunner-SweepPicker-next' })
    ],
    focusNodeSelector: 'input'
  }).launch();
  return result.button.accept && result.value ? result.value : null;
}
