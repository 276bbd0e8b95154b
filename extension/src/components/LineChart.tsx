/** A small line (or step) chart in plain SVG: one series, axes with min/max ticks. */
import * as React from 'react';

import { formatNumber } from '../format';

export interface ILineChartProps {
  /** Points [x, y], x increasing. */
  points: Array<[number, number]>;
  title: string;
  color: string;
  /** Draw steps (a value holds until the next point), e.g. GPUs held. */
  step?: boolean;
  /** Format an x value for the axis (default: a number). */
  formatX?: (x: number) => string;
  xLabel?: string;
  testid?: string;
  /** Extra end of the x range (e.g. now, for a step series still holding its value). */
  xEnd?: number;
  width?: number;
  height?: number;
}

const PAD = { left: 48, right: 12, top: 8, bottom: 30 };

export function LineChart(props: ILineChartProps): React.ReactElement {
  const width = props.width ?? 360;
  const height = props.height ?? 160;
  const fmtX = props.formatX ?? ((x: number) => formatNumber(x));
  const points = props.points;
  const xs = points.map(p => p[0]);
  const ys = points.map(p => p[1]);
  let x0 = Math.min(...xs);
  let x1 = Math.max(...xs, props.xEnd ?? -Infinity);
  let y0 = Math.min(...ys);
  let y1 = Math.max(...ys);
  if (props.step) {
    y0 = Math.min(0, y0); // GPUs: from zero
  }
  if (x1 === x0) {
    x1 = x0 + 1;
  }
  if (y1 === y0) {
    const d = Math.abs(y0) * 0.1 || 1;
    y0 -= props.step ? 0 : d;
    y1 += d;
  }
  const w = width - PAD.left - PAD.right;
  const h = height - PAD.top - PAD.bottom;
  const sx = (x: number) => PAD.left + ((x - x0) / (x1 - x0)) * w;
  const sy = (y: number) => PAD.top + h - ((y - y0) / (y1 - y0)) * h;
  let d = '';
  points.forEach(([x, y], i) => {
    if (i === 0) {
      d += `M${sx(x).toFixed(1)},${sy(y).toFixed(1)}`;
    } else if (props.step) {
      d += `H${sx(x).toFixed(1)}V${sy(y).toFixed(1)}`;
    } else {
      d += `L${sx(x).toFixed(1)},${sy(y).toFixed(1)}`;
    }
  });
  if (props.step && props.xEnd !== undefined && points.length) {
    d += `H${sx(x1).toFixed(1)}`;
  }
  const last = points[points.length - 1];
  return (
    <figure
      className="nbrunner-Chart"
      data-testid={props.testid}
      data-points={points.length}
      data-title={props.title}
    >
      <figcaption className="nbrunner-Chart-title">
        {props.title}
        {last && (
          <span className="nbrunner-Chart-last" data-testid="nbrunner-chart-last">
            {' '}
            last {formatNumber(last[1])}
          </span>
        )}
      </figcaption>
      <svg
        width={width}
        height={height}
        viewBox={`0 0 ${width} ${height}`}
        role="img"
        aria-label={`${props.title} over ${props.xLabel ?? 'x'}`}
      >
        <line
          className="nbrunner-Chart-axis"
          x1={PAD.left}
          y1={PAD.top + h}
          x2={PAD.left + w}
          y2={PAD.top + h}
        />
        <line
          className="nbrunner-Chart-axis"
          x1={PAD.left}
          y1={PAD.top}
          x2={PAD.left}
          y2={PAD.top + h}
        />
        <text className="nbrunner-Chart-tick" x={PAD.left - 4} y={PAD.top + 8} textAnchor="end">
          {formatNumber(y1)}
        </text>
        <text className="nbrunner-Chart-tick" x={PAD.left - 4} y={PAD.top + h} textAnchor="end">
          {formatNumber(y0)}
        </text>
        <text className="nbrunner-Chart-tick" x={PAD.left} y={height - 14} textAnchor="start">
          {fmtX(x0)}
        </text>
        <text className="nbrunner-Chart-tick" x={PAD.left + w} y={height - 14} textAnchor="end">
          {fmtX(x1)}
        </text>
        {props.xLabel && (
          <text
            className="nbrunner-Chart-tick"
            x={PAD.left + w / 2}
            y={height - 2}
            textAnchor="middle"
          >
            {props.xLabel}
          </text>
        )}
        <path
          className="nbrunner-Chart-line"
          d={d}
          fill="none"
          stroke={props.color}
          strokeWidth={2}
        />
        {!props.step &&
          points.length <= 60 &&
          points.map(([x, y], i) => (
            <circle key={i} cx={sx(x)} cy={sy(y)} r={2.5} fill={props.color}>
              <title>{`${fmtX(x)}: ${formatNumber(y)}`}</title>
            </circle>
          ))}
      </svg>
    </figure>
  );
}
