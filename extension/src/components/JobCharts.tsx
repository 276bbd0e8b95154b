/** A job page's charts: GPUs held over time, and a chart per recorded metric. */
import * as React from 'react';

import { formatDuration, PALETTE } from '../format';
import { gpuSeries, metricSeries } from '../job-charts';
import { IJob, IMetricsRow, isFinished, ITimelinePoint } from '../types';
import { LineChart } from './LineChart';

export interface IJobChartsProps {
  job: IJob;
  metrics: IMetricsRow[];
  /** Why the metrics could not be read, if they could not. */
  metricsError: string | null;
  gpus: ITimelinePoint[];
}

export function JobCharts({ job, metrics, metricsError, gpus }: IJobChartsProps): React.ReactElement {
  const series = metricSeries(metrics);
  const { points: gpuPoints, xEnd } = gpuSeries(gpus, !isFinished(job.status), Date.now());
  return (
    <section className="nbrunner-JobPage-section" data-testid="nbrunner-jobpage-charts">
      <h3>Over time</h3>
      <div className="nbrunner-JobPage-charts">
        {gpuPoints.length > 0 ? (
          <LineChart
            title="GPUs held"
            points={gpuPoints}
            color="#1976d2"
            step
            xEnd={xEnd}
            xLabel="time since queued"
            formatX={x => formatDuration(x * 1000)}
            testid="nbrunner-jobpage-gpu-chart"
          />
        ) : (
          <p className="nbrunner-Empty">No GPU allocation recorded.</p>
        )}
        {series.map((s, i) => (
          <LineChart
            key={s.name}
            title={s.name}
            points={s.points}
            color={PALETTE[(i + 1) % PALETTE.length]}
            xLabel={s.x}
            testid="nbrunner-jobpage-metric-chart"
          />
        ))}
      </div>
      {series.length === 0 && (
        <p className="nbrunner-Empty" data-testid="nbrunner-jobpage-no-metrics">
          {metricsError
            ? `Metrics unavailable: ${metricsError}`
            : 'No metrics recorded (call nbrunner.record("loss", value) in the notebook).'}
        </p>
      )}
    </section>
  );
}
