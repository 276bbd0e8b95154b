import { describe, expect, it } from 'vitest';

import { sortModels } from '../src/ordering';
import { IModel } from '../src/types';

describe('sortModels', () => {
  it('sorts by name, newest version first', () => {
    const model = (name: string, version: number): IModel => ({
      name,
      version,
      job: null,
      created_at: null,
      path: '',
      framework: null,
      class_name: null,
      saved_at: null
    });
    const sorted = sortModels([model('b', 1), model('a', 1), model('b', 3), model('a', 2)]);
    expect(sorted.map(m => `${m.name}:${m.version}`)).toEqual(['a:2', 'a:1', 'b:3', 'b:1']);
  });
});
