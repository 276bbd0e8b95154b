import { describe, expect, it } from 'vitest';

import {
  CHART_HEIGHT,
  chartWidth,
  countTicks,
  formatTick,
  MARGIN,
  timelineLabel,
  timelineLayout,
  timelineSeries,
  timeTicks,
  valueAt
} from '../src/timeline';
import { at } from './helpers';

const T0 = '2024-06-01T12:00:00Z';
const t0 = at(T0);
const iso = (seconds: number) => new Date(t0 + seconds * 1000).toISOString();

describe('timelineSeries', () => {
  it('sorts points, drops bad times and jobs without points', () => {
    const series = timelineSeries([
      {
        id: 'a',
        name: '',
        points: [
          { t: iso(30), gpus: 1 },
          { t: 'never', gpus: 5 },
          { t: T0, gpus: 2 }
        ]
      },
      { id: 'b', name: 'b job', points: [] },
      { id: 'c', name: 'c job', points: [{ t: 'never', gpus: 1 }] },
      { id: 'd', name: 'd job', points: [{ t: T0, gpus: 'x' as unknown as number }] }
    ]);
    expect(series).toEqual([
      {
        id: 'a',
        name: 'a',
        points: [
          { t: t0, gpus: 2 },
          { t: t0 + 30000, gpus: 1 }
        ]
      },
      { id: 'd', name: 'd job', points: [{ t: t0, gpus: 0 }] }
    ]);
  });
});

describe('valueAt', () => {
  it('is a step function, 0 before the first point', () => {
    const s = { id: 'a', name: 'a', points: [{ t: 10, gpus: 2 }, { t: 20, gpus: 1 }] };
    expect([5, 10, 15, 20, 99].map(t => valueAt(s, t))).toEqual([0, 2, 2, 1, 1]);
  });
});

describe('ticks', () => {
  it('counts GPUs in round steps', () => {
    expect(countTicks(1)).toEqual([0, 1]);
    expect(countTicks(4)).toEqual([0, 1, 2, 3, 4]);
    expect(countTicks(12)).toEqual([0, 5, 10]);
    expect(countTicks(64)).toEqual([0, 20, 40, 60]);
  });

  it('puts times on round clock boundaries', () => {
    const start = at('2024-06-01T12:00:30Z');
    const ticks = timeTicks(start, start + 5 * 60000, 6);
    expect(ticks.map(t => new Date(t).toISOString().slice(11, 19))).toEqual([
      '12:01:00',
      '12:02:00',
      '12:03:00',
      '12:04:00',
      '12:05:00'
    ]);
    expect(timeTicks(start, start + 3 * 3600000, 3).length).toBeLessThanOrEqual(3);
  });

  it('labels times with seconds over short spans, with the date over long ones', () => {
    const t = at('2024-06-01T09:05:07Z');
    expect(formatTick(t, 5 * 60000)).toBe('09:05:07');
    expect(formatTick(t, 3600000)).toBe('09:05');
    expect(formatTick(t, 3 * 86400000)).toBe('06-01 09:05');
  });
});

describe('chartWidth', () => {
  it.each([
    [0, 760],
    [200, 320],
    [800, 760],
    [2000, 1100]
  ])('a %d px container draws %d px', (container, width) => {
    expect(chartWidth(container)).toBe(width);
  });
});

describe('timelineLayout', () => {
  const jobs = [
    { id: 'a', name: 'a', points: [{ t: T0, gpus: 2 }] },
    { id: 'b', name: 'b', points: [{ t: iso(30), gpus: 1 }] },
    { id: 'idle', name: 'idle', points: [{ t: T0, gpus: 0 }] }
  ];
  const options = { capacity: 4, now: t0 + 60000, windowMs: null, width: 760 };

  it('is null without series', () => {
    expect(timelineLayout([], options)).toBeNull();
  });

  it('stacks the jobs that hold GPUs, up to the capacity', () => {
    const layout = timelineLayout(timelineSeries(jobs), options)!;
    expect([layout.start, layout.end]).toEqual([t0, t0 + 60000]);
    expect(layout.yMax).toBe(4);
    expect(layout.yTicks).toEqual([0, 1, 2, 3, 4]);
    expect(layout.areas.map(a => [a.series.id, a.current, a.peak])).toEqual([
      ['a', 2, 2],
      ['b', 1, 1]
    ]);
    // Scales: the window spans the plot, 0..yMax GPUs its height.
    expect(layout.x(t0)).toBe(MARGIN.left);
    expect(layout.x(t0 + 60000)).toBe(760 - MARGIN.right);
    expect(layout.y(0)).toBe(CHART_HEIGHT - MARGIN.bottom);
    expect(layout.y(4)).toBe(MARGIN.top);
    // a: 2 GPUs over the whole window, on the floor; b: 1 GPU on top of a from 30 s on.
    expect(layout.areas[0].d).toBe(
      'M40.0,112.0L392.0,112.0L392.0,112.0L744.0,112.0L744.0,212.0L392.0,212.0L392.0,212.0L40.0,212.0Z'
    );
    expect(layout.areas[1].d).toBe(
      'M40.0,112.0L392.0,112.0L392.0,62.0L744.0,62.0L744.0,112.0L392.0,112.0L392.0,112.0L40.0,112.0Z'
    );
    expect(timelineLabel(layout)).toBe('GPU allocation per job over the last 1m 00s; 2 jobs');
    expect(timelineLabel(layout, 'account')).toBe('GPU allocation per account over the last 1m 00s; 2 accounts');
  });

  it('raises the axis over the capacity when jobs hold more', () => {
    const layout = timelineLayout(timelineSeries(jobs), { ...options, capacity: 1 })!;
    expect(layout.yMax).toBe(3);
  });

  it('shows the last window only, and a minute around a single instant', () => {
    const windowed = timelineLayout(timelineSeries(jobs), { ...options, windowMs: 10000 })!;
    expect([windowed.start, windowed.end]).toEqual([t0 + 50000, t0 + 60000]);
    const instant = timelineLayout(timelineSeries(jobs.slice(0, 1)), { ...options, now: t0 + 500 })!;
    expect([instant.start, instant.end]).toEqual([t0 + 500 - 60000, t0 + 500]);
    expect(timelineLabel(instant)).toBe('GPU allocation per job over the last 1m 00s; 1 job');
    expect(timelineLabel(instant, 'account')).toBe('GPU allocation per account over the last 1m 00s; 1 account');
  });
});
