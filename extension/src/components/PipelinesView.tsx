/**
 * The Pipelines view (main area): the user's pipelines, newest first; the selected one drawn as
 * its graph of steps, each box coloured by its status and saying why it waits or failed.  A step
 * with a job opens that job's page.  Live from the push channel (on a timer while it cannot be
 * opened).
 */
import { Notification } from '@jupyterlab/apputils';
import { LabIcon } from '@jupyterlab/ui-components';
import * as React from 'react';

import { cancelPipeline, errorMessage, listPipelines, rerunPipeline } from '../api';
import { PushChannel } from '../channel';
import { JOBS_POLL_MS } from '../constants';
import { Change } from '../events';
import { layoutPipeline, NODE_HEIGHT, NODE_WIDTH, stepNote, stepSummary } from '../pipeline-graph';
import { PollingWidget } from '../polling-widget';
import { IPipeline, IPipelineStep } from '../types';
import { ActionButton } from './ActionButton';
import { Banner } from './Banner';
import { LiveStatus } from './LiveStatus';
import { PanelHeader } from './PanelHeader';
import { StatusBadge } from './StatusBadge';

/** Three boxes joined by arrows: pipelines. */
const PIPELINE_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <path class="jp-icon3" fill="#616161" d="M2 9h5v6H2zm7.5 2H12V8h3V4h6v6h-6V9h-2v6h2v-1h6v6h-6v-3h-3v-4H9.5z"/>
</svg>`;

export const pipelineIcon = new LabIcon({ name: 'nbrunner:pipeline', svgstr: PIPELINE_SVG });

const FINISHED = ['completed', 'failed', 'cancelled'];

export namespace PipelinesView {
  export interface IOptions {
    channel: PushChannel;
    /** Open the job page of a step's job. */
    openJob: (id: string, name: string) => void;
    interval?: number;
  }
}

export class PipelinesView extends PollingWidget {
  constructor(options: PipelinesView.IOptions) {
    super(options.interval ?? JOBS_POLL_MS);
    this._options = options;
    this.addClass('nbrunner-PipelinesView');
    this.node.dataset.testid = 'nbrunner-pipelines-view';
    this.node.setAttribute('role', 'region');
    this.node.setAttribute('aria-label', 'nbrunner pipelines');
    this.title.label = 'Pipelines';
    this.title.caption = 'nbrunner pipelines and their steps';
    this.title.icon = pipelineIcon;
    const channel = (this._channel = options.channel);
    channel.pipelineChanged.connect((_, change) => this._onPipeline(change), this);
    channel.reloaded.connect(() => void this.refresh(), this);
    channel.modeChanged.connect(() => this.update(), this);
  }

  /** Show this pipeline's graph (e.g. one just started). */
  select(id: string): void {
    this._selected = id;
    this.update();
    void this.refresh();
  }

  protected polls(): boolean {
    return this._channel.mode === 'polling';
  }

  protected async fetch(): Promise<void> {
    try {
      const answer = await listPipelines();
      this._pipelines = Array.isArray(answer?.pipelines) ? answer.pipelines : [];
      this._error = null;
    } catch (error) {
      this._error = errorMessage(error);
    }
  }

  private _onPipeline(change: Change<IPipeline>): void {
    if (this._pipelines === null) {
      return;
    }
    if (change.deleted) {
      this._pipelines = this._pipelines.filter(p => p.id !== change.id);
    } else if (this._pipelines.some(p => p.id === change.record.id)) {
      this._pipelines = this._pipelines.map(p => (p.id === change.record.id ? change.record : p));
    } else {
      this._pipelines = [change.record, ...this._pipelines];
    }
    this.update();
  }

  private async _act(what: string, action: () => Promise<IPipeline>): Promise<void> {
    try {
      const rec = await action();
      this._selected = rec.id;
      this._onPipeline({ record: rec, deleted: false });
    } catch (error) {
      Notification.error(`Could not ${what}: ${errorMessage(error)}`, { autoClose: 8000 });
    }
  }

  protected render(): React.ReactElement {
    const pipelines = this._pipelines;
    const selected = pipelines?.find(p => p.id === this._selected) ?? pipelines?.[0] ?? null;
    return (
      <div className="nbrunner-PipelinesView-content">
        <PanelHeader title="nbrunner pipelines">
          <LiveStatus mode={this._channel.mode} pollSeconds={JOBS_POLL_MS / 1000} />
          <ActionButton testid="nbrunner-pipelines-refresh" label="Refresh pipelines"
            onClick={() => void this.refresh()}>
            Refresh
          </ActionButton>
        </PanelHeader>
        {this._error && <Banner tone="error">{this._error}</Banner>}
        {pipelines === null ? (
          <p className="nbrunner-Empty">Loading pipelines…</p>
        ) : pipelines.length === 0 ? (
          <p className="nbrunner-Empty" data-testid="nbrunner-pipelines-empty">
            No pipelines yet. Right-click a <code>*.pipeline.yaml</code> file and choose <b>Run pipeline</b>.
          </p>
        ) : (
          <div className="nbrunner-PipelinesView-body">
            <ul className="nbrunner-PipelineList" data-testid="nbrunner-pipelines">
              {pipelines.map(p => (
                <li key={p.id} data-testid="nbrunner-pipeline-row" data-pipeline={p.id}
                  className={p.id === selected?.id ? 'nbrunner-mod-selected' : ''}>
                  <button type="button" className="nbrunner-PipelineList-item" onClick={() => this.select(p.id)}>
                    <span className="nbrunner-PipelineList-name">{p.name}</span>{' '}
                    <StatusBadge status={p.status} />
                    <span className="nbrunner-PipelineList-summary">{stepSummary(p.steps)}</span>
                  </button>
                </li>
              ))}
            </ul>
            {selected && this._renderGraph(selected)}
          </div>
        )}
      </div>
    );
  }

  private _renderGraph(p: IPipeline): React.ReactElement {
    const layout = layoutPipeline(p.steps);
    const open = (name: string, step: IPipelineStep) => {
      if (step.job) {
        this._options.openJob(step.job, `${p.name}/${name}`);
      }
    };
    return (
      <div className="nbrunner-PipelineGraph" data-testid="nbrunner-pipeline-graph" data-pipeline={p.id}
        data-status={p.status}>
        <div className="nbrunner-PipelineGraph-header">
          <b>{p.name}</b> <code>{p.id}</code> <StatusBadge status={p.status} />
          <ActionButton testid="nbrunner-pipeline-cancel" tone="warn" disabled={FINISHED.includes(p.status)}
            onClick={() => void this._act('cancel the pipeline', () => cancelPipeline(p.id))}>
            Cancel
          </ActionButton>
          <ActionButton testid="nbrunner-pipeline-rerun" disabled={!FINISHED.includes(p.status)}
            title="Run again, reusing the completed steps"
            onClick={() => void this._act('rerun the pipeline', () => rerunPipeline(p.id))}>
            Rerun
          </ActionButton>
        </div>
        <svg width={layout.width} height={layout.height} role="img" aria-label={`steps of pipeline ${p.name}`}>
          <defs>
            <marker id="nbrunner-arrow" markerWidth="8" markerHeight="8" refX="8" refY="4" orient="auto">
              <path d="M0,0 L8,4 L0,8 z" className="nbrunner-PipelineGraph-arrow" />
            </marker>
          </defs>
          {layout.edges.map(e => (
            <line key={`${e.from}>${e.to}`} x1={e.x1} y1={e.y1} x2={e.x2} y2={e.y2}
              className="nbrunner-PipelineGraph-edge" markerEnd="url(#nbrunner-arrow)" />
          ))}
          {layout.nodes.map(n => {
            const step = p.steps[n.name];
            const note = step.waiting?.message ?? step.error ?? (step.reused ? 'reused' : step.job ?? '');
            return (
              <g key={n.name} transform={`translate(${n.x},${n.y})`}
                className={`nbrunner-PipelineStep nbrunner-status-${step.status}` + (step.job ? ' nbrunner-mod-link' : '')}
                data-testid="nbrunner-pipeline-step" data-step={n.name} data-status={step.status}
                data-job={step.job ?? ''} role={step.job ? 'button' : undefined}
                aria-label={`step ${n.name}: ${step.status}`} onClick={() => open(n.name, step)}>
                <title>{`${n.name}: ${step.status}${note ? ` (${note})` : ''}`}</title>
                <rect width={NODE_WIDTH} height={NODE_HEIGHT} rx={6} />
                <text x={8} y={18} className="nbrunner-PipelineStep-name">{n.name}</text>
                <text x={8} y={36} className="nbrunner-PipelineStep-note">{stepNote(step)}</text>
              </g>
            );
          })}
        </svg>
      </div>
    );
  }

  private _options: PipelinesView.IOptions;
  private _channel: PushChannel;
  private _pipelines: IPipeline[] | null = null;
  private _selected: string | null = null;
  private _error: string | null = null;
}
