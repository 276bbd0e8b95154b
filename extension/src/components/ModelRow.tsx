/** One registered model version in the Models panel: name, version, job, framework, saved_at, Serve/Stop. */
import * as React from 'react';

import { parseTime } from '../format';
import { IModel, IModelServer } from '../types';
import { ActionButton } from './ActionButton';

export interface IModelRowProps {
  model: IModel;
  /** The server of this model's name, if one runs (maybe of another version). */
  server: IModelServer | null;
  /** A start or stop of this name is under way. */
  busy: boolean;
  highlighted: boolean;
  onServe: (model: IModel) => void;
  onStop: (server: IModelServer) => void;
}

function when(value: string | null): { text: string; title: string } {
  const t = parseTime(value);
  if (t === null) {
    return { text: '—', title: 'unknown' };
  }
  const date = new Date(t);
  return { text: date.toLocaleString(), title: date.toISOString() };
}

export function ModelRow(props: IModelRowProps): React.ReactElement {
  const { model, server } = props;
  const label = `${model.name}:${model.version}`;
  const servingThis = !!server && server.version === model.version;
  const servingOther = !!server && !servingThis;
  const saved = when(model.saved_at ?? model.created_at);
  return (
    <li
      className={
        'nbrunner-ModelRow' +
        (servingThis ? ' nbrunner-mod-serving' : '') +
        (props.highlighted ? ' nbrunner-mod-highlight' : '')
      }
      data-testid="nbrunner-model"
      data-model={label}
      data-serving={servingThis ? 'true' : 'false'}
      aria-label={`Model ${label}${servingThis ? ', serving' : ''}`}
    >
      <div className="nbrunner-ModelRow-head">
        <span className="nbrunner-ModelRow-name" data-testid="nbrunner-model-name-label">
          {model.name}
        </span>
        <span className="nbrunner-ModelRow-version" data-testid="nbrunner-model-version">
          v{model.version}
        </span>
        {servingThis && (
          <span className="nbrunner-ModelRow-live" title="Being served">
            serving
          </span>
        )}
      </div>
      <div className="nbrunner-ModelRow-stats">
        <span title="The job that trained it">
          job <code data-testid="nbrunner-model-job">{model.job ?? '—'}</code>
        </span>
        <span data-testid="nbrunner-model-framework" title={model.class_name ?? ''}>
          {model.framework ?? 'unknown framework'}
          {model.class_name ? ` (${model.class_name})` : ''}
        </span>
        <span data-testid="nbrunner-model-saved" title={saved.title}>
          saved {saved.text}
        </span>
      </div>
      <div className="nbrunner-ModelRow-controls">
        {servingThis ? (
          <>
            <a
              className="nbrunner-ModelRow-url"
              data-testid="nbrunner-model-url"
              href={`${server!.url}/health`}
              target="_blank"
              rel="noopener noreferrer"
              title={`POST ${server!.url}/predict {"inputs": [[...]]}; GET ${server!.url}/health (on the Jupyter server's host)`}
            >
              {server!.url}
            </a>
            <ActionButton
              testid="nbrunner-model-stop"
              label={`Stop serving ${label}`}
              title={`Stop the server of ${label} (pid ${server!.pid})`}
              tone="warn"
              disabled={props.busy}
              onClick={() => props.onStop(server!)}
            >
              {props.busy ? 'Stopping…' : 'Stop'}
            </ActionButton>
          </>
        ) : (
          <ActionButton
            testid="nbrunner-model-serve"
            label={`Serve ${label}`}
            title={
              servingOther
                ? `${server!.model} is being served: stop it first`
                : `Serve ${label} over HTTP (POST /predict, GET /health) on a free port`
            }
            disabled={props.busy || servingOther}
            onClick={() => props.onServe(model)}
          >
            {props.busy ? 'Starting…' : 'Serve'}
          </ActionButton>
        )}
      </div>
    </li>
  );
}
