/**
 * The graph of a pipeline's steps, laid out for drawing (pure): each step in the column of its
 * longest chain of needs (a step is drawn right of every step it needs), in file order within
 * a column; each edge from a need's right side to the step's left side.
 */

/** What the layout reads of a step: the steps it needs. */
export interface IGraphStep {
  needs?: string[] | null;
}

export interface INodeBox {
  name: string;
  /** Column (0: needs nothing) and row within the column. */
  layer: number;
  row: number;
  x: number;
  y: number;
}

export interface IEdgeLine {
  from: string;
  to: string;
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

export interface IGraphLayout {
  nodes: INodeBox[];
  edges: IEdgeLine[];
  width: number;
  height: number;
}

export const NODE_WIDTH = 150;
export const NODE_HEIGHT = 46;
export const GAP_X = 60;
export const GAP_Y = 20;
export const MARGIN = 10;

/**
 * Each step's column: 0 for a step that needs nothing (or only unknown steps), else one more
 * than the highest column of its needs.  A cycle (never accepted by the server) is cut where
 * it closes, so the layout always ends.
 */
export function layers(steps: Record<string, IGraphStep>): Record<string, number> {
  const out: Record<string, number> = {};
  const visiting = new Set<string>();
  const visit = (name: string): number => {
    if (name in out) {
      return out[name];
    }
    if (visiting.has(name)) {
      return -1;
    }
    visiting.add(name);
    let layer = 0;
    for (const need of steps[name]?.needs ?? []) {
      if (need in steps) {
        layer = Math.max(layer, visit(need) + 1);
      }
    }
    visiting.delete(name);
    out[name] = layer;
    return layer;
  };
  Object.keys(steps).forEach(visit);
  return out;
}

/** Boxes and edges of the steps' graph, and the size of the drawing. */
export function layoutPipeline(steps: Record<string, IGraphStep>): IGraphLayout {
  const column = layers(steps);
  const rows: number[] = [];
  const nodes: INodeBox[] = [];
  const at: Record<string, INodeBox> = {};
  for (const name of Object.keys(steps)) {
    const layer = column[name];
    const row = rows[layer] ?? 0;
    rows[layer] = row + 1;
    const box = {
      name,
      layer,
      row,
      x: MARGIN + layer * (NODE_WIDTH + GAP_X),
      y: MARGIN + row * (NODE_HEIGHT + GAP_Y)
    };
    nodes.push(box);
    at[name] = box;
  }
  const edges: IEdgeLine[] = [];
  for (const node of nodes) {
    for (const need of steps[node.name]?.needs ?? []) {
      const from = at[need];
      if (from) {
        edges.push({
          from: need,
          to: node.name,
          x1: from.x + NODE_WIDTH,
          y1: from.y + NODE_HEIGHT / 2,
          x2: node.x,
          y2: node.y + NODE_HEIGHT / 2
        });
      }
    }
  }
  const columns = rows.length;
  const height = Math.max(0, ...rows);
  return {
    nodes,
    edges,
    width: columns ? 2 * MARGIN + columns * NODE_WIDTH + (columns - 1) * GAP_X : 0,
    height: height ? 2 * MARGIN + height * NODE_HEIGHT + (height - 1) * GAP_Y : 0
  };
}

/** "3/5 steps completed, 1 running" (a pipeline row's summary). */
export function stepSummary(steps: Record<string, { status: string }>): string {
  const all = Object.values(steps);
  const count = (status: string) => all.filter(s => s.status === status).length;
  const parts = [`${count('completed')}/${all.length} steps completed`];
  for (const status of ['running', 'queued', 'failed', 'skipped', 'cancelled']) {
    const n = count(status);
    if (n) {
      parts.push(`${n} ${status}`);
    }
  }
  return parts.join(', ');
}

/** Whether a file in the browser is a pipeline file ("Run pipeline" is offered on it). */
export function isPipelineFile(path: string): boolean {
  return /\.pipeline\.ya?ml$/i.test(path);
}

/** What a step's box says under its name: its status and why it waits, why it failed, that it was
 * reused, or its job; cut to `width` characters with an ellipsis. */
export function stepNote(
  step: {
    status: string;
    job?: string | null;
    waiting?: { message: string } | null;
    error?: string | null;
    reused?: boolean;
  },
  width = 26
): string {
  const why = step.waiting?.message ?? step.error ?? (step.reused ? 'reused' : step.job ?? '');
  const text = why ? `${step.status} · ${why}` : step.status;
  return text.length > width ? `${text.slice(0, width - 1)}…` : text;
}
