/**
 * "Run as job": save the notebook, read its parameters and GPU bounds, show the submit
 * dialog, submit (a job now, a schedule, or a sweep).  Also editing a schedule in the
 * same dialog.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { PathExt } from '@jupyterlab/coreutils';
import { IDocumentManager } from '@jupyterlab/docmanager';

import {
  ApiError,
  createSchedule,
  errorMessage,
  getNotebookParameters,
  submitJob,
  submitSweep,
  updateSchedule
} from './api';
import { SubmitDialog } from './components/SubmitDialog';
import { Submission, SubmitForm } from './components/SubmitForm';
import { inferType, parametersFromNotebook } from './params';
import { defaultWhen, RunMode, whenFromSchedule } from './schedule';
import { IJob, INotebookParameter, ISchedule, ISweep } from './types';
import { gpuBounds } from './validation';

/** What the dialog created. */
export type Created =
  | { mode: 'now'; job: IJob }
  | { mode: 'schedule'; schedule: ISchedule }
  | { mode: 'sweep'; sweep: ISweep };

export interface IRunOptions {
  /** The mode chosen when the dialog opens (default: Run now). */
  mode?: RunMode;
  /** Path of a sweep spec to fill in. */
  spec?: string;
}

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

/** The text of a file (a sweep spec) on the server. */
async function readText(app: JupyterFrontEnd, path: string): Promise<string> {
  try {
    const model = await app.serviceManager.contents.get(path, {
      content: true,
      type: 'file',
      format: 'text'
    });
    return String(model.content ?? '');
  } catch (error) {
    // Shown in the dialog, like a refusal of the server: the path is what is wrong.
    throw new ApiError(`Cannot read the sweep spec ${path}: ${errorMessage(error)}`, 400);
  }
}

async function send(
  app: JupyterFrontEnd,
  submission: Submission,
  floats: string[]
): Promise<Created> {
  switch (submission.mode) {
    case 'schedule':
      return {
        mode: 'schedule',
        schedule: await createSchedule(submission.request, floats)
      };
    case 'sweep': {
      const spec = await readText(app, submission.spec);
      return {
        mode: 'sweep',
        sweep: await submitSweep({ ...submission.request, spec })
      };
    }
    default:
      return { mode: 'now', job: await submitJob(submission.request, floats) };
  }
}

let dialogOpen = false;

/** Run `dialog` unless another submit dialog is open; its created value, or null. */
async function once<T>(show: () => Promise<T | null>): Promise<T | null> {
  if (dialogOpen) {
    return null;
  }
  dialogOpen = true;
  try {
    return await show();
  } finally {
    dialogOpen = false;
  }
}

/**
 * The whole "Run as job" flow for the notebook at `path` (relative to the server root).
 * Resolves with what was created (a job, a schedule or a sweep), or null when cancelled.
 */
export function runAsJob(
  app: JupyterFrontEnd,
  docManager: IDocumentManager,
  path: string,
  options: IRunOptions = {}
): Promise<Created | null> {
  return once(async () => {
    // The server snapshots the file on disk: save pending edits first.
    await saveIfDirty(docManager, path);
    const { parameters, metadata, note } = await loadNotebook(app, docManager, path);
    const form = new SubmitForm({
      notebook: path,
      parameters,
      defaultName: PathExt.basename(path, PathExt.extname(path)),
      note,
      gpus: gpuBounds(parameters, metadata),
      when: defaultWhen(options.mode ?? 'now', options.spec ?? '')
    });
    const dialog = new SubmitDialog<Created>(form, async (submission, floats) => {
      await saveIfDirty(docManager, path);
      return send(app, submission, floats);
    });
    const result = await dialog.launch();
    return result.button.accept ? dialog.created : null;
  });
}

/**
 * Edit a schedule in the same dialog (its timing, parameters and job options);
 * resolves with the updated schedule, or null when cancelled.
 */
export function editSchedule(
  app: JupyterFrontEnd,
  docManager: IDocumentManager,
  schedule: ISchedule
): Promise<ISchedule | null> {
  return once(async () => {
    const path = schedule.notebook;
    const { parameters, note } = await loadNotebook(app, docManager, path);
    const values = schedule.parameters ?? {};
    const known = new Set(parameters.map(p => p.name));
    // Parameters the schedule sets that the notebook's cell does not (any more) list.
    const extra: INotebookParameter[] = Object.entries(values)
      .filter(([name]) => !known.has(name))
      .map(([name, value]) => ({ name, value, type: inferType(value) }));
    const form = new SubmitForm({
      notebook: path,
      parameters: [...parameters, ...extra],
      defaultName: schedule.name,
      note,
      modes: ['schedule'],
      when: whenFromSchedule(schedule),
      values,
      options: {
        minGpus: String(schedule.min_gpus ?? 0),
        maxGpus: String(schedule.max_gpus ?? 0),
        priority: String(schedule.priority),
        timeout: schedule.timeout ? String(schedule.timeout) : ''
      }
    });
    const dialog = new SubmitDialog<ISchedule>(
      form,
      async (submission, floats) => {
        if (submission.mode !== 'schedule') {
          throw new Error('a schedule is edited as a schedule');
        }
        const { notebook, ...request } = submission.request;
        void notebook;
        return updateSchedule(
          schedule.id,
          {
            ...request,
            cron: request.cron ?? null,
            every: request.every ?? null,
            timeout: request.timeout ?? null
          },
          floats
        );
      },
      `Edit schedule: ${schedule.name}`
    );
    const result = await dialog.launch();
    return result.button.accept ? dialog.created : null;
  });
}
