/**
 * "Run as job": save the notebook, read its parameters and GPU bounds, show the submit
 * dialog, submit.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { PathExt } from '@jupyterlab/coreutils';
import { IDocumentManager } from '@jupyterlab/docmanager';

import { ApiError, errorMessage, getNotebookParameters, submitJob } from './api';
import { SubmitDialog } from './components/SubmitDialog';
import { SubmitForm } from './components/SubmitForm';
import { parametersFromNotebook } from './params';
import { IJob, INotebookParameter } from './types';
import { gpuBounds } from './validation';

interface INotebookContent {
  cells?: any[];
  metadata?: { [key: string]: unknown };
}

/** The notebook's JSON: from its open editor if any (unsaved edits too), else the server. */
async function notebookContent(
  app: JupyterFrontEnd,
  docManager: IDocumentManager,
  path: string
): Promise<INotebookContent> {
  const widget = docManager.findWidget(path);
  const context = widget ? docManager.contextForWidget(widget) : undefined;
  if (context) {
    return context.model.toJSON() as INotebookContent;
  }
  const model = await app.serviceManager.contents.get(path, {
    content: true,
    type: 'notebook'
  });
  return (model.content ?? {}) as INotebookContent;
}

/**
 * Read the notebook's parameters (from the server, papermill's inspection, else from
 * the notebook here) and its metadata.
 */
async function loadNotebook(
  app: JupyterFrontEnd,
  docManager: IDocumentManager,
  path: string
): Promise<{
  parameters: INotebookParameter[];
  metadata: { [key: string]: unknown } | null;
  note: string | null;
}> {
  let content: INotebookContent | null = null;
  let readError: unknown = null;
  try {
    content = await notebookContent(app, docManager, path);
  } catch (error) {
    readError = error;
  }
  const metadata = content?.metadata ?? null;
  try {
    const answer = await getNotebookParameters(path);
    return { parameters: answer.parameters ?? [], metadata, note: null };
  } catch (error) {
    if (
      error instanceof ApiError &&
      !error.unavailable &&
      error.status >= 400 &&
      error.status < 500
    ) {
      // The server looked at the notebook and refused it: say why, keep going.
      return { parameters: [], metadata, note: error.message };
    }
  }
  // No server route: read the parameters cell here.
  if (content) {
    return { parameters: parametersFromNotebook(content), metadata, note: null };
  }
  return {
    parameters: [],
    metadata: null,
    note: `Could not read the notebook's parameters: ${errorMessage(readError)}`
  };
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
 * The whole "Run as job" flow for the notebook at `path` (relative to the server root).
 * Resolves with the created job, or null when cancelled.
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
    const { parameters, metadata, note } = await loadNotebook(app, docManager, path);
    const form = new SubmitForm({
      notebook: path,
      parameters,
      defaultName: PathExt.basename(path, PathExt.extname(path)),
      note,
      gpus: gpuBounds(parameters, metadata)
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
