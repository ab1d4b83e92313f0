// The real-time channel (GET /api/v1/realtime, WebSocket, services/chat/CHAT.md "The real-time
// channel"): one topic followed with the last offset remembered; on a lost connection it
// reconnects with exponential backoff and jitter (attempt n waits a random delay in [b/2, b],
// b = min(5 s, 100 ms x 2^(n-1)), reset once subscribed) and subscribes again from that offset.
import { freshToken } from './api';

export function backoff(attempt: number, random = Math.random): number {
  const b = Math.min(5000, 100 * 2 ** Math.max(0, attempt - 1));
  return b / 2 + random() * (b / 2);
}

export interface TopicHandlers {
  onEvent: (data: unknown, offset: number) => void;
  onEnd?: () => void;
  onState?: (s: 'connecting' | 'subscribed' | 'reconnecting' | 'ended' | 'failed', detail?: string) => void;
}

/** follow subscribes to topic and returns a function that stops following. */
export function follow(topic: string, h: TopicHandlers): () => void {
  let offset = 0;
  let attempt = 0;
  let stopped = false;
  let ws: WebSocket | null = null;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const retry = () => {
    if (stopped) return;
    attempt++;
    h.onState?.('reconnecting');
    timer = setTimeout(connect, backoff(attempt));
  };

  async function connect() {
    if (stopped) return;
    const s = await freshToken();
    if (!s) {
      h.onState?.('failed', 'signed out');
      return;
    }
    h.onState?.('connecting');
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const prefix = s.env === 'dev' ? '' : `/${s.env}`;
    ws = new WebSocket(`${proto}//${location.host}${prefix}/api/v1/realtime`, ['shopmind.realtime.v1', `bearer.${s.access}`]);
    ws.onopen = () => ws?.send(JSON.stringify({ type: 'subscribe', topic, offset }));
    ws.onmessage = (m) => {
      const f = JSON.parse(String(m.data)) as { type: string; offset?: number; data?: unknown; message?: string; retryable?: boolean };
      switch (f.type) {
        case 'subscribed':
          attempt = 0;
          h.onState?.('subscribed');
          break;
        case 'event':
          if ((f.offset ?? 0) > offset) {
            offset = f.offset ?? offset;
            h.onEvent(f.data, offset);
          }
          break;
        case 'end':
          stopped = true;
          h.onState?.('ended');
          h.onEnd?.();
          ws?.close(1000);
          break;
        case 'gone':
          offset = 0;
          ws?.send(JSON.stringify({ type: 'subscribe', topic, offset }));
          break;
        case 'error':
          if (f.retryable) ws?.close(4000);
          else {
            stopped = true;
            h.onState?.('failed', f.message);
            ws?.close(1000);
          }
          break;
      }
    };
    ws.onclose = () => {
      ws = null;
      retry();
    };
  }
  void connect();
  return () => {
    stopped = true;
    clearTimeout(timer);
    ws?.close(1000);
  };
}
