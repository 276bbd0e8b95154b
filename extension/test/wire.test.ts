import { describe, expect, it } from 'vitest';

import {
  API_PREFIX,
  ApiError,
  errorMessage,
  query,
  readAnswer,
  rerunBody,
  serializeSubmit
} from '../src/wire';

describe('query', () => {
  it('encodes the given values, leaving out undefined and empty ones', () => {
    expect(query({ status: 'running', limit: 5, owner: undefined, q: '' })).toBe(
      '?status=running&limit=5'
    );
    expect(query({ path: 'dir/a b&c.ipynb' })).toBe('?path=dir%2Fa%20b%26c.ipynb');
    expect(query({ offset: 0 })).toBe('?offset=0');
    expect(query({})).toBe('');
  });
});

describe('serializeSubmit', () => {
  it('writes whole floats as floats', () => {
    const body = serializeSubmit(
      { notebook: 'nb.ipynb', parameters: { lr: 1, n: 2, m: -3, x: 1.5, s: 'a' } },
      ['lr', 'm', 'x', 's', 'absent']
    );
    expect(body).toBe(
      '{"notebook":"nb.ipynb","parameters":{"lr":1.0,"n":2,"m":-3.0,"x":1.5,"s":"a"}}'
    );
    expect(JSON.parse(body).parameters).toEqual({ lr: 1, n: 2, m: -3, x: 1.5, s: 'a' });
  });

  it('leaves huge whole numbers and requests without floats as JSON.stringify does', () => {
    expect(serializeSubmit({ notebook: 'a', parameters: { big: 1e15 } }, ['big'])).toBe(
      '{"notebook":"a","parameters":{"big":1000000000000000}}'
    );
    const request = { notebook: 'a', priority: 3, name: 'n' };
    expect(serializeSubmit(request, ['x'])).toBe(JSON.stringify(request));
    expect(serializeSubmit({ paused: true }, [])).toBe('{"paused":true}');
  });

  it('does not change the request', () => {
    const request = { notebook: 'a', parameters: { lr: 2 } };
    serializeSubmit(request, ['lr']);
    expect(request.parameters.lr).toBe(2);
  });
});

describe('rerunBody', () => {
  it('holds only the parameters, whole floats as floats', () => {
    expect(rerunBody()).toBe('{}');
    expect(rerunBody({ lr: 2, n: 3 }, ['lr'])).toBe('{"parameters":{"lr":2.0,"n":3}}');
  });
});

describe('readAnswer', () => {
  const answer = (status: number, text: string, statusText = '') => ({ status, statusText, text });
  const refusal = (status: number, text: string, statusText = ''): ApiError => {
    try {
      readAnswer('jobs/x', answer(status, text, statusText));
    } catch (error) {
      expect(error).toBeInstanceOf(ApiError);
      return error as ApiError;
    }
    throw new Error('readAnswer did not throw');
  };

  it('returns the JSON of a success, null for an empty body', () => {
    expect(readAnswer('jobs', answer(200, '{"jobs": []}'))).toEqual({ jobs: [] });
    expect(readAnswer('jobs/x', answer(204, ''))).toBeNull();
  });

  it("throws the server's message, then its reason", () => {
    expect(refusal(400, '{"message": "priority must be 1..10000"}')).toMatchObject({
      message: 'priority must be 1..10000',
      status: 400,
      unavailable: false
    });
    expect(refusal(403, '{"reason": "Forbidden", "message": ""}').message).toBe('Forbidden');
    expect(refusal(404, '{"message": "no job x"}')).toMatchObject({
      message: 'no job x',
      unavailable: false
    });
  });

  it('says the status when the server gives no message', () => {
    expect(refusal(500, '{}', 'Internal Server Error').message).toBe(
      `500 Internal Server Error from ${API_PREFIX}/jobs/x`
    );
    expect(refusal(502, 'Bad gateway').message).toBe(`502 error from ${API_PREFIX}/jobs/x`);
  });

  it('says the server extension is missing on an HTML 404', () => {
    const error = refusal(404, '<html>Not Found</html>');
    expect(error.unavailable).toBe(true);
    expect(error.message).toBe(
      `The nbrunner API is not available on this Jupyter server (404 Not Found for ${API_PREFIX}/jobs/x). ` +
        'Is the nbrunner server extension installed and enabled?'
    );
  });

  it('refuses a success that is not JSON', () => {
    expect(refusal(200, '<html></html>').message).toBe(
      `Unexpected non-JSON answer from ${API_PREFIX}/jobs/x`
    );
  });
});

describe('errorMessage', () => {
  it('reads anything thrown', () => {
    expect(errorMessage(new ApiError('refused', 400))).toBe('refused');
    expect(errorMessage(new TypeError('bad'))).toBe('bad');
    expect(errorMessage('text')).toBe('text');
    expect(errorMessage(42)).toBe('42');
  });
});
