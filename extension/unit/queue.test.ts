import { describe, expect, it } from "vitest";
import {
  backoffMs, BACKOFF, classify, completeBatches, emptyQueue, enqueue, itemBytes, jsonPath, loginExpired, parseNumber, pendingCount, splitBatch, statTime, takeBatches,
} from "../src/queue";
import type { QueuedItem } from "../src/types";

const item = (n: number): QueuedItem => ({
  metric_key: "gmv", shop_id: "1", value: n, collected_at: new Date(1_700_000_000_000 + n * 1000).toISOString(),
});

describe("queue", () => {
  it("drops the oldest items past the count cap", () => {
    let q = emptyQueue();
    const r = enqueue(q, [1, 2, 3, 4, 5].map(item), { max_items: 3, max_bytes: 1e9 });
    expect(r.queue.items.map((i) => i.value)).toEqual([3, 4, 5]);
    expect(r.dropped.map((i) => i.value)).toEqual([1, 2]);
    q = r.queue;
    expect(q.bytes).toBe([3, 4, 5].map(item).reduce((s, i) => s + itemBytes(i), 0));
  });
  it("drops the oldest items past the byte cap", () => {
    const one = itemBytes(item(1));
    const r = enqueue(emptyQueue(), [1, 2, 3].map(item), { max_items: 100, max_bytes: one * 2 + 1 });
    expect(r.queue.items.map((i) => i.value)).toEqual([2, 3]);
    expect(r.dropped).toHaveLength(1);
  });
  it("cuts 25 items into batches of 10, 10 and 5 with ids fixed before sending", () => {
    let n = 0;
    const q = takeBatches(enqueue(emptyQueue(), Array.from({ length: 25 }, (_, i) => item(i))).queue, 10, () => `b${n++}`);
    expect(q.pending.map((p) => p.items.length)).toEqual([10, 10, 5]);
    expect(q.pending.map((p) => p.client_batch_id)).toEqual(["b0", "b1", "b2"]);
    expect(q.pending.flatMap((p) => p.items.map((i) => i.value))).toEqual(Array.from({ length: 25 }, (_, i) => i));
    expect(q.items).toHaveLength(0);
    expect(q.bytes).toBe(0);
    expect(pendingCount(q)).toBe(25);
    // Taking again while batches are pending changes nothing: a retry sends the same batches.
    expect(takeBatches(q, 10, () => "other")).toBe(q);
  });
  it("splits a pending batch into two halves with new ids in its place; a single value is dropped", () => {
    let n = 0;
    const id = () => `n${++n}`;
    const it3 = (v: number) => ({ metric_key: "m", platform: "taobao", value: v, collected_at: "x", stat_time: "x", page_url: "u" }) as any;
    const q = { items: [], bytes: 0, pending: [
      { client_batch_id: "a", items: [it3(1)], attempts: 0, next_attempt_at: 0 },
      { client_batch_id: "b", items: [it3(2), it3(3), it3(4)], attempts: 2, next_attempt_at: 9 },
      { client_batch_id: "c", items: [it3(5)], attempts: 0, next_attempt_at: 0 }] };
    const s = splitBatch(q, "b", id);
    expect(s.pending.map((p) => [p.client_batch_id, p.items.map((i) => i.value), p.attempts])).toEqual([["a", [1], 0], ["n1", [2, 3], 0], ["n2", [4], 0], ["c", [5], 0]]);
    expect(splitBatch(q, "a", id).pending.map((p) => p.client_batch_id)).toEqual(["b", "c"]);
  });

  it("fixes at most maxBatches batches per write", () => {
    let n = 0;
    const q = takeBatches(enqueue(emptyQueue(), Array.from({ length: 25 }, (_, i) => item(i))).queue, 5, () => `b${n++}`, 2);
    expect(q.pending.map((p) => p.items.length)).toEqual([5, 5]);
    expect(q.items.map((i) => i.value)).toEqual(Array.from({ length: 15 }, (_, i) => i + 10));
  });
  it("completes only the batches named", () => {
    const q = takeBatches(enqueue(emptyQueue(), [item(1), item(2)]).queue, 1, (() => { let n = 0; return () => `b${n++}`; })());
    expect(completeBatches(q, ["x"])).toBe(q);
    expect(completeBatches(q, ["b0"]).pending.map((p) => p.client_batch_id)).toEqual(["b1"]);
  });
});

describe("backoff", () => {
  it("grows exponentially with jitter, capped", () => {
    expect(backoffMs(1, undefined, () => 0)).toBe(BACKOFF.base_ms / 2);
    expect(backoffMs(1, undefined, () => 1)).toBe(BACKOFF.base_ms);
    expect(backoffMs(3, undefined, () => 1)).toBe(BACKOFF.base_ms * 4);
    expect(backoffMs(30, undefined, () => 1)).toBe(BACKOFF.max_ms);
    const seen = new Set(Array.from({ length: 20 }, () => backoffMs(4)));
    expect(seen.size).toBeGreaterThan(1);
  });
  it("never retries sooner than Retry-After", () => {
    expect(backoffMs(1, 60_000, () => 1)).toBe(60_000);
  });
  it("retries 408, 409, 429, 5xx and network errors; not other 4xx", () => {
    expect([0, 408, 409, 429, 500, 503].map(classify)).toEqual(["retry", "retry", "retry", "retry", "retry", "retry"]);
    expect([400, 403, 404].map(classify)).toEqual(["drop", "drop", "drop"]);
    expect(classify(413)).toBe("split");
    expect(classify(401)).toBe("signin");
    expect(classify(422)).toBe("update");
    expect(classify(200)).toBe("done");
  });
});

describe("expiry", () => {
  const day = 86_400_000;
  it("expires a login older than login_expiry_days", () => {
    const now = Date.UTC(2026, 10, 28);
    expect(loginExpired(now - 31 * day, 30, now)).toBe(true);
    expect(loginExpired(now - 29 * day, 30, now)).toBe(false);
    expect(loginExpired(now - 8 * day, 7, now)).toBe(true);
    expect(loginExpired(now - 31 * day, undefined, now)).toBe(true);
  });
});

describe("reading values", () => {
  it("parses numbers as back offices show them", () => {
    expect(parseNumber("¥ 1,234.50")).toBe(1234.5);
    expect(parseNumber("1.2万")).toBe(12000);
    expect(parseNumber("访客数 88")).toBe(88);
    expect(parseNumber("n/a")).toBeNull();
  });
  it("evaluates JSON paths", () => {
    const doc = { data: { gmv: 12.5, list: [{ v: 1 }, { v: 2 }], "x-y": 3 } };
    expect(jsonPath(doc, "$.data.gmv")).toBe(12.5);
    expect(jsonPath(doc, "$.data.list[1].v")).toBe(2);
    expect(jsonPath(doc, "$['data']['x-y']")).toBe(3);
    expect(jsonPath(doc, "$.data.missing.v")).toBeUndefined();
    expect(jsonPath(doc, "data.gmv")).toBeUndefined();
  });
  it("truncates stat_time to the metric's interval", () => {
    expect(statTime(new Date("2026-11-28T10:07:31Z"), 600)).toBe("2026-11-28T10:00:00Z");
    expect(statTime(new Date("2026-11-28T10:07:31Z"), 0)).toBe("2026-11-28T10:07:00Z");
  });
});
