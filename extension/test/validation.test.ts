import { describe, expect, it } from 'vitest';

import { DEFAULT_PRIORITY, MAX_PRIORITY, MIN_PRIORITY } from '../src/constants';
import {
  gpuBounds,
  IFormValues,
  initialValues,
  priorityError,
  toRequest,
  validate,
  wholeNumberError
} from '../src/validation';

function form(fields: Partial<IFormValues> = {}): IFormValues {
  return {
    params: [],
    name: 'run',
    minGpus: '1',
    maxGpus: '2',
    priority: '5000',
    timeout: '',
    kernel: '',
    ...fields
  };
}

describe('wholeNumberError', () => {
  it.each(['5', ' 7 ', '+3', '1', '10'])('accepts %j in [1, 10]', text => {
    expect(wholeNumberError(text, 'X', 1, 10)).toBeNull();
  });

  it.each([
    ['0', 'X must be between 1 and 10, not 0.'],
    ['11', 'X must be between 1 and 10, not 11.'],
    ['2.5', 'X must be a whole number between 1 and 10 (2.5 is not whole).'],
    ['abc', 'X must be a whole number between 1 and 10; "abc" is not a number.'],
    ['', 'X must be a whole number between 1 and 10; "" is not a number.']
  ])('refuses %j: %s', (text, message) => {
    expect(wholeNumberError(text, 'X', 1, 10)).toBe(message);
  });

  it('has no upper bound without max', () => {
    expect(wholeNumberError('1000000', 'X', 0)).toBeNull();
    expect(wholeNumberError('-1', 'X', 0)).toBe('X must be ≥ 0, not -1.');
  });
});

describe('priorityError', () => {
  it('accepts the bounds and refuses past them', () => {
    expect(priorityError(String(MIN_PRIORITY))).toBeNull();
    expect(priorityError(String(MAX_PRIORITY))).toBeNull();
    expect(priorityError(String(MAX_PRIORITY + 1))).toBe(
      `Priority must be between ${MIN_PRIORITY} and ${MAX_PRIORITY}, not ${MAX_PRIORITY + 1}.`
    );
    expect(priorityError(String(MIN_PRIORITY - 1))).not.toBeNull();
  });
});

describe('validate', () => {
  it('finds nothing wrong in valid values (empty GPUs, priority and timeout allowed)', () => {
    expect(validate(form())).toEqual({});
    expect(validate(form({ minGpus: '', maxGpus: '', priority: ' ', timeout: '1.5' }))).toEqual({});
  });

  it('names each invalid parameter', () => {
    const errors = validate(
      form({
        params: [
          { name: 'n', type: 'int', input: 'x' },
          { name: 'lr', type: 'float', input: '0.1' },
          { name: 'cfg', type: 'dict', input: '[1]' }
        ]
      })
    );
    expect(errors).toEqual({
      'param:n': 'Parameter "n" must be an integer.',
      'param:cfg': 'Parameter "cfg" must be a JSON object, e.g. {"a": 1}.'
    });
  });

  it('skips a parameter set by a GPU field', () => {
    const params = [{ name: 'MIN_GPUS', type: 'int', input: 'x', mirrors: 'minGpus' as const }];
    expect(validate(form({ params }))).toEqual({});
  });

  it('checks the GPU fields, then min against max', () => {
    expect(validate(form({ minGpus: '-1', maxGpus: 'two' }))).toEqual({
      minGpus: 'Min GPUs must be ≥ 0, not -1.',
      maxGpus: 'Max GPUs must be a whole number ≥ 0; "two" is not a number.'
    });
    expect(validate(form({ minGpus: '3', maxGpus: '2' }))).toEqual({
      minGpus: 'Min GPUs (3) cannot be more than Max GPUs (2).'
    });
    expect(validate(form({ minGpus: '3', maxGpus: '' }))).toEqual({
      minGpus: 'Min GPUs (3) cannot be more than Max GPUs (0).'
    });
  });

  it('checks the priority and the timeout', () => {
    expect(validate(form({ priority: '0', timeout: '0' }))).toEqual({
      priority: `Priority must be between ${MIN_PRIORITY} and ${MAX_PRIORITY}, not 0.`,
      timeout: 'Timeout must be a positive number of seconds (or empty for none); "0" is not.'
    });
    expect(validate(form({ timeout: 'soon' })).timeout).toContain('"soon" is not');
  });
});

describe('toRequest', () => {
  it('builds the POST /jobs body, GPU parameters from the GPU fields', () => {
    const values = form({
      name: '  nightly ',
      minGpus: '2',
      maxGpus: '4',
      priority: '7',
      timeout: '60',
      kernel: ' python3 ',
      params: [
        { name: 'lr', type: 'float', input: '0.5' },
        { name: 'MIN_GPUS', type: 'int', input: '1', mirrors: 'minGpus' },
        { name: 'MAX_GPUS', type: 'int', input: '1', mirrors: 'maxGpus' },
        { name: 'tags', type: 'list', input: '["a"]' }
      ]
    });
    expect(toRequest('nb.ipynb', values)).toEqual({
      notebook: 'nb.ipynb',
      parameters: { lr: 0.5, MIN_GPUS: 2, MAX_GPUS: 4, tags: ['a'] },
      min_gpus: 2,
      max_gpus: 4,
      priority: 7,
      name: 'nightly',
      timeout: 60,
      kernel: 'python3'
    });
  });

  it('leaves out empty options and defaults the priority and GPUs', () => {
    const request = toRequest('nb.ipynb', form({ name: ' ', minGpus: '', maxGpus: '', priority: '' }));
    expect(request).toEqual({
      notebook: 'nb.ipynb',
      parameters: {},
      min_gpus: 0,
      max_gpus: 0,
      priority: DEFAULT_PRIORITY
    });
  });
});

describe('gpuBounds', () => {
  const params = [
    { name: 'Min_GPUs', value: 2, type: 'int' },
    { name: 'MAX_GPUS', value: 4, type: 'int' },
    { name: 'lr', value: 0.1, type: 'float' }
  ];

  it('reads MIN_GPUS / MAX_GPUS parameters in any case', () => {
    expect(gpuBounds(params, {})).toEqual({
      min: 2,
      max: 4,
      minParam: 'Min_GPUs',
      maxParam: 'MAX_GPUS',
      source: 'the parameters cell'
    });
  });

  it('lets metadata.nbrunner win, bound by bound', () => {
    const bounds = gpuBounds(params, { nbrunner: { max_gpus: 8 } });
    expect(bounds).toMatchObject({ min: 2, max: 8, source: 'the notebook metadata (nbrunner)' });
    expect(gpuBounds([], { nbrunner: { min_gpus: 1, max_gpus: 3 } })).toEqual({
      min: 1,
      max: 3,
      minParam: null,
      maxParam: null,
      source: 'the notebook metadata (nbrunner)'
    });
  });

  it('ignores values that are not whole numbers ≥ 0', () => {
    const odd = [
      { name: 'min_gpus', value: 1.5, type: 'float' },
      { name: 'max_gpus', value: -1, type: 'int' }
    ];
    expect(gpuBounds(odd, { nbrunner: { min_gpus: '3' } })).toEqual({
      min: null,
      max: null,
      minParam: null,
      maxParam: null,
      source: null
    });
  });
});

describe('initialValues', () => {
  const parameters = [
    { name: 'lr', value: 0.1, type: 'float', help: 'step size' },
    { name: 'MIN_GPUS', value: 1, type: 'int' },
    { name: 'MAX_GPUS', value: 2, type: 'int' },
    { name: 'misc', value: [1], type: '' }
  ];
  const bounds = gpuBounds(parameters, null);

  it('makes a field per parameter, the GPU ones mirroring the GPU fields', () => {
    const values = initialValues(parameters, 'train', bounds);
    expect(values.params).toEqual([
      { name: 'lr', type: 'float', input: '0.1', help: 'step size' },
      { name: 'MIN_GPUS', type: 'int', input: '1', help: undefined, mirrors: 'minGpus' },
      { name: 'MAX_GPUS', type: 'int', input: '2', help: undefined, mirrors: 'maxGpus' },
      { name: 'misc', type: 'list', input: '[1]', help: undefined }
    ]);
    expect(values).toMatchObject({
      name: 'train',
      minGpus: '1',
      maxGpus: '2',
      priority: String(DEFAULT_PRIORITY),
      timeout: '',
      kernel: ''
    });
    expect(validate(values)).toEqual({});
  });

  it('lets given values and options replace the defaults', () => {
    const values = initialValues(parameters, 'train', bounds, {
      values: { lr: 0.5 },
      options: { priority: '9', timeout: '30' }
    });
    expect(values.params[0].input).toBe('0.5');
    expect(values).toMatchObject({ priority: '9', timeout: '30' });
  });

  it('takes one stated GPU bound for both', () => {
    const only = (min: number | null, max: number | null) =>
      initialValues([], 'x', { min, max, minParam: null, maxParam: null, source: 'test' });
    expect(only(null, null)).toMatchObject({ minGpus: '0', maxGpus: '0' });
    expect(only(3, null)).toMatchObject({ minGpus: '3', maxGpus: '3' });
    expect(only(null, 4)).toMatchObject({ minGpus: '0', maxGpus: '4' });
    expect(initialValues([], 'x', null)).toMatchObject({ minGpus: '0', maxGpus: '0' });
  });
});
