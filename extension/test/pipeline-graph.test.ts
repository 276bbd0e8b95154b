import { describe, expect, it } from 'vitest';

import {
  GAP_X,
  isPipelineFile,
  layers,
  layoutPipeline,
  MARGIN,
  NODE_HEIGHT,
  NODE_WIDTH,
  stepNote,
  stepSummary
} from '../src/pipeline-graph';

describe('layers', () => {
  it("puts each step one column right of its deepest need", () => {
    const steps = {
      prep: { needs: [] },
      train: { needs: ['prep'] },
      side: {},
      report: { needs: ['train', 'prep', 'side'] }
    };
    expect(layers(steps)).toEqual({ prep: 0, train: 1, side: 0, report: 2 });
  });

  it('ignores unknown needs and ends on a cycle', () => {
    expect(layers({ a: { needs: ['zz'] } })).toEqual({ a: 0 });
    const looped = layers({ a: { needs: ['b'] }, b: { needs: ['a'] } });
    expect(Object.keys(looped).sort()).toEqual(['a', 'b']);
  });
});

describe('layoutPipeline', () => {
  it('places boxes by column and file order, and draws an edge per need', () => {
    const g = layoutPipeline({ a: {}, b: { needs: ['a'] }, c: { needs: ['a'] }, d: { needs: ['b', 'c'] } });
    const at = Object.fromEntries(g.nodes.map(n => [n.name, n]));
    expect([at.a.layer, at.b.layer, at.c.layer, at.d.layer]).toEqual([0, 1, 1, 2]);
    expect([at.b.row, at.c.row]).toEqual([0, 1]);
    expect(at.b.x).toBe(MARGIN + NODE_WIDTH + GAP_X);
    expect(at.c.y).toBeGreaterThan(at.b.y);
    expect(g.edges.map(e => `${e.from}>${e.to}`)).toEqual(['a>b', 'a>c', 'b>d', 'c>d']);
    const ab = g.edges[0];
    expect([ab.x1, ab.y1, ab.x2, ab.y2]).toEqual([
      at.a.x + NODE_WIDTH,
      at.a.y + NODE_HEIGHT / 2,
      at.b.x,
      at.b.y + NODE_HEIGHT / 2
    ]);
    expect(g.width).toBe(2 * MARGIN + 3 * NODE_WIDTH + 2 * GAP_X);
    for (const n of g.nodes) {
      expect(n.x + NODE_WIDTH).toBeLessThanOrEqual(g.width);
      expect(n.y + NODE_HEIGHT).toBeLessThanOrEqual(g.height);
    }
  });

  it('draws nothing for no steps', () => {
    expect(layoutPipeline({})).toEqual({ nodes: [], edges: [], width: 0, height: 0 });
  });
});

describe('stepSummary and isPipelineFile', () => {
  it('counts the steps by status', () => {
    expect(
      stepSummary({ a: { status: 'completed' }, b: { status: 'running' }, c: { status: 'pending' } })
    ).toBe('1/3 steps completed, 1 running');
  });

  it('knows pipeline files by their name', () => {
    expect(isPipelineFile('x/digits.pipeline.yaml')).toBe(true);
    expect(isPipelineFile('digits.PIPELINE.yml')).toBe(true);
    expect(isPipelineFile('sweep.yaml')).toBe(false);
  });
});

describe('stepNote', () => {
  it('says why a step waits or failed, cut with an ellipsis', () => {
    expect(stepNote({ status: 'pending', waiting: { message: 'waits for prep' } })).toBe('pending · waits for prep');
    expect(stepNote({ status: 'pending', waiting: { message: 'waits for prep, train' } })).toBe(
      'pending · waits for prep,…'
    );
    expect(stepNote({ status: 'completed', job: 'abc', reused: true })).toBe('completed · reused');
    expect(stepNote({ status: 'running', job: 'j1' })).toBe('running · j1');
    expect(stepNote({ status: 'skipped' })).toBe('skipped');
  });
});
