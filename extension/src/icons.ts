import { LabIcon } from '@jupyterlab/ui-components';

/** A notebook page with a "play" triangle: run the notebook as a job. */
const RUN_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <path class="jp-icon3" fill="#616161" d="M5 2h10l4 4v5h-2V7h-3V4H5v16h5v2H5a2 2 0 0 1-2-2V4a2 2 0 0 1 2-2z"/>
  <path class="jp-icon-brand0" fill="#1976d2" d="M13 12.5v9.5l8-4.75z"/>
</svg>`;

/**
 * A briefcase with a "play" triangle: the Jobs panel (distinct from the Table of
 * Contents' list of lines).
 */
const JOBS_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24" data-icon="nbrunner-jobs">
  <path class="jp-icon3" fill="#616161" fill-rule="evenodd" d="M9 2h6a2 2 0 0 1 2 2v2h3a2 2 0 0 1 2 2v12a2 2 0 0 1-2 2H4a2 2 0 0 1-2-2V8a2 2 0 0 1 2-2h3V4a2 2 0 0 1 2-2zm0 2v2h6V4zM4 8v12h16V8z"/>
  <path class="jp-icon-brand0" fill="#1976d2" d="M10 10.5v7l6-3.5z"/>
</svg>`;

/** A chip with pins: GPU slots of the cluster. */
const CLUSTER_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <path class="jp-icon3" fill="#616161" d="M7 7h10v10H7zm2 2v6h6V9zM8 2h2v3H8zm6 0h2v3h-2zM8 19h2v3H8zm6 0h2v3h-2zM2 8h3v2H2zm0 6h3v2H2zm17-6h3v2h-3zm0 6h3v2h-3z"/>
</svg>`;

/** A page of text lines: the job log. */
const LOG_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <path class="jp-icon3" fill="#616161" d="M5 3h14a2 2 0 0 1 2 2v14a2 2 0 0 1-2 2H5a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2zm0 2v14h14V5zm2 2h10v2H7zm0 4h10v2H7zm0 4h6v2H7z"/>
</svg>`;

/** A cube: a trained model. */
const MODELS_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24" data-icon="nbrunner-models">
  <path class="jp-icon3" fill="#616161" d="M12 2l9 5v10l-9 5-9-5V7zm0 2.3L5.5 7.9 12 11.5l6.5-3.6zM5 9.6v6.2l6 3.4v-6.3zm14 0l-6 3.3v6.3l6-3.4z"/>
</svg>`;

export const runJobIcon = new LabIcon({ name: 'nbrunner:run', svgstr: RUN_SVG });
export const jobsIcon = new LabIcon({ name: 'nbrunner:jobs', svgstr: JOBS_SVG });
export const clusterIcon = new LabIcon({
  name: 'nbrunner:cluster',
  svgstr: CLUSTER_SVG
});
export const logIcon = new LabIcon({ name: 'nbrunner:log', svgstr: LOG_SVG });
export const modelsIcon = new LabIcon({
  name: 'nbrunner:models',
  svgstr: MODELS_SVG
});
