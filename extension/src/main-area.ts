/**
 * Main-area widgets, made and shown one way: a content widget wrapped in a `MainAreaWidget`
 * whose title follows the content's, and shown (added when not attached, then activated).
 * `MainAreaWidgets` is the open-or-create of one kind of tab (a job's page, the cluster
 * view...): the open one when there is one, else a new one, tracked for the layout restorer.
 */
import { ILayoutRestorer, JupyterFrontEnd } from '@jupyterlab/application';
import { MainAreaWidget, WidgetTracker } from '@jupyterlab/apputils';
import { DocumentRegistry } from '@jupyterlab/docregistry';
import { LabIcon } from '@jupyterlab/ui-components';
import { ReadonlyPartialJSONObject } from '@lumino/coreutils';
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
export function showInMainArea(
  shell: JupyterFrontEnd.IShell,
  widget: Widget,
  options?: DocumentRegistry.IOpenOptions
): void {
  if (!widget.isAttached) {
    shell.add(widget, 'main', options);
  }
  shell.activateById(widget.id);
}

export namespace MainAreaWidgets {
  /** One kind of main-area tab. */
  export interface IOptions<T extends Widget> {
    /** The tracker's namespace (the layout restorer keeps the open tabs under it). */
    namespace: string;
    /** Which tab a content is: a job's id, say; '' (the default) for a view shown once. */
    key?: (content: T) => string;
    /** The DOM id of the tab showing `content`. */
    id: (content: T) => string;
    icon?: LabIcon;
    className?: string;
    /** Where a new tab goes (default: a tab of the main area's current dock area). */
    place?: (tracker: WidgetTracker<MainAreaWidget<T>>) => DocumentRegistry.IOpenOptions | undefined;
  }

  /** How the layout restorer reopens a tab: the command, its arguments, the tab's name. */
  export interface IRestoreOptions<T extends Widget> {
    command: string;
    args?: (widget: MainAreaWidget<T>) => ReadonlyPartialJSONObject;
    name: (widget: MainAreaWidget<T>) => string;
  }
}

/** The open-or-create of one kind of main-area tab. */
export class MainAreaWidgets<T extends Widget> {
  constructor(shell: JupyterFrontEnd.IShell, options: MainAreaWidgets.IOptions<T>) {
    this._shell = shell;
    this._options = options;
    this.tracker = new WidgetTracker<MainAreaWidget<T>>({ namespace: options.namespace });
  }

  /** The open tabs of this kind. */
  readonly tracker: WidgetTracker<MainAreaWidget<T>>;

  /** The open tab of `key`, if any. */
  find(key = ''): MainAreaWidget<T> | undefined {
    const keyOf = this._options.key ?? (() => '');
    return this.tracker.find(w => keyOf(w.content) === key);
  }

  /** The tab of `key` shown: the open one (then `reopened` on its content), or one made of
   * `create()`. */
  open(key: string, create: () => T, reopened?: (content: T) => void): MainAreaWidget<T> {
    const existing = this.find(key);
    if (existing) {
      showInMainArea(this._shell, existing);
      reopened?.(existing.content);
      return existing;
    }
    return this.add(create());
  }

  /** `content` in a new tab: wrapped, tracked, placed and shown. */
  add(content: T): MainAreaWidget<T> {
    const { icon, className, place } = this._options;
    const widget = wrapInMainArea(content, this._options.id(content), { icon, className });
    const where = place?.(this.tracker); // before the new tab becomes the tracker's current one
    void this.tracker.add(widget);
    showInMainArea(this._shell, widget, where);
    return widget;
  }

  /** Close every tab whose content `test` picks. */
  close(test: (content: T) => boolean): void {
    this.tracker.filter(w => test(w.content)).forEach(w => w.dispose());
  }

  /** Reopen the tabs of the last session (by running `options.command` for each). */
  restore(restorer: ILayoutRestorer | null, options: MainAreaWidgets.IRestoreOptions<T>): void {
    if (restorer) {
      void restorer.restore(this.tracker, options);
    }
  }

  private _shell: JupyterFrontEnd.IShell;
  private _options: MainAreaWidgets.IOptions<T>;
}

/** A list view shown once in the main area (schedules, pipelines): one record selected in it, or
 * its list reloaded. */
export interface IListView extends Widget {
  select(id: string): void;
  refresh(): Promise<void> | void;
}

/** The command that opens the list view of `views` (made by `create` the first time), selecting
 * `args.id` in it or else reloading it, and the tab's restoration under `name`. */
export function addListViewCommand<T extends IListView>(
  commands: JupyterFrontEnd['commands'],
  views: MainAreaWidgets<T>,
  restorer: ILayoutRestorer | null,
  command: string,
  options: { label: string; caption: string; icon: LabIcon; name: string; create: () => T }
): void {
  const { label, caption, icon, name, create } = options;
  commands.addCommand(command, {
    label,
    caption,
    icon,
    execute: args => {
      const view = views.open('', create);
      if (args.id) {
        view.content.select(String(args.id));
      } else {
        void view.content.refresh();
      }
      return view;
    }
  });
  views.restore(restorer, { command, name: () => name });
}
