/** The ids of nbrunner's JupyterLab commands (the UI tests and menus select by them: keep them). */
export namespace CommandIDs {
  export const runAsJob = 'nbrunner:run-as-job';
  export const openJobs = 'nbrunner:open-jobs';
  export const openJobsTable = 'nbrunner:open-jobs-table';
  export const openCluster = 'nbrunner:open-cluster';
  export const openLog = 'nbrunner:open-log';
  export const openJob = 'nbrunner:open-job';
  export const openOutput = 'nbrunner:open-output';
  export const openModels = 'nbrunner:open-models';
  export const openSchedules = 'nbrunner:open-schedules';
  export const runSweep = 'nbrunner:run-sweep';
  export const openPipelines = 'nbrunner:open-pipelines';
  export const runPipeline = 'nbrunner:run-pipeline';
  export const openNotifications = 'nbrunner:open-notifications';
}

/** The palette category of every nbrunner command. */
export const PALETTE_CATEGORY = 'nbrunner';
