// The chat stream: an SSE parser for fetch bodies (EventSource cannot POST or send a bearer
// token) and the one reducer that turns the events of shopmind.chat.v2.ChatEvent
// (services/chat/CHAT.md, "The event stream") into the state of an assistant message.
// Pure functions, unit-tested on recorded streams (test/stream.test.ts).

export interface ChatEvent {
  conversation_id?: string;
  type?: 'render' | 'visualization' | 'done' | 'pipeline_end' | 'error';
  object?: string;
  id?: string;
  choices?: { index: number; delta: { role?: string; content?: string }; finish_reason?: string | null }[];
  component?: string;
  props?: Record<string, unknown> | null;
  chart_type?: string;
  title?: string;
  spec?: unknown;
  columns?: string[];
  rows?: unknown[][];
  message_id?: string;
  finish_reason?: string;
  usage?: unknown;
  code?: number;
  message?: string;
  retryable?: boolean;
}

export interface Render {
  id: string;
  component: string;
  props: Record<string, unknown>;
}

export interface Visualization {
  id: string;
  chartType: 'line' | 'bar' | 'pie' | 'table';
  title: string;
  columns: string[];
  rows: unknown[][];
}

export type Part = { kind: 'render'; id: string } | { kind: 'visualization'; id: string } | { kind: 'text' };

export interface Reply {
  conversationId: string;
  text: string;
  /** Where the text started among renders and charts: parts in arrival order. */
  parts: Part[];
  renders: Record<string, Render>;
  visualizations: Record<string, Visualization>;
  /** The answer's text has begun (the thinking block folds). */
  answering: boolean;
  error: { code: number; message: string; retryable: boolean } | null;
  /** pipeline_end (or done) arrived: the composer is enabled again. */
  finished: boolean;
  finishReason: string;
  messageId: string;
  /** The stream ended without its end event (connection lost, stopped). */
  cut: boolean;
  stopped: boolean;
}

export const emptyReply = (): Reply => ({
  conversationId: '',
  text: '',
  parts: [],
  renders: {},
  visualizations: {},
  answering: false,
  error: null,
  finished: false,
  finishReason: '',
  messageId: '',
  cut: false,
  stopped: false,
});

export type Action = { type: 'event'; event: ChatEvent } | { type: 'closed' } | { type: 'stopped' } | { type: 'failed'; message: string };

const chartTypes = new Set(['line', 'bar', 'pie', 'table']);

export function reduce(s: Reply, a: Action): Reply {
  switch (a.type) {
    case 'closed':
      return s.finished ? s : { ...s, cut: true, finished: true };
    case 'stopped':
      return s.finished ? s : { ...s, stopped: true, finished: true };
    case 'failed':
      return { ...s, finished: true, error: { code: 0, message: a.message, retryable: true } };
  }
  const e = a.event;
  const conversationId = s.conversationId || e.conversation_id || '';
  if (e.object === 'chat.completion.chunk' || (!e.type && e.choices)) {
    const delta = e.choices?.[0]?.delta?.content ?? '';
    if (!delta) return { ...s, conversationId };
    const parts = s.parts.some((p) => p.kind === 'text') ? s.parts : [...s.parts, { kind: 'text' } as Part];
    return { ...s, conversationId, text: s.text + delta, parts, answering: true };
  }
  switch (e.type) {
    case 'render': {
      const id = e.id || `render-${Object.keys(s.renders).length}`;
      const known = id in s.renders;
      return {
        ...s,
        conversationId,
        renders: { ...s.renders, [id]: { id, component: e.component ?? '', props: e.props ?? {} } },
        parts: known ? s.parts : [...s.parts, { kind: 'render', id }],
      };
    }
    case 'visualization': {
      const id = e.id || `viz-${Object.keys(s.visualizations).length}`;
      const known = id in s.visualizations;
      const chartType = (chartTypes.has(e.chart_type ?? '') ? e.chart_type : 'table') as Visualization['chartType'];
      return {
        ...s,
        conversationId,
        visualizations: { ...s.visualizations, [id]: { id, chartType, title: e.title ?? '', columns: e.columns ?? [], rows: e.rows ?? [] } },
        parts: known ? s.parts : [...s.parts, { kind: 'visualization', id }],
      };
    }
    case 'error':
      return { ...s, conversationId, error: { code: e.code ?? 500, message: e.message ?? '', retryable: !!e.retryable } };
    case 'done':
    case 'pipeline_end':
      return { ...s, conversationId, finished: true, finishReason: e.finish_reason ?? '', messageId: e.message_id ?? '' };
  }
  return s; // an event kind this console does not know: ignored, as the spec asks of clients
}

/** SSEParser splits a text/event-stream into the data of its events ([DONE] included). */
export class SSEParser {
  private buf = '';
  private data: string[] = [];

  /** push takes the next piece of text and returns the complete events' data. */
  push(chunk: string): string[] {
    this.buf += chunk;
    const out: string[] = [];
    let nl: number;
    while ((nl = this.buf.search(/\r\n|\r|\n/)) >= 0) {
      const line = this.buf.slice(0, nl);
      const sepLen = this.buf.startsWith('\r\n', nl) ? 2 : 1;
      this.buf = this.buf.slice(nl + sepLen);
      if (line === '') {
        if (this.data.length) out.push(this.data.join('\n'));
        this.data = [];
      } else if (line.startsWith('data:')) {
        this.data.push(line.slice(5).replace(/^ /, ''));
      } // comments (": keep-alive"), id:, event:, retry: are not needed here
    }
    return out;
  }
}

/** parseEvents turns event data into actions; [DONE] and malformed data are skipped. */
export function toAction(data: string): Action | null {
  if (data === '[DONE]') return null;
  try {
    return { type: 'event', event: JSON.parse(data) as ChatEvent };
  } catch {
    return null;
  }
}

/** hasText tells whether an action carries answer text (a non-empty delta). */
export const hasText = (a: Action) => a.type === 'event' && !!a.event.choices?.[0]?.delta?.content;

/**
 * The User Timing marks of a live reply's first token: its bytes returned by the body's reader
 * (here), then in the DOM (Chat's Answer; its paint is reported by Element Timing). The browser
 * tests read them.
 */
export const firstTokenReceived = 'shopmind:first-token-received';
export const firstTokenCommitted = 'shopmind:first-token-committed';

/** readStream feeds a fetch body through the parser into dispatch; it ends with 'closed'. */
export async function readStream(body: ReadableStream<Uint8Array>, dispatch: (a: Action) => void, signal?: AbortSignal) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const parser = new SSEParser();
  let marked = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      const at = performance.now();
      if (done) break;
      for (const d of parser.push(decoder.decode(value, { stream: true }))) {
        const a = toAction(d);
        if (!a) continue;
        if (!marked && hasText(a)) {
          marked = true;
          performance.mark(firstTokenReceived, { startTime: at });
        }
        dispatch(a);
      }
    }
    dispatch({ type: 'closed' });
  } catch (e) {
    dispatch(signal?.aborted ? { type: 'stopped' } : { type: 'closed' });
  }
}
