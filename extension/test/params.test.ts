import { describe, expect, it } from 'vitest';

import {
  formatJSON,
  inferType,
  inputToValue,
  parametersFromNotebook,
  parseParametersSource,
  pythonLiteralToJSON,
  valueToInput
} from '../src/params';

describe('inferType', () => {
  it.each([
    [null, 'none'],
    [true, 'bool'],
    [3, 'int'],
    [3.5, 'float'],
    ['a', 'str'],
    [[1], 'list'],
    [{ a: 1 }, 'dict']
  ] as const)('%j is %s', (value, type) => {
    expect(inferType(value as any)).toBe(type);
  });
});

describe('pythonLiteralToJSON', () => {
  it.each([
    ['True', true],
    ['False', false],
    ['None', null],
    ['42', 42],
    ['-3', -3],
    ['1_000', 1000],
    ['1e-3', 0.001],
    ['.5', 0.5],
    ["'single'", 'single'],
    ["'it\\'s'", "it's"],
    ['"say \\"hi\\""', 'say "hi"'],
    ["'a\"b'", 'a"b'],
    ['[1, 2,]', [1, 2]],
    ["{'a': [True, None], 'b': 'x',}", { a: [true, null], b: 'x' }]
  ])('reads %s', (source, value) => {
    expect(pythonLiteralToJSON(source)).toEqual(value);
  });

  it.each(['', '   ', 'lr', 'f(1)', "'unclosed", '(1, 2)', '1 +', '{1: 2}'])(
    'refuses %j (not a plain literal)',
    source => {
      expect(pythonLiteralToJSON(source)).toBeUndefined();
    }
  );
});

describe('parseParametersSource', () => {
  const source = [
    '# the parameters',
    'lr = 0.01  # learning rate',
    'epochs: int = 10',
    "name = 'run # 1'  # the name",
    'flag = True',
    'rate = 1.0',
    'model = build()',
    '  indented = 1',
    'x == 2',
    'lr = 0.02'
  ].join('\n');
  const params = parseParametersSource(source);

  it('reads each assignment of a literal, the last one of a name winning', () => {
    expect(params.map(p => p.name)).toEqual(['epochs', 'name', 'flag', 'rate', 'lr']);
    expect(params.find(p => p.name === 'lr')).toEqual({ name: 'lr', value: 0.02, type: 'float' });
  });

  it('takes a trailing comment as help, a # inside a string as text', () => {
    expect(params.find(p => p.name === 'name')).toEqual({
      name: 'name',
      value: 'run # 1',
      type: 'str',
      help: 'the name'
    });
  });

  it('types values, a whole float literal as float', () => {
    const types = Object.fromEntries(params.map(p => [p.name, p.type]));
    expect(types).toEqual({ epochs: 'int', name: 'str', flag: 'bool', rate: 'float', lr: 'float' });
    expect(params.find(p => p.name === 'rate')?.value).toBe(1);
  });

  it('is empty for a source with no assignment', () => {
    expect(parseParametersSource('print(1)\n# lr = 1')).toEqual([]);
  });
});

describe('parametersFromNotebook', () => {
  it('reads the code cell tagged parameters (source as a list of lines)', () => {
    const notebook = {
      cells: [
        { cell_type: 'markdown', source: 'a = 1', metadata: { tags: ['parameters'] } },
        { cell_type: 'code', source: 'b = 2', metadata: {} },
        { cell_type: 'code', source: ['c = 3\n', "d = 'x'"], metadata: { tags: ['parameters'] } }
      ]
    };
    expect(parametersFromNotebook(notebook)).toEqual([
      { name: 'c', value: 3, type: 'int' },
      { name: 'd', value: 'x', type: 'str' }
    ]);
  });

  it('is empty without a parameters cell', () => {
    expect(parametersFromNotebook({ cells: [{ cell_type: 'code', source: 'a = 1' }] })).toEqual([]);
    expect(parametersFromNotebook({})).toEqual([]);
  });
});

describe('formatJSON', () => {
  it('writes JSON on one line with Python-like spacing', () => {
    expect(formatJSON([1, [2, 3]])).toBe('[1, [2, 3]]');
    expect(formatJSON({ a: 1, b: [true, null] })).toBe('{"a": 1, "b": [true, null]}');
    expect(formatJSON('s')).toBe('"s"');
  });
});

describe('valueToInput', () => {
  it.each([
    ['bool', true, true],
    ['bool', 'yes', false],
    ['int', 3, '3'],
    ['int', null, ''],
    ['float', 0.5, '0.5'],
    ['str', 'hi', 'hi'],
    ['list', [1, 2], '[1, 2]'],
    ['dict', { a: 1 }, '{"a": 1}'],
    ['none', null, ''],
    ['none', 'abc', 'abc'],
    ['none', { a: 1 }, '{"a": 1}']
  ] as const)('%s %j -> %j', (type, value, input) => {
    expect(valueToInput(type, value as any)).toEqual(input);
  });
});

describe('inputToValue', () => {
  it.each([
    ['int', ' 42 ', 42],
    ['int', '-7', -7],
    ['float', '1e3', 1000],
    ['float', '0.25', 0.25],
    ['str', ' spaced ', ' spaced '],
    ['list', '[1, "a"]', [1, 'a']],
    ['dict', '{"a": {"b": 2}}', { a: { b: 2 } }],
    ['bool', true, true],
    ['bool', 'true', false],
    ['none', '', null],
    ['none', 'None', null],
    ['none', 'null', null],
    ['none', '3', 3],
    ['none', 'abc', 'abc']
  ] as const)('%s %j -> %j', (type, input, value) => {
    expect(inputToValue('p', type, input)).toEqual(value);
  });

  it.each([
    ['int', '4.5', 'Parameter "p" must be an integer.'],
    ['int', '', 'Parameter "p" must be an integer.'],
    ['float', '', 'Parameter "p" must be a number.'],
    ['float', 'abc', 'Parameter "p" must be a number.'],
    ['float', 'Infinity', 'Parameter "p" must be a number.'],
    ['list', '{"a": 1}', 'Parameter "p" must be a JSON list, e.g. [1, 2].'],
    ['dict', '[1]', 'Parameter "p" must be a JSON object, e.g. {"a": 1}.'],
    ['dict', 'null', 'Parameter "p" must be a JSON object, e.g. {"a": 1}.']
  ])('%s %j is refused: %s', (type, input, message) => {
    expect(() => inputToValue('p', type, input)).toThrow(message);
  });

  it('says why a list is not JSON', () => {
    expect(() => inputToValue('p', 'list', '[1,')).toThrow(/^Parameter "p" must be JSON \(.+\)\.$/);
  });

  it('round-trips every type through the form input', () => {
    const values = { int: -3, float: 2.5, str: 'x y', bool: false, list: [1, [2]], dict: { k: 'v' } };
    for (const [type, value] of Object.entries(values)) {
      expect(inputToValue('p', type, valueToInput(type, value))).toEqual(value);
    }
  });
});
