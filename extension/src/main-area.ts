/**
 * Main-area widgets, made and shown one way: a content widget wrapped in a `MainAreaWidget`
 * whose title follows the content's, and shown (added when not attached, then activated).
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { MainAreaWidget } from '@jupyterlab/apputils';
import { LabIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

/** `content` in a closable main-area widget with id `id`, its title the content's (kept in step). */
export function wrapInMainArea<T extends Widget>(
  content: T,
  id: string,
  options: { icon?: LabIcon; className?: string } = {}
): MainAreaWidget<T> {
  const widget = new MainAreaWidget({ content });
  widget.id = id;
  if (options.className) {
    widget.addClass(options.className);
  }
  if (options.icon) {
    widget.title.icon = options.icon;
  }
  widget.title.closable = true;
  const sync = () => {
    widget.title.label = content.title.label;
    widget.title.caption = content.title.caption;
  };
  sync();
  content.title.changed.connect(sync);
  return widget;
}

/** Show `widget` in the main area: added there if it is not attached, then activated. */
export function showInMainArea(shell: JupyterFrontEnd.IShell, widget: Widget): void {
  if (!widget.isAttached) {
    shell.add(widget, 'main');
  }
  shell.activateById(widget.id);
}
