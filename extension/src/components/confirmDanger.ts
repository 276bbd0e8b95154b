/** A "Keep / do it" dialog for an action that cannot be undone (cancel, delete). */
import { Dialog } from '@jupyterlab/apputils';

export interface IConfirmDanger {
  title: string;
  body: string;
  keep: string;
  yes: string;
  /** Class stem of the dialog: `<stem>`, `<stem>-keep`, `<stem>-yes`. */
  className: string;
  /** Test id of the dialog; its buttons get `<buttonTestid>-keep` and `-yes` (default `testid`). */
  testid: string;
  buttonTestid?: string;
  dataset?: { [key: string]: string };
}

/** True when the user chose `yes`; the keep button is the default. */
export async function confirmDanger(options: IConfirmDanger): Promise<boolean> {
  const { className, testid } = options;
  const buttons = options.buttonTestid ?? testid;
  const dialog = new Dialog({
    title: options.title,
    body: options.body,
    buttons: [
      Dialog.cancelButton({ label: options.keep, className: `${className}-keep` }),
      Dialog.warnButton({ label: options.yes, className: `${className}-yes` })
    ],
    defaultButton: 0
  });
  dialog.addClass(className);
  dialog.node.dataset.testid = testid;
  Object.assign(dialog.node.dataset, options.dataset ?? {});
  for (const which of ['keep', 'yes']) {
    dialog.node
      .querySelector(`.${className}-${which}`)
      ?.setAttribute('data-testid', `${buttons}-${which}`);
  }
  return (await dialog.launch()).button.accept;
}
