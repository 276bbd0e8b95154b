/**
 * GPUs over time, stacked step areas in plain SVG with a legend: of every job (the default),
 * or of other holders such as accounts (`noun`; test ids start with `testid`, and each series
 * carries `data-<noun>-id`).
 */
import * as React from 'react';

import {
  CHART_HEIGHT as H,
  formatTick,
  MARGIN as M,
  timelineLabel,
  timelineLayout,
  timelineSeries
} from '../timeline';
import { ITimelineJob } from '../types';

export function TimelineChart(props: {
  jobs: ITimelineJob[];
  colors: Map<string, string>;
  names: Map<string, string>;
  capacity: number;
  now: number;
  windowMs: number | null;
  width?: number;
  /** What a series is ("job", "account"). */
  noun?: string;
  /** Prefix of the test ids (default `nbrunner-timeline`). */
  testid?: string;
  /** What the chart says when no series holds a GPU. */
  emptyText?: string;
}): React.ReactElement {
  const W = props.width ?? 760;
  const noun = props.noun ?? 'job';
  const tid = props.testid ?? 'nbrunner-timeline';
  const idAttribute = `data-${noun}-id`;
  const layout = timelineLayout(timelineSeries(props.jobs), {
    capacity: props.capacity,
    now: props.now,
    windowMs: props.windowMs,
    width: W
  });
  if (layout === null) {
    return (
      <p className="nbrunner-Empty" data-testid={`${tid}-empty`}>
        {props.emptyText ?? 'No GPU allocation recorded yet.'}
      </p>
    );
  }
  const { x, y } = layout;
  const plotH = H - M.top - M.bottom;
  const span = layout.end - layout.start;
  return (
    <div className="nbrunner-Timeline" data-testid={tid}>
      <svg
        className="nbrunner-Timeline-svg"
        width={W}
        height={H}
        viewBox={`0 0 ${W} ${H}`}
        role="img"
        aria-label={timelineLabel(layout, noun)}
      >
        <g className="nbrunner-Timeline-grid">
          {layout.yTicks.map(v => (
            <g key={`y${v}`}>
              <line x1={M.left} x2={W - M.right} y1={y(v)} y2={y(v)} />
              <text x={M.left - 6} y={y(v)} textAnchor="end" dominantBaseline="middle">
                {v}
              </text>
            </g>
          ))}
        </g>
        <g className="nbrunner-Timeline-areas">
          {layout.areas.map(({ series: s, d, current, peak }) => {
            const color = props.colors.get(s.id) ?? '#888';
            return (
              <path
                key={s.id}
                className="nbrunner-Timeline-series"
                data-testid={`${tid}-series`}
                {...{ [idAttribute]: s.id }}
                d={d}
                fill={color}
                fillOpacity={0.75}
                stroke={color}
                strokeWidth={1}
              >
                <title>{`${s.name === s.id ? s.name : `${s.name} (${s.id})`}: ${current} GPU${current === 1 ? '' : 's'} now, up to ${peak}`}</title>
              </path>
            );
          })}
        </g>
        {props.capacity > 0 && (
          <g className="nbrunner-Timeline-capacity" data-testid={`${tid}-capacity`}>
            <line
              x1={M.left}
              x2={W - M.right}
              y1={y(props.capacity)}
              y2={y(props.capacity)}
            />
            <text x={W - M.right - 2} y={y(props.capacity) - 4} textAnchor="end">
              capacity {props.capacity}
            </text>
          </g>
        )}
        <g className="nbrunner-Timeline-axis" data-testid={`${tid}-axis`}>
          <line x1={M.left} x2={W - M.right} y1={M.top + plotH} y2={M.top + plotH} />
          <line x1={M.left} x2={M.left} y1={M.top} y2={M.top + plotH} />
          {layout.xTicks.map(t => (
            <g key={`x${t}`}>
              <line x1={x(t)} x2={x(t)} y1={M.top + plotH} y2={M.top + plotH + 4} />
              <text x={x(t)} y={M.top + plotH + 16} textAnchor="middle">
                {formatTick(t, span)}
              </text>
            </g>
          ))}
          <text
            x={12}
            y={M.top + plotH / 2}
            textAnchor="middle"
            transform={`rotate(-90 12 ${M.top + plotH / 2})`}
          >
            GPUs
          </text>
        </g>
      </svg>
      <ul
        className="nbrunner-Timeline-legend"
        data-testid={`${tid}-legend`}
        aria-label={`${noun[0].toUpperCase()}${noun.slice(1)}s in the timeline`}
      >
        {layout.areas.map(({ series: s, current }) => (
          <li key={s.id} data-testid={`${tid}-legend-item`} {...{ [idAttribute]: s.id }}>
            <span
              className="nbrunner-Timeline-swatch"
              style={{ background: props.colors.get(s.id) }}
              aria-hidden="true"
            />
            <span className="nbrunner-Timeline-name">{props.names.get(s.id) ?? s.name}</span>
            {s.id !== (props.names.get(s.id) ?? s.name) && <code>{s.id}</code>}
            <span className="nbrunner-Timeline-now">
              {current} GPU{current === 1 ? '' : 's'} now
            </span>
          </li>
        ))}
      </ul>
    </div>
  );
}
