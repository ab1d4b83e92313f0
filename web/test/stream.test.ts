import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { emptyReply, readStream, reduce, SSEParser, toAction, type Reply } from '../src/lib/stream';
import { backoff } from '../src/lib/realtime';
import { change, compareRange, presetRange } from '../src/lib/dates';
import { toCSV } from '../src/Chart';

const recorded = (name: string) => readFileSync(new URL(`./streams/${name}`, import.meta.url), 'utf8');

/** play feeds a recorded stream to the real reader in pieces of size n (bytes split anywhere). */
async function play(text: string, n: number): Promise<{ final: Reply; states: Reply[] }> {
  const bytes = new TextEncoder().encode(text);
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      for (let i = 0; i < bytes.length; i += n) c.enqueue(bytes.slice(i, i + n));
      c.close();
    },
  });
  let s = emptyReply();
  const states: Reply[] = [];
  await readStream(body, (a) => {
    s = reduce(s, a);
    states.push(s);
  });
  return { final: s, states };
}

describe('chat stream reducer', () => {
  for (const size of [1, 7, 4096]) {
    it(`renders every event kind of a full stream (pieces of ${size} bytes)`, async () => {
      const { final, states } = await play(recorded('full.sse'), size);
      expect(final.conversationId).toBe('c1');
      expect(final.text).toBe('**GMV** was 42.');
      // renders updated in place by id: two components, last props win, order of arrival kept
      expect(Object.keys(final.renders)).toEqual(['think', 'plan']);
      expect(final.renders.plan.props.tasks).toEqual([
        { id: 't1', title: 'Find the metric', status: 'done' },
        { id: 't2', title: 'Query', status: 'done' },
      ]);
      expect(final.renders.think.props.status).toBe('done');
      expect(final.parts).toEqual([
        { kind: 'render', id: 'think' },
        { kind: 'render', id: 'plan' },
        { kind: 'text' },
        { kind: 'visualization', id: 'v1' },
      ]);
      expect(final.visualizations.v1).toEqual({ id: 'v1', chartType: 'bar', title: 'GMV by shop', columns: ['shop', 'gmv'], rows: [['shop A', 42], ['shop B', 7.5]] });
      expect(final).toMatchObject({ finished: true, finishReason: 'stop', messageId: 'm1', error: null, cut: false, answering: true });
      // the thinking block folds when the answer starts: answering is false before the first text
      const firstText = states.findIndex((s) => s.text !== '');
      expect(states[firstText - 1].answering).toBe(false);
      expect(states[firstText].answering).toBe(true);
      // the composer comes back only at pipeline_end
      expect(states.filter((s) => s.finished).length).toBeGreaterThan(0);
      expect(states.slice(0, -2).every((s) => !s.finished)).toBe(true);
    });
  }

  it('shows an error in the middle of a stream, keeps the partial text, ends finished', async () => {
    const { final } = await play(recorded('error.sse'), 13);
    expect(final.text).toBe('Partial');
    expect(final.error).toEqual({ code: 502, message: 'the model provider failed', retryable: true });
    expect(final).toMatchObject({ finished: true, finishReason: 'error', cut: false });
  });

  it('marks a stream cut off before its end event, dropping the half event', async () => {
    const { final } = await play(recorded('cut.sse'), 5);
    expect(final.text).toBe('Half an ans');
    expect(final.visualizations).toEqual({});
    expect(final).toMatchObject({ finished: true, cut: true, error: null });
  });

  it('ignores unknown event kinds and unknown chart types fall back to a table', () => {
    let s = reduce(emptyReply(), { type: 'event', event: { type: 'future' as never, conversation_id: 'x' } });
    expect(s).toEqual(emptyReply());
    s = reduce(s, { type: 'event', event: { type: 'visualization', id: 'v', chart_type: 'sankey', columns: ['a'], rows: [[1]] } });
    expect(s.visualizations.v.chartType).toBe('table');
  });

  it('stop keeps what arrived and marks it stopped', () => {
    let s = reduce(emptyReply(), toAction('{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"a"}}]}')!);
    s = reduce(s, { type: 'stopped' });
    expect(s).toMatchObject({ text: 'a', stopped: true, finished: true });
  });
});

describe('SSE parser', () => {
  it('handles CRLF, comments, multi-line data and [DONE]', () => {
    const p = new SSEParser();
    expect(p.push(': hi\r\ndata: {"a":\r\ndata: 1}\r\n\r\ndata: [DO')).toEqual(['{"a":\n1}']);
    expect(p.push('NE]\n\n')).toEqual(['[DONE]']);
    expect(toAction('[DONE]')).toBeNull();
    expect(toAction('{bad')).toBeNull();
  });
});

describe('helpers', () => {
  it('backoff grows to 5 s with jitter in [b/2, b]', () => {
    expect(backoff(1, () => 0)).toBe(50);
    expect(backoff(1, () => 1)).toBe(100);
    expect(backoff(4, () => 1)).toBe(800);
    expect(backoff(30, () => 0.999)).toBeLessThanOrEqual(5000);
    expect(backoff(30, () => 0)).toBe(2500);
  });
  it('date presets and comparison periods', () => {
    const now = new Date(2026, 2, 15, 13, 0); // 15 March 2026
    const r = presetRange('last7', now);
    expect(r.start).toEqual(new Date(2026, 2, 9));
    expect(r.end).toEqual(new Date(2026, 2, 16));
    expect(compareRange(r, 'previous')).toEqual({ start: new Date(2026, 2, 2), end: new Date(2026, 2, 9) });
    expect(compareRange(r, 'yoy')).toEqual({ start: new Date(2025, 2, 9), end: new Date(2025, 2, 16) });
    expect(presetRange('lastMonth', now)).toEqual({ start: new Date(2026, 1, 1), end: new Date(2026, 2, 1) });
    expect(presetRange('thisQuarter', now).start).toEqual(new Date(2026, 0, 1));
    expect(change(110, 100)).toBeCloseTo(0.1);
    expect(change(1, 0)).toBeNull();
  });
  it('CSV quotes what needs quoting', () => {
    expect(toCSV(['a', 'b'], [['x,y', 'say "hi"'], [null, 3]])).toBe('a,b\r\n"x,y","say ""hi"""\r\n,3\r\n');
  });
});

import { fieldOf } from '../src/pages/Explorer';
describe('metric form errors', () => {
  it('puts the API message on the field it names', () => {
    expect(fieldOf('invalid request: metric.name: does not match regex pattern `^[a-z][a-z0-9_]{0,63}$` (rule string.pattern)')).toBe('name');
    expect(fieldOf('config.derived.source_field: unknown column "orders.x"')).toBe('config');
    expect(fieldOf('display_name: value length must be at least 1')).toBe('display_name');
    expect(fieldOf('metric already exists')).toBeNull();
  });
});

import { plotted } from '../src/Chart';
describe('chart columns', () => {
  it('draws names, not ids, as categories and numeric columns after them as series', () => {
    expect(plotted(['shop', 'shop_name', 'gmv', 'orders'], [[3, 'JD', 10.5, 2], [1, 'Tmall', 7, 1]])).toEqual({
      columns: ['shop_name', 'gmv', 'orders'],
      rows: [['JD', 10.5, 2], ['Tmall', 7, 1]],
    });
    expect(plotted(['day', 'gmv'], [['2026-11-01', 1]])).toEqual({ columns: ['day', 'gmv'], rows: [['2026-11-01', 1]] });
  });
});
