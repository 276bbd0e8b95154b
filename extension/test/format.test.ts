import { describe, expect, it } from 'vitest';

import {
  colorMap,
  formatDuration,
  formatNumber,
  formatParameters,
  formatParametersShort,
  jobElapsed,
  latestMetric,
  metricsTitle,
  PALETTE,
  parseTime,
  relativeTime,
  shortValue
} from '../src/format';
import { isFinished } from '../src/types';
import { at, job } from './helpers';

describe('parseTime', () => {
  it('reads ISO times, a time without a zone as UTC', () => {
    const utc = Date.UTC(2024, 0, 2, 3, 4, 5, 600);
    expect(parseTime('2024-01-02T03:04:05.600')).toBe(utc);
    expect(parseTime('2024-01-02T03:04:05.600Z')).toBe(utc);
    expect(parseTime('2024-01-02T05:04:05.600+02:00')).toBe(utc);
    expect(parseTime('2024-01-02T01:04:05.600-0200')).toBe(utc);
  });

  it.each([null, undefined, '', 'yesterday'])('is null for %j', value => {
    expect(parseTime(value)).toBeNull();
  });
});

describe('formatDuration', () => {
  it.each([
    [0, '0s'],
    [999, '0s'],
    [59_999, '59s'],
    [60_000, '1m 00s'],
    [65_000, '1m 05s'],
    [3_599_000, '59m 59s'],
    [3_661_000, '1h 01m'],
    [50 * 3_600_000, '50h 00m'],
    [-5_000, '0s']
  ])('%d ms is "%s"', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});

describe('relativeTime', () => {
  const now = at('2024-06-01T12:00:00Z');
  it.each([
    [0, 'in 0s'],
    [3, 'in 3s'],
    [-12, '12s ago'],
    [-90, '2 min ago'],
    [30 * 60, 'in 30 min'],
    [3 * 3600, 'in 3 h'],
    [-47 * 3600, '47 h ago'],
    [-3 * 86400, '3 d ago']
  ])('%d s from now is "%s"', (seconds, text) => {
    expect(relativeTime(now + seconds * 1000, now)).toBe(text);
  });
  it('says a past time within a second of now, or ahead of the clock, is "0s ago"', () => {
    expect(relativeTime(now + 300, now, true)).toBe('0s ago');
    expect(relativeTime(now - 300, now, true)).toBe('0s ago');
    expect(relativeTime(now + 5000, now, true)).toBe('0s ago');
    expect(relativeTime(now - 12000, now, true)).toBe('12s ago');
  });
});

describe('jobElapsed', () => {
  const now = at('2024-06-01T12:10:00Z');
  const created_at = '2024-06-01T12:00:00Z';
  const started_at = '2024-06-01T12:01:00Z';
  const finished_at = '2024-06-01T12:04:30Z';

  it('is the run time once started', () => {
    expect(jobElapsed(job({ created_at, started_at, finished_at }), now)).toEqual({
      text: '3m 30s',
      title: 'Run time'
    });
    expect(jobElapsed(job({ created_at, started_at }), now)).toEqual({
      text: '9m 00s',
      title: 'Running for'
    });
  });

  it('is the waiting time before a start', () => {
    expect(jobElapsed(job({ created_at, finished_at }), now)).toEqual({
      text: '4m 30s',
      title: 'Ended after'
    });
    expect(jobElapsed(job({ created_at }), now)).toEqual({ text: '10m 00s', title: 'Queued for' });
    expect(jobElapsed(job(), now)).toEqual({ text: '–', title: 'Elapsed time' });
  });
});

describe('formatNumber', () => {
  it.each([
    [3, '3'],
    [0, '0'],
    [-12, '-12'],
    [0.5, '0.5'],
    [1.1, '1.1'],
    [0.123456, '0.1235'],
    [-2.25, '-2.25'],
    [0.00001, '1.000e-5'],
    [123456.7, '1.235e+5'],
    ['text', 'text'],
    [true, 'true'],
    [null, 'null'],
    [[1, 'a'], '[1,"a"]']
  ])('%j is "%s"', (value, text) => {
    expect(formatNumber(value)).toBe(text);
  });
});

describe('latestMetric', () => {
  it('prefers the telling metrics, in order', () => {
    expect(latestMetric(job({ metrics: { loss: 0.5, accuracy: 0.9, step: 3 } }))).toEqual([
      'accuracy',
      '0.9'
    ]);
    expect(latestMetric(job({ metrics: { train_loss: 1, val_loss: 2 } }))).toEqual(['val_loss', '2']);
  });

  it('takes another metric over the step counters, a counter only when alone', () => {
    expect(latestMetric(job({ metrics: { epoch: 3, reward: 1.5 } }))).toEqual(['reward', '1.5']);
    expect(latestMetric(job({ metrics: { epoch: 3 } }))).toEqual(['epoch', '3']);
    expect(latestMetric(job({ metrics: { phase: 'eval', n: [1] } }))).toEqual(['phase', 'eval']);
  });

  it('is null without a number or text metric', () => {
    expect(latestMetric(job({ metrics: null }))).toBeNull();
    expect(latestMetric(job({ metrics: {} }))).toBeNull();
    expect(latestMetric(job({ metrics: { hist: [1, 2] } }))).toBeNull();
  });

  it('lists every metric in the tooltip', () => {
    expect(metricsTitle(job({ metrics: { loss: 0.25, step: 3, tag: 'a' } }))).toBe(
      'loss: 0.25\nstep: 3\ntag: a'
    );
    expect(metricsTitle(job({ metrics: null }))).toBe('');
  });
});

describe('colorMap', () => {
  it('gives each id the next palette color, wrapping around', () => {
    const ids = Array.from({ length: PALETTE.length + 1 }, (_, i) => `j${i}`);
    const colors = colorMap(['j0', ...ids, 'j1']);
    expect(colors.size).toBe(PALETTE.length + 1);
    expect(colors.get('j0')).toBe(PALETTE[0]);
    expect(colors.get('j1')).toBe(PALETTE[1]);
    expect(colors.get(`j${PALETTE.length}`)).toBe(PALETTE[0]);
  });
});

describe('parameters', () => {
  const parameters = { lr: 0.0123, name: 'x y', layers: [64, 32], on: true, tiny: 0.0000321 };

  it('formats them in full, for tooltips', () => {
    expect(formatParameters(parameters)).toBe(
      'lr=0.0123, name=x y, layers=[64,32], on=true, tiny=0.0000321'
    );
    expect(formatParameters(null)).toBe('');
  });

  it('formats them short, on one line', () => {
    expect(formatParametersShort(parameters)).toBe(
      'lr=0.0123 name=x y layers=[64,32] on=true tiny=3.21e-5'
    );
    expect(formatParametersShort(undefined)).toBe('');
  });

  it.each([
    [0.123456, '0.1235'],
    [2.5, '2.5'],
    [0.00001, '1e-5'],
    [123456.7, '1.23e+5'],
    [64, '64'],
    ['s', 's'],
    [null, 'null']
  ])('shortValue(%j) is "%s"', (value, text) => {
    expect(shortValue(value)).toBe(text);
  });
});

describe('isFinished', () => {
  it.each([
    ['completed', true],
    ['failed', true],
    ['cancelled', true],
    ['queued', false],
    ['running', false],
    ['', false],
    [null, false],
    [undefined, false]
  ])('%j: %s', (status, finished) => {
    expect(isFinished(status)).toBe(finished);
  });
});
