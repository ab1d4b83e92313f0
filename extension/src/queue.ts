// The upload queue's logic, free of chrome.* so the unit tests run it directly: caps,
// batches fixed before their first send, backoff, how an answer is handled, login expiry.
import type { CacheQueue, PendingBatch, QueuedItem } from "./types";

/** The queue's caps: past either, the oldest items are dropped (and logged). */
export const LIMITS = { max_items: 50_000, max_bytes: 6 * 1024 * 1024 };

export function emptyQueue(): CacheQueue {
  return { items: [], pending: [], bytes: 0 };
}

export function itemBytes(it: QueuedItem): number {
  return JSON.stringify(it).length;
}

/** Appends items, then drops the oldest queued items while a cap is exceeded. */
export function enqueue(q: CacheQueue, add: QueuedItem[], limits = LIMITS): { queue: CacheQueue; dropped: QueuedItem[] } {
  const items = q.items.concat(add);
  let bytes = q.bytes + add.reduce((n, it) => n + itemBytes(it), 0);
  let cut = 0;
  while (cut < items.length && (items.length - cut > limits.max_items || bytes > limits.max_bytes)) {
    bytes -= itemBytes(items[cut]);
    cut++;
  }
  return { queue: { items: items.slice(cut), pending: q.pending, bytes }, dropped: items.slice(0, cut) };
}

/** How many batches are fixed with one storage write. */
export const BATCHES_PER_WRITE = 10;

/**
 * Fixes the next batches: when nothing is pending, up to maxBatches batches of batchSize items
 * move from the queue to the pending list, each with a new id. The ids are stored with the
 * items before the first send and every retry sends the same id and items, so the server
 * stores a batch once however often it is sent (and a batch sent again after a stopped worker
 * forgot its answer gets that same answer). Fixing several batches per write keeps the
 * queue's rewrites few while a large queue drains.
 */
export function takeBatches(q: CacheQueue, batchSize: number, newId: () => string, maxBatches = BATCHES_PER_WRITE): CacheQueue {
  if (q.pending.length || q.items.length === 0) return q;
  const n = Math.max(1, Math.min(500, batchSize));
  const pending: PendingBatch[] = [];
  let at = 0;
  while (at < q.items.length && pending.length < maxBatches) {
    pending.push({ client_batch_id: newId(), items: q.items.slice(at, at + n), attempts: 0, next_attempt_at: 0 });
    at += n;
  }
  const moved = q.items.slice(0, at).reduce((s, it) => s + itemBytes(it), 0);
  return { items: q.items.slice(at), pending, bytes: q.bytes - moved };
}

/**
 * How many batches are in flight at once once a run's first batch was accepted: sending
 * strictly one after another left the worker idle while the server stored each batch.
 */
export const UPLOAD_PARALLEL = 2;

/** Removes the answered batches from the pending list (unknown ids are ignored). */
export function completeBatches(q: CacheQueue, batchIds: string[]): CacheQueue {
  if (!batchIds.length) return q;
  const pending = q.pending.filter((p) => !batchIds.includes(p.client_batch_id));
  return pending.length === q.pending.length ? q : { ...q, pending };
}

export function pendingCount(q: CacheQueue): number {
  return q.pending.reduce((n, p) => n + p.items.length, 0);
}

export const BACKOFF = { base_ms: 2_000, max_ms: 10 * 60_000 };

/**
 * Delay before retry number `attempt` (1, 2, ...): exponential from base_ms, capped at
 * max_ms, with jitter (between half and all of it); never sooner than the server's
 * Retry-After.
 */
export function backoffMs(attempt: number, retryAfterMs?: number, rand: () => number = Math.random): number {
  const exp = Math.min(BACKOFF.max_ms, BACKOFF.base_ms * 2 ** Math.max(0, attempt - 1));
  const jittered = Math.round(exp / 2 + rand() * (exp / 2));
  return Math.max(jittered, retryAfterMs ?? 0);
}

/**
 * Replaces a pending batch by its two halves, each with a new id, in its place. For a 413:
 * the edge refused the request before any service read it (the body over the size limit, or
 * its inspection over the WAF's time budget, which a loaded server reaches sooner), so
 * nothing of it was stored and new ids store nothing twice. A batch of one value is dropped.
 */
export function splitBatch(q: CacheQueue, batchId: string, newId: () => string): CacheQueue {
  const pending: PendingBatch[] = [];
  for (const p of q.pending) {
    if (p.client_batch_id !== batchId) { pending.push(p); continue; }
    if (p.items.length < 2) continue;
    const half = Math.ceil(p.items.length / 2);
    for (const items of [p.items.slice(0, half), p.items.slice(half)]) pending.push({ client_batch_id: newId(), items, attempts: 0, next_attempt_at: 0 });
  }
  return { ...q, pending };
}

/** What an answer to a sync request means for its batch. */
export type Outcome = "done" | "retry" | "signin" | "update" | "split" | "drop";

export function classify(status: number): Outcome {
  if (status >= 200 && status < 300) return "done";
  if (status === 413) return "split";
  if (status === 401) return "signin";
  if (status === 422) return "update";
  if (status === 0 || status === 408 || status === 409 || status === 429 || status >= 500) return "retry";
  return "drop";
}

export const DEFAULT_LOGIN_EXPIRY_DAYS = 30;

/** True when a login is older than expiryDays (the check at every start). */
export function loginExpired(loginTimestamp: number, expiryDays: number | undefined, now = Date.now()): boolean {
  const days = expiryDays && expiryDays > 0 ? expiryDays : DEFAULT_LOGIN_EXPIRY_DAYS;
  return now - loginTimestamp > days * 86_400_000;
}

/** Reads a number as a back office shows it: "1,234.5", "¥ 12.3万", "45%". */
export function parseNumber(text: string): number | null {
  const t = text.replace(/[\s,，¥$€£]/g, "");
  const m = t.match(/-?\d+(\.\d+)?/);
  if (!m) return null;
  let v = Number(m[0]);
  const rest = t.slice((m.index ?? 0) + m[0].length);
  if (rest.startsWith("万")) v *= 1e4;
  else if (rest.startsWith("亿")) v *= 1e8;
  else if (/^[kK]/.test(rest)) v *= 1e3;
  else if (/^[mM]/.test(rest)) v *= 1e6;
  return Number.isFinite(v) ? v : null;
}

/** Evaluates a simple JSON path ($.a.b[0].c, $['a']) on a parsed value. */
export function jsonPath(root: unknown, path: string): unknown {
  if (!path.startsWith("$")) return undefined;
  const parts: (string | number)[] = [];
  const re = /\.([A-Za-z_$][\w$-]*)|\[(\d+)\]|\[['"]([^'"]+)['"]\]/g;
  let m: RegExpExecArray | null;
  let pos = 1;
  while ((m = re.exec(path)) !== null) {
    if (m.index !== pos) return undefined;
    parts.push(m[1] ?? (m[2] !== undefined ? Number(m[2]) : m[3]));
    pos = re.lastIndex;
  }
  if (pos !== path.length) return undefined;
  let cur: unknown = root;
  for (const p of parts) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<string | number, unknown>)[p];
  }
  return cur;
}

/** The time a value describes: collected_at truncated to its metric's interval, so a page
 * read many times within one interval gives one stored value (the server keeps the first). */
export function statTime(collectedAt: Date, intervalSeconds: number): string {
  const step = Math.max(60, intervalSeconds || 0) * 1000;
  return new Date(Math.floor(collectedAt.getTime() / step) * step).toISOString().replace(/\.\d{3}Z$/, "Z");
}
