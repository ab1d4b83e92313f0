'use strict';
// A client of ShopMind's WebSocket channel on the `ws` package (not written here), as a
// browser application would use it: it follows one topic from an offset, prints every
// event as one JSON line on stdout, and when the connection is lost (or cannot be made)
// reconnects with exponential backoff and resubscribes from the last offset it saw.
//
//   node client.js <ws-url> <token> <topic> [offset]
//
// Lines: {"connecting":n} {"subscribed":offset} {"offset":n,"data":{...}} {"duplicate":n}
// {"reconnect":attempt,"delay_ms":d,"base_ms":b} {"end":true} {"gone":msg}
// {"error":code,"message":msg}. Exit codes: 0 the topic ended, 3 gone, 4 refused,
// 5 gave up reconnecting.
//
// Backoff: attempt n (1, 2, ...) waits a random delay in [b/2, b] with
// b = min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2^(n-1)) ("equal jitter"); a subscription
// confirmed by the server resets the attempts. Heartbeat frames are ignored; the ws package
// answers the server's pings.
const WebSocket = require('ws');

const [url, token, topic, startOffset] = process.argv.slice(2);
const baseMs = Number(process.env.BACKOFF_BASE_MS || 100);
const maxMs = Number(process.env.BACKOFF_MAX_MS || 5000);
const maxAttempts = Number(process.env.MAX_ATTEMPTS || 10);

let last = Number(startOffset || 0);
let attempt = 0;
let connections = 0;

function out(o) {
  process.stdout.write(JSON.stringify(o) + '\n');
}

function connect() {
  connections++;
  out({ connecting: connections });
  const ws = new WebSocket(url, ['shopmind.realtime.v1'], { headers: { Authorization: 'Bearer ' + token } });
  let finished = false;
  ws.on('open', () => {
    ws.send(JSON.stringify({ type: 'subscribe', topic, offset: last }));
  });
  ws.on('message', (buf) => {
    const f = JSON.parse(buf.toString());
    switch (f.type) {
      case 'subscribed':
        attempt = 0;
        out({ subscribed: f.offset });
        break;
      case 'event':
        if (f.offset <= last) {
          out({ duplicate: f.offset });
          break;
        }
        last = f.offset;
        out({ offset: f.offset, data: f.data });
        break;
      case 'end':
        finished = true;
        out({ end: true });
        ws.close(1000, 'done');
        break;
      case 'gone':
        finished = true;
        process.exitCode = 3;
        out({ gone: f.message });
        ws.close(1000, 'gone');
        break;
      case 'error':
        out({ error: f.code, message: f.message });
        if (f.retryable) {
          ws.terminate();
        } else {
          finished = true;
          process.exitCode = 4;
          ws.close(1000, 'refused');
        }
        break;
      default: // heartbeat, pong
        break;
    }
  });
  ws.on('error', (err) => out({ socket_error: err.message })); // 'close' follows
  ws.on('close', () => {
    if (finished) {
      return;
    }
    attempt++;
    if (attempt > maxAttempts) {
      out({ gave_up: attempt - 1 });
      process.exit(5);
    }
    const b = Math.min(maxMs, baseMs * 2 ** (attempt - 1));
    const delay = Math.round(b / 2 + Math.random() * (b / 2));
    out({ reconnect: attempt, delay_ms: delay, base_ms: b });
    setTimeout(connect, delay);
  });
}

connect();
