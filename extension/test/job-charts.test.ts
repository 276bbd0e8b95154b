import { describe, expect, it } from 'vitest';

import { gpuSeries, metricSeries } from '../src/job-charts';
import { at } from './helpers';

describe('metricSeries', () => {
  it('makes a series per numeric metric, against the step or the row count', () => {
    const rows = [
      { step: 1, loss: 0.5, acc: 0.1, time: 3 },
      { step: 2, loss: 0.4, note: 'x' },
      { loss: 0.3, progress: 0.5 },
      null as unknown as { [key: string]: number },
      { epoch: 7, acc: 0.2 }
    ];
    expect(metricSeries(rows)).toEqual([
      { name: 'loss', x: 'step', points: [[1, 0.5], [2, 0.4], [3, 0.3]] },
      { name: 'acc', x: 'step', points: [[1, 0.1], [7, 0.2]] }
    ]);
  });

  it('uses the record count when rows have no step', () => {
    expect(metricSeries([{ reward: 1 }, { reward: 3 }])).toEqual([
      { name: 'reward', x: 'record', points: [[1, 1], [2, 3]] }
    ]);
    expect(metricSeries([])).toEqual([]);
  });
});

describe('gpuSeries', () => {
  const t0 = at('2024-06-01T12:00:00Z');
  const points = [
    { t: '2024-06-01T12:00:00Z', gpus: 1 },
    { t: 'bad', gpus: 9 },
    { t: '2024-06-01T12:00:10Z', gpus: 2 }
  ];

  it('measures seconds since the first point, carried on to now while running', () => {
    expect(gpuSeries(points, true, t0 + 30000)).toEqual({
      points: [[0, 1], [10, 2]],
      xEnd: 30
    });
    expect(gpuSeries(points, true, t0 + 5000).xEnd).toBe(10);
  });

  it('stops at the last point once the job has ended', () => {
    expect(gpuSeries(points, false, t0 + 30000).xEnd).toBeUndefined();
    expect(gpuSeries([], true, t0)).toEqual({ points: [], xEnd: undefined });
  });
});
