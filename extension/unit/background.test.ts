import { afterEach, describe, expect, it, vi } from "vitest";
import { installFakes } from "./fakes";

const config = { permissions: [], login_expiry_days: 30, config_version: "3", metrics: [{ key: "gmv", platform: "taobao", interval_seconds: 60 }],
  upload: { batch_size: 10, interval_seconds: 300, max_concurrent_tabs: 2, random_delay_ms_min: 0, random_delay_ms_max: 0 } };
const auth = (daysAgo: number) => ({ server: "http://server", access_token: "t", tenant_code: "demo", username: "admin", user_id: "1", login_timestamp: Date.now() - daysAgo * 86_400_000 });
const cfgRecord = { server: config, upload_interval_seconds: 0, shop_by_platform: { taobao: "7" }, shops: [], pages: {}, last_collected: {} };
const values = (n: number) => Array.from({ length: n }, (_, i) => ({ metric_key: "gmv", platform: "taobao", value: i, page_url: "https://sycm.taobao.com/x", collected_at: new Date(Date.now() - (i + 1) * 60_000).toISOString() }));

function server(sync: (body: any) => { status: number; data?: unknown; headers?: Record<string, string> }) {
  return (path: string, body: any) => {
    if (path === "/api/v1/data/crx/sync") return sync(body);
    if (path === "/api/v1/auth/config") return { status: 200, data: config };
    if (path === "/api/v1/data/crx/ver") return { status: 200, data: { latest_version: "1.0.0" } };
    if (path === "/api/v1/basic/shops") return { status: 200, data: { items: [] } };
    return { status: 200, data: {} };
  };
}
const ok = (body: any) => ({ status: 200, data: { client_batch_id: body.client_batch_id, accepted: body.items.length, duplicates: 0, rejected: 0, errors: [] } });
const syncs = (sent: { path: string; body: any }[]) => sent.filter((s) => s.path === "/api/v1/data/crx/sync").map((s) => s.body);

afterEach(() => { vi.unstubAllGlobals(); });

describe("the service worker", () => {
  it("clears storage and alarms at start when the login is older than login_expiry_days", async () => {
    const f = installFakes(server(ok));
    f.store.set("auth", auth(31));
    f.store.set("config", cfgRecord);
    f.store.set("cache_queue", { items: [], pending: [], bytes: 0 });
    f.alarms.set("upload", { name: "upload", scheduledTime: 0 });
    await f.startWorker();
    expect((await f.message({ action: "get_status" })).state.signed_in).toBe(false);
    expect(f.store.size).toBe(0);
    expect(f.alarms.size).toBe(0);
  });

  it("keeps a 29-day-old login and creates its alarms", async () => {
    const f = installFakes(server(ok));
    f.store.set("auth", auth(29));
    f.store.set("config", cfgRecord);
    await f.startWorker();
    expect((await f.message({ action: "get_status" })).state.signed_in).toBe(true);
    expect([...f.alarms.keys()].sort()).toEqual(["collect", "config", "upload", "version"]);
  });

  it("uploads 25 values as 10, 10 and 5 on the upload alarm", async () => {
    const f = installFakes(server(ok));
    f.store.set("auth", auth(1));
    f.store.set("config", cfgRecord);
    await f.startWorker();
    await f.message({ action: "collect_metric_data", values: values(25) });
    await f.fireAlarm("upload");
    await vi.waitFor(() => expect(syncs(f.sent)).toHaveLength(3));
    const b = syncs(f.sent);
    expect(b.map((x) => x.items.length)).toEqual([10, 10, 5]);
    expect(new Set(b.map((x) => x.client_batch_id)).size).toBe(3);
    expect(b[0].items[0].shop_id).toBe("7");
    await vi.waitFor(async () => expect((await f.message({ action: "get_cache_queue" })).queue).toMatchObject({ queued: 0, pending: 0 }));
  });

  it("sends a run's first batch alone, then two batches at once, each once", async () => {
    let inflight = 0;
    const starts: number[] = [];
    const f = installFakes((path, body) => path !== "/api/v1/data/crx/sync" ? server(ok)(path, body) : (async () => {
      starts.push(inflight++);
      await new Promise((r) => setTimeout(r, 20));
      inflight--;
      return ok(body);
    })());
    f.store.set("auth", auth(1));
    f.store.set("config", cfgRecord);
    await f.startWorker();
    await f.message({ action: "collect_metric_data", values: values(45) });
    await f.fireAlarm("upload");
    await vi.waitFor(async () => expect((await f.message({ action: "get_cache_queue" })).queue).toMatchObject({ queued: 0, pending: 0 }));
    const b = syncs(f.sent);
    expect(b.map((x) => x.items.length)).toEqual([10, 10, 10, 10, 5]);
    expect(new Set(b.map((x) => x.client_batch_id)).size).toBe(5);
    expect(starts).toEqual([0, 0, 1, 0, 1]);
  });

  it("sends a batch refused with 413 again as two halves with new ids, each value once", async () => {
    const f = installFakes(server((body) => (body.items.length > 5 ? { status: 413 } : ok(body))));
    f.store.set("auth", auth(1));
    f.store.set("config", cfgRecord);
    await f.startWorker();
    // 45 values: the first batch alone, then two at a time, both refused at once too
    await f.message({ action: "collect_metric_data", values: values(45) });
    await f.fireAlarm("upload");
    await vi.waitFor(async () => expect((await f.message({ action: "get_cache_queue" })).queue).toMatchObject({ queued: 0, pending: 0 }));
    const b = syncs(f.sent);
    const stored = b.filter((x) => x.items.length <= 5);
    expect(stored.map((x) => x.items.length)).toEqual(Array(9).fill(5));
    expect(stored.flatMap((x) => x.items.map((i: any) => i.value)).sort((x: number, y: number) => x - y)).toEqual([...Array(45).keys()]);
    expect(new Set(b.map((x) => x.client_batch_id)).size).toBe(b.length);
    expect(f.sent.some((s) => s.path === "/api/v1/log/error")).toBe(false);
  });

  it("retries a failed batch with the same id after a restart, not before Retry-After", async () => {
    let fail = true;
    const f = installFakes(server((body) => (fail ? { status: 503, headers: { "Retry-After": "120" } } : ok(body))));
    f.store.set("auth", auth(1));
    f.store.set("config", cfgRecord);
    await f.startWorker();
    await f.message({ action: "collect_metric_data", values: values(3) });
    const t0 = Date.now();
    await f.fireAlarm("upload");
    await vi.waitFor(() => expect(f.alarms.get("retry")).toBeDefined());
    expect(f.alarms.get("retry")!.scheduledTime).toBeGreaterThanOrEqual(t0 + 120_000);
    // Not due yet: the upload alarm sends nothing.
    await f.fireAlarm("upload");
    expect(syncs(f.sent)).toHaveLength(1);
    // The worker restarts; the pending batch, due now, goes again with its id.
    const q = f.store.get("cache_queue") as any;
    q.pending[0].next_attempt_at = Date.now() - 1;
    f.store.set("cache_queue", q);
    fail = false;
    await f.startWorker();
    await f.fireAlarm("retry");
    await vi.waitFor(() => expect(syncs(f.sent)).toHaveLength(2));
    const [a, b] = syncs(f.sent);
    expect(b.client_batch_id).toBe(a.client_batch_id);
    expect(b.items).toEqual(a.items);
  });

  it("stops uploading on 401 and keeps the queue", async () => {
    const f = installFakes(server(() => ({ status: 401 })));
    f.store.set("auth", auth(1));
    f.store.set("config", cfgRecord);
    await f.startWorker();
    await f.message({ action: "collect_metric_data", values: values(12) });
    await f.fireAlarm("upload");
    await vi.waitFor(() => expect((f.store.get("sync_status") as any)?.state).toBe("needs_login"));
    await f.fireAlarm("upload");
    expect(syncs(f.sent)).toHaveLength(1);
    expect((await f.message({ action: "get_cache_queue" })).queue).toMatchObject({ queued: 0, pending: 12 });
  });

  it("drops a batch refused with 400 and reports it", async () => {
    const f = installFakes(server(() => ({ status: 400 })));
    f.store.set("auth", auth(1));
    f.store.set("config", cfgRecord);
    await f.startWorker();
    await f.message({ action: "collect_metric_data", values: values(2) });
    await f.fireAlarm("upload");
    await vi.waitFor(() => expect(f.sent.some((s) => s.path === "/api/v1/log/error")).toBe(true));
    expect(syncs(f.sent)).toHaveLength(1);
  });

  it("stops uploading when the version check says an update is required", async () => {
    const f = installFakes((path, body) => path === "/api/v1/data/crx/ver"
      ? { status: 200, data: { latest_version: "2.0.0", min_supported_version: "2.0.0", update_required: true, download_url: "/dl.zip" } }
      : server(ok)(path, body));
    f.store.set("auth", auth(1));
    f.store.set("config", cfgRecord);
    await f.startWorker();
    const st = (await f.message({ action: "get_status" })).state.status;
    expect(st.state).toBe("update_required");
    expect(st.update).toMatchObject({ required: true, latest: "2.0.0", download_url: "http://server/dl.zip" });
    await f.message({ action: "collect_metric_data", values: values(3) });
    await f.fireAlarm("upload");
    expect(syncs(f.sent)).toHaveLength(0);
  });

  it("signs out: storage and alarms cleared", async () => {
    const f = installFakes(server(ok));
    f.store.set("auth", auth(1));
    f.store.set("config", cfgRecord);
    await f.startWorker();
    await f.message({ action: "logout" });
    expect(f.store.size).toBe(0);
    expect(f.alarms.size).toBe(0);
  });
});
