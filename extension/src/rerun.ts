/**
 * "Re-run" a job: the submit dialog pre-filled with the job's parameters; submitting asks
 * the server for a new job from the same input snapshot with the (edited) parameters.
 */
import { PathExt } from '@jupyterlab/coreutils';

import { getNotebookParameters, rerunJob } from './api';
import { SubmitDialog } from './components/SubmitDialog';
import { SubmitForm } from './components/SubmitForm';
import { inferType } from './params';
import { IJob, INotebookParameter } from './types';

/** The job's parameters, typed as the notebook declares them when it still does. */
async function jobParameters(job: IJob): Promise<INotebookParameter[]> {
  const declared = new Map<string, INotebookParameter>();
  try {
    for (const p of (await getNotebookParameters(job.notebook)).parameters ?? []) {
      declared.set(p.name, p);
    }
  } catch {
    // The notebook moved or changed: the values' own types will do.
  }
  return Object.entries(job.parameters ?? {}).map(([name, value]) => {
    const type = declared.get(name)?.type ?? inferType(value);
    return { name, value, type, help: declared.get(name)?.help ?? null };
  });
}

let open = false;

/** Show the re-run dialog; resolves with the new job, or null when cancelled. */
export async function rerunWithDialog(job: IJob): Promise<IJob | null> {
  if (open) {
    return null;
  }
  open = true;
  try {
    const form = new SubmitForm({
      notebook: job.notebook,
      parameters: await jobParameters(job),
      defaultName: job.name,
      modes: ['now'],
      note:
        `Re-run of job ${job.id} (${job.name}) from the same notebook snapshot. ` +
        'Edit the parameters or keep them.'
    });
    const dialog = new SubmitDialog<IJob>(
      form,
      (submission, floats) => rerunJob(job.id, submission.request.parameters, floats),
      `Re-run job: ${job.name}`
    );
    dialog.addClass('nbrunner-RerunDialog');
    dialog.node.dataset.rerunOf = job.id;
    dialog.node.setAttribute(
      'aria-label',
      `Re-run job ${job.name} (${PathExt.basename(job.notebook)})`
    );
    const result = await dialog.launch();
    return result.button.accept ? dialog.created : null;
  } finally {
    open = false;
  }
}
