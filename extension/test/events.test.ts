import { describe, expect, it } from 'vitest';

import { clusterChange, jobChange, readyOf, retryDelay, ServerEventParser } from '../src/events';

const STREAM =
  'event: ready\ndata: {"resumed": false, "user": "alice", "admin": false}\nid: 5-0\n\n' +
  ': ping\n\n' +
  'id: 6-0.0\r\nevent: job\r\ndata: {"job": {"id": "a", "status": "queued"}}\r\n\r\n' +
  'id: 7-0\n: ping\n\n' +
  'id: 8-2.1\nevent: cluster\ndata: {"cluster":\ndata:  {"hosts": []}}\n\n';

describe('ServerEventParser', () => {
  it('reads events however the text is cut into chunks', () => {
    for (let size = 1; size <= STREAM.length; size++) {
      const parser = new ServerEventParser();
      const events = [];
      for (let i = 0; i < STREAM.length; i += size) {
        events.push(...parser.push(STREAM.slice(i, i + size)));
      }
      expect(events.map(e => [e.id, e.event])).toEqual([
        ['5-0', 'ready'],
        ['6-0.0', 'job'],
        ['8-2.1', 'cluster']
      ]);
      expect(events[1].data).toEqual({ job: { id: 'a', status: 'queued' } });
      expect(events[2].data).toEqual({ cluster: { hosts: [] } }); // data lines joined by \n
      expect(parser.lastId).toBe('8-2.1');
    }
  });

  it('moves the last id on a message without data (a heartbeat) without an event', () => {
    const parser = new ServerEventParser();
    expect(parser.push('id: 6-0.0\nevent: job\ndata: {"id": "a", "deleted": true}\n\n')).toHaveLength(1);
    expect(parser.push('id: 9-0\n: ping\n\n')).toEqual([]);
    expect(parser.lastId).toBe('9-0');
    expect(parser.push('data: plain text\n\n')).toEqual([{ id: null, event: 'message', data: 'plain text' }]);
    expect(parser.lastId).toBe('9-0'); // an event without an id keeps the last one
  });

  it('waits for the rest of a line, a lone CR included', () => {
    const parser = new ServerEventParser();
    expect(parser.push('event: job\r')).toEqual([]);
    expect(parser.push('\ndata: {"job": {"id": "b"}}\r')).toEqual([]);
    expect(parser.push('\n\r\n')).toEqual([{ id: null, event: 'job', data: { job: { id: 'b' } } }]);
  });
});

describe('changes', () => {
  it('reads a job change, a deletion, and refuses anything else', () => {
    expect(jobChange({ job: { id: 'a', name: 'x' } })).toEqual({ record: { id: 'a', name: 'x' }, deleted: false });
    expect(jobChange({ id: 'a', deleted: true })).toEqual({ id: 'a', deleted: true });
    expect(jobChange({ job: { name: 'no id' } })).toBeNull();
    expect(jobChange(null)).toBeNull();
    expect(clusterChange({ cluster: { hosts: [] } })).toEqual({ hosts: [] });
    expect(clusterChange({ cluster: {} })).toBeNull();
  });

  it('reads who the server takes the browser for', () => {
    expect(readyOf({ resumed: true, user: 'bob', admin: true })).toEqual({ resumed: true, user: 'bob', admin: true });
    expect(readyOf({})).toEqual({ resumed: false, user: null, admin: false });
  });
});

describe('retryDelay', () => {
  it('doubles from half a second up to 15 s, jitter adding at most a quarter', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 20].map(n => retryDelay(n))).toEqual([
      500, 1000, 2000, 4000, 8000, 15000, 15000, 15000
    ]);
    expect(retryDelay(1, 1)).toBe(625);
    expect(retryDelay(0)).toBe(500);
  });
});
