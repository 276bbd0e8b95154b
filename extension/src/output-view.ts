/**
 * A job's executed notebook, read-only and without a kernel: the HTML export the worker
 * writes next to it (`runs/<id>/output.html`), shown in a sandboxed frame (no scripts),
 * in a tab named after the job.
 */
import { PathExt } from '@jupyterlab/coreutils';
import { Contents } from '@jupyterlab/services';
import { Widget } from '@lumino/widgets';

/** Path of the HTML export of an executed notebook (next to it). */
export function outputHtmlPath(output: string): string {
  return PathExt.join(PathExt.dirname(output), 'output.html');
}

export class OutputView extends Widget {
  constructor(options: OutputView.IOptions) {
    super();
    this.jobId = options.id;
    this.jobName = options.name;
    this.path = options.path;
    this.addClass('nbrunner-OutputView');
    this.node.dataset.testid = 'nbrunner-output-view';
    this.node.dataset.jobId = options.id;
    this._frame = document.createElement('iframe');
    // No scripts, no same-origin access: a static, read-only rendering.
    this._frame.setAttribute('sandbox', '');
    this._frame.setAttribute('referrerpolicy', 'no-referrer');
    this._frame.className = 'nbrunner-OutputView-frame';
    this._frame.dataset.testid = 'nbrunner-output-frame';
    this._frame.title = `Executed notebook of job ${options.name} (read-only)`;
    this.node.appendChild(this._frame);
    this.title.label = `output: ${options.name}`;
    this.title.caption =
      `Executed notebook of job ${options.name} (${options.id}), read-only, ` +
      `no kernel: ${options.path}`;
    this.title.closable = true;
  }

  readonly jobId: string;
  readonly jobName: string;
  /** Path of the HTML shown (relative to the server root). */
  readonly path: string;

  /** Load (or reload) the HTML through the contents API. */
  async load(contents: Contents.IManager): Promise<void> {
    const model = await contents.get(this.path, {
      content: true,
      type: 'file',
      format: 'text'
    });
    this._frame.srcdoc = String(model.content ?? '');
    this.node.dataset.loaded = 'true';
  }

  private _frame: HTMLIFrameElement;
}

export namespace OutputView {
  export interface IOptions {
    id: string;
    name: string;
    /** The HTML file to show. */
    path: string;
  }
}
