/**
 * The Models side panel: registered model versions (name, version, job, framework,
 * saved_at) with Serve / Stop and the URL of each running model server.  Refreshed by a
 * Poller while visible.
 */
import { Notification } from '@jupyterlab/apputils';
import * as React from 'react';

import {
  errorMessage,
  listModels,
  listModelServers,
  startModelServer,
  stopModelServer
} from '../api';
import { MODELS_POLL_MS } from '../constants';
import { modelsIcon } from '../icons';
import { sortModels } from '../ordering';
import { PollingWidget } from '../polling-widget';
import { IModel, IModelServer } from '../types';
import { ActionButton } from './ActionButton';
import { Banner } from './Banner';
import { ModelRow } from './ModelRow';
import { PanelHeader } from './PanelHeader';

export class ModelsPanel extends PollingWidget {
  constructor(options: { interval?: number } = {}) {
    super(options.interval ?? MODELS_POLL_MS);
    this.id = 'nbrunner-models-panel';
    this.addClass('nbrunner-ModelsPanel');
    this.node.dataset.testid = 'nbrunner-models-panel';
    this.title.icon = modelsIcon;
    this.title.caption = 'nbrunner models';
    this.node.setAttribute('role', 'region');
    this.node.setAttribute('aria-label', 'nbrunner models');
  }

  /** The registry and the running servers. */
  protected async fetch(): Promise<void> {
    const [models, servers] = await Promise.allSettled([
      listModels(),
      listModelServers()
    ]);
    if (models.status === 'fulfilled') {
      this._models = Array.isArray(models.value?.models) ? models.value.models : [];
      this._error = null;
    } else {
      this._error = errorMessage(models.reason);
    }
    if (servers.status === 'fulfilled') {
      this._servers = new Map(
        (servers.value?.servers ?? []).map(s => [s.name, s] as [string, IModelServer])
      );
    }
  }

  /** Mark a model version (e.g. one just registered). */
  highlight(model: string): void {
    this._highlight = model;
    window.setTimeout(() => {
      if (this._highlight === model) {
        this._highlight = null;
        this.update();
      }
    }, 4000);
    this.update();
  }

  private async _serve(model: IModel): Promise<void> {
    const label = `${model.name}:${model.version}`;
    await this._busy(model.name, async () => {
      const server = await startModelServer(label);
      this._servers.set(server.name, server);
      Notification.success(`Serving ${server.model} on ${server.url}`, {
        autoClose: 6000
      });
    }, `Could not serve ${label}`);
  }

  private async _stop(server: IModelServer): Promise<void> {
    await this._busy(server.name, async () => {
      await stopModelServer(server.name);
      this._servers.delete(server.name);
    }, `Could not stop serving ${server.model}`);
  }

  private async _busy(
    name: string,
    work: () => Promise<void>,
    failure: string
  ): Promise<void> {
    if (this._pending.has(name)) {
      return;
    }
    this._pending.add(name);
    this.update();
    try {
      await work();
    } catch (error) {
      Notification.error(`${failure}: ${errorMessage(error)}`, { autoClose: 10000 });
    } finally {
      this._pending.delete(name);
      await this.refresh();
    }
  }

  protected render(): React.ReactElement {
    const models = this._models;
    return (
      <div className="nbrunner-JobsPanel-content">
        <PanelHeader title="nbrunner models">
          <ActionButton
            testid="nbrunner-models-refresh"
            label="Refresh models"
            title="Refresh models"
            onClick={() => void this.refresh()}
          >
            Refresh
          </ActionButton>
        </PanelHeader>
        {this._error && (
          <Banner tone="warn" testid="nbrunner-models-error">
            <p>Cannot list models. {this._error}</p>
          </Banner>
        )}
        {models === null && !this._error && (
          <p className="nbrunner-Empty">Loading models…</p>
        )}
        {models !== null && models.length === 0 && (
          <p className="nbrunner-Empty" data-testid="nbrunner-models-empty">
            No registered models yet. In the Jobs panel, “Register model” on a
            completed job that saved one (nbrunner.save_model), or run
            “nbrunner model register JOB NAME”.
          </p>
        )}
        {models !== null && models.length > 0 && (
          <ul className="nbrunner-JobList" aria-label="Models" data-testid="nbrunner-model-list">
            {sortModels(models).map(model => (
              <ModelRow
                key={`${model.name}:${model.version}`}
                model={model}
                server={this._servers.get(model.name) ?? null}
                busy={this._pending.has(model.name)}
                highlighted={this._highlight === `${model.name}:${model.version}`}
                onServe={m => void this._serve(m)}
                onStop={s => void this._stop(s)}
              />
            ))}
          </ul>
        )}
      </div>
    );
  }

  private _models: IModel[] | null = null;
  private _servers = new Map<string, IModelServer>();
  private _error: string | null = null;
  private _pending = new Set<string>();
  private _highlight: string | null = null;
}
