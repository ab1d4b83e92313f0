// The service worker: the only writer of storage. Listeners are registered synchronously at
// the top level; nothing lives in globals between events (the worker is stopped when idle):
// every handler reads storage, and uploads, retries, collection, configuration and version
// checks run on chrome.alarms.
import { call } from "./api";
import {
  backoffMs, classify, completeBatches, emptyQueue, enqueue, loginExpired, pendingCount, statTime, splitBatch, takeBatches, UPLOAD_PARALLEL,
} from "./queue";
import type { Outcome } from "./queue";
import type {
  AuthRecord, CacheQueue, CollectedValue, ConfigRecord, Message, PendingBatch, PopupState, QueuedItem, Reply,
  StorageShape, SyncStatus, AdhocCapture, SyncResponse,
} from "./types";

/** google.protobuf.Struct as the OpenAPI document types it. */
type Struct = Record<string, never>;

declare const __DEFAULT_SERVER__: string;
const VERSION = chrome.runtime.getManifest().version;
const KEYS = ["auth", "config", "sync_status", "cache_queue"] as const;
const MAX_ERRORS = 20;
const MAX_REJECTIONS = 50;
const TAB_TIMEOUT_MS = 30_000;

// ---- storage -----------------------------------------------------------------------------

async function read(...keys: (typeof KEYS)[number][]): Promise<StorageShape> {
  return (await chrome.storage.local.get(keys.length ? keys : [...KEYS])) as StorageShape;
}

/** Writes the queue with its counts in sync_status; call inside locked(). */
async function saveQueue(q: CacheQueue): Promise<void> {
  const st = (await read("sync_status")).sync_status ?? newStatus();
  st.queued = q.items.length;
  st.pending = pendingCount(q);
  await chrome.storage.local.set({ cache_queue: q, sync_status: st });
}

/** Serialises read-modify-write of storage within this worker (Web Locks). */
function locked<T>(fn: () => Promise<T>): Promise<T> {
  return navigator.locks.request("shopmind-storage", fn) as Promise<T>;
}

function newStatus(): SyncStatus {
  return {
    state: "idle", queued: 0, pending: 0, last_upload_at: 0, last_result: null, next_upload_at: 0, errors: [], rejections: [],
    dropped: 0, update: null, collecting_tabs: [], last_adhoc: null,
  };
}

async function patchStatus(fn: (s: SyncStatus) => void): Promise<void> {
  await locked(async () => {
    const s = (await read("sync_status")).sync_status ?? newStatus();
    fn(s);
    s.errors = s.errors.slice(-MAX_ERRORS);
    s.rejections = s.rejections.slice(-MAX_REJECTIONS);
    await chrome.storage.local.set({ sync_status: s });
  });
  void broadcast();
}

function addError(s: SyncStatus, message: string): void {
  s.errors.push({ at: Date.now(), message });
}

async function popupState(): Promise<PopupState> {
  const s = await read("auth", "config", "sync_status");
  const status = s.sync_status ?? newStatus();
  let auth: PopupState["auth"] = null;
  if (s.auth) {
    const { access_token: _t, ...rest } = s.auth;
    auth = rest;
  }
  return {
    signed_in: !!s.auth, auth, config: s.config ?? null, status,
    queued: status.queued, pending: status.pending, version: VERSION,
  };
}

/** status_update: tells an open popup what changed (nobody listening is fine). */
async function broadcast(): Promise<void> {
  const msg: Message = { action: "status_update", status: await popupState() };
  chrome.runtime.sendMessage(msg).catch(() => {});
}

async function clearAll(): Promise<void> {
  await chrome.alarms.clearAll();
  await locked(() => chrome.storage.local.clear());
  await chrome.action.setBadgeText({ text: "" });
}

// ---- start -------------------------------------------------------------------------------

/** Runs at every start of the worker; handlers wait for it. */
async function start(): Promise<void> {
  const s = await read();
  if (s.auth && loginExpired(s.auth.login_timestamp, s.config?.server.login_expiry_days)) {
    console.warn("ShopMind: the login is older than the login expiry; storage cleared");
    await clearAll();
    return;
  }
  if (!s.auth) return;
  // Tabs a stopped worker left open.
  const stale = s.sync_status?.collecting_tabs ?? [];
  if (stale.length) {
    await Promise.all(stale.map((id) => chrome.tabs.remove(id).catch(() => {})));
    await patchStatus((st) => { st.collecting_tabs = []; });
  }
  await ensureAlarms(s.config);
  if (Date.now() - (s.sync_status?.update?.checked_at ?? 0) > 86_400_000) await checkVersion();
}

const ready = start().catch((e) => console.error("ShopMind start", e));

function uploadIntervalSeconds(c?: ConfigRecord): number {
  return c?.upload_interval_seconds || c?.server.upload?.interval_seconds || 300;
}

async function ensureAlarms(c?: ConfigRecord, reset = false): Promise<void> {
  const want: Record<string, number> = {
    upload: Math.max(0.5, uploadIntervalSeconds(c) / 60), collect: 1, config: 5, version: 1440,
  };
  for (const [name, period] of Object.entries(want)) {
    const a = await chrome.alarms.get(name);
    if (reset || !a || a.periodInMinutes !== period) await chrome.alarms.create(name, { periodInMinutes: period, delayInMinutes: period });
  }
  const a = await chrome.alarms.get("upload");
  if (a) await patchStatus((st) => { st.next_upload_at = a.scheduledTime; });
}

// ---- listeners (registered synchronously) ------------------------------------------------

chrome.runtime.onInstalled.addListener(() => void ready);
chrome.runtime.onStartup.addListener(() => void ready);

chrome.alarms.onAlarm.addListener((alarm) => {
  void (async () => {
    await ready;
    switch (alarm.name) {
      case "upload": {
        const a = await chrome.alarms.get("upload");
        if (a) await patchStatus((st) => { st.next_upload_at = a.scheduledTime; });
        return upload(false);
      }
      case "retry": return upload(false);
      case "collect": return collectDue();
      case "config": return refreshConfig();
      case "version": return checkVersion();
    }
  })().catch((e) => console.error("ShopMind alarm", alarm.name, e));
});

chrome.runtime.onMessage.addListener((msg: Message, sender, sendResponse: (r: Reply) => void) => {
  ready
    .then(() => handle(msg, sender))
    .then(sendResponse, (e) => sendResponse({ ok: false, error: e instanceof Error ? e.message : String(e) }));
  return true;
});

/** Answers of background tabs, by tab id: only for the run that opened them. */
const tabWaiters = new Map<number, () => void>();

async function handle(msg: Message, sender: chrome.runtime.MessageSender): Promise<Reply> {
  switch (msg.action) {
    case "login": return login(msg);
    case "get_captcha": {
      const a = await call(msg.server, null, "get", "/api/v1/tenant/auth/captcha");
      if (!a.data) return { ok: false, error: a.message || "captcha unavailable" };
      return { ok: true, captcha: { captcha_id: a.data.captcha_id ?? "", image: a.data.image ?? "" } };
    }
    case "get_status": return { ok: true, state: await popupState() };
    case "save_settings": {
      await locked(async () => {
        const c = (await read()).config;
        if (!c) return;
        if (msg.upload_interval_seconds !== undefined) c.upload_interval_seconds = Math.max(0, Math.min(86_400, Math.round(msg.upload_interval_seconds)));
        if (msg.shop_by_platform) c.shop_by_platform = { ...c.shop_by_platform, ...msg.shop_by_platform };
        await chrome.storage.local.set({ config: c });
      });
      await ensureAlarms((await read()).config, true);
      return { ok: true, state: await popupState() };
    }
    case "force_sync":
      await refreshConfig();
      await patchStatus((st) => { if (st.state === "needs_login" || st.state === "retrying") st.state = "idle"; });
      await upload(true);
      return { ok: true, state: await popupState() };
    case "get_cache_queue": {
      const q = (await read()).cache_queue ?? emptyQueue();
      return { ok: true, queue: { queued: q.items.length, pending: pendingCount(q), bytes: q.bytes, oldest: q.items[0]?.collected_at ?? null } };
    }
    case "logout":
      await clearAll();
      return { ok: true, state: await popupState() };
    case "collect_adhoc_data": {
      const tabId = msg.tab_id ?? (await chrome.tabs.query({ active: true, currentWindow: true }))[0]?.id;
      if (tabId === undefined) return { ok: false, error: "no page to collect" };
      // The content script answers with adhoc_data_collected.
      const fwd: Message = { action: "collect_adhoc_data" };
      const r = (await chrome.tabs.sendMessage(tabId, fwd)) as Reply | undefined;
      return r ?? { ok: false, error: "the page did not answer" };
    }
    case "adhoc_data_collected": return uploadAdhoc(msg.capture);
    case "collect_metric_data": {
      await enqueueValues(msg.values);
      if (sender.tab?.id !== undefined) tabWaiters.get(sender.tab.id)?.();
      return { ok: true };
    }
    case "collect_now": await collectDue(true); return { ok: true };
    case "sync_start":
    case "status_update":
      return { ok: true };
  }
}

// ---- sign-in, configuration, version -------------------------------------------------------

async function login(msg: Extract<Message, { action: "login" }>): Promise<Reply> {
  const server = (msg.server || __DEFAULT_SERVER__).trim().replace(/\/+$/, "");
  const body: { tenant_code: string; username: string; password: string; captcha_id?: string; captcha_code?: string } = {
    tenant_code: msg.tenant_code.trim(), username: msg.username.trim(), password: msg.password,
  };
  if (msg.captcha_id && msg.captcha_code) { body.captcha_id = msg.captcha_id; body.captcha_code = msg.captcha_code; }
  const a = await call(server, null, "post", "/api/v1/auth/login", { body });
  if (!a.data?.access_token) {
    // The server asks for a captcha after failed sign-ins ("captcha required") and refuses a
    // wrong, expired or used one; the popup says which in the user's language.
    const captcha = /captcha/i.test(a.message);
    return { ok: false, error: a.message || `sign-in failed (${a.status})`, captcha_required: captcha,
      ...(captcha ? { captcha_problem: /captcha required/i.test(a.message) ? "required" as const : "wrong" as const } : {}) };
  }
  const auth: AuthRecord = {
    server, access_token: a.data.access_token, tenant_code: body.tenant_code, username: a.data.user?.username ?? body.username,
    user_id: String(a.data.user?.id ?? ""), login_timestamp: Date.now(),
  };
  // Signing in again as the same user on the same server (after a 401) keeps the queue;
  // another user, tenant or server starts afresh.
  const before = (await read("auth")).auth;
  if (before && (before.server !== auth.server || before.tenant_code !== auth.tenant_code || before.username !== auth.username)) await clearAll();
  await locked(async () => {
    const prev = await read("sync_status");
    await chrome.storage.local.set({ auth, sync_status: { ...(prev.sync_status ?? newStatus()), state: "idle" } });
  });
  const err = await refreshConfig(true);
  if (err) return { ok: false, error: err };
  await checkVersion();
  void upload(false);
  return { ok: true, state: await popupState() };
}

/** Reads the configuration; replaces the cached copy when config_version changed. */
async function refreshConfig(force = false): Promise<string | null> {
  const s = await read();
  if (!s.auth) return "not signed in";
  const a = await call(s.auth.server, s.auth.access_token, "get", "/api/v1/auth/config");
  if (a.status === 401) {
    await patchStatus((st) => { st.state = "needs_login"; addError(st, "signed out by the server: sign in again"); });
    return "signed out by the server: sign in again";
  }
  if (!a.data) return a.message || `configuration unavailable (${a.status})`;
  const cfg = a.data;
  if (!force && s.config && s.config.server.config_version === cfg.config_version) return null;
  const shops = await listShops(s.auth);
  await locked(async () => {
    const prev = (await read()).config;
    const shop_by_platform = { ...(prev?.shop_by_platform ?? {}) };
    for (const m of cfg.metrics ?? []) {
      const p = m.platform ?? "";
      if (!shop_by_platform[p] || !shops.some((sh) => sh.id === shop_by_platform[p])) {
        const first = shops.find((sh) => sh.platform === p);
        if (first) shop_by_platform[p] = first.id;
      }
    }
    const next: ConfigRecord = {
      server: cfg, upload_interval_seconds: prev?.upload_interval_seconds ?? 0, shop_by_platform, shops,
      pages: prev?.pages ?? {}, last_collected: prev?.last_collected ?? {},
    };
    await chrome.storage.local.set({ config: next });
  });
  await ensureAlarms((await read()).config, true);
  void broadcast();
  return null;
}

async function listShops(auth: AuthRecord): Promise<ConfigRecord["shops"]> {
  const a = await call(auth.server, auth.access_token, "get", "/api/v1/basic/shops", { query: { page_size: 100 } });
  return (a.data?.items ?? []).map((s) => ({ id: String(s.id ?? ""), name: s.name ?? "", platform: s.platform ?? "" }));
}

async function checkVersion(): Promise<void> {
  const s = await read();
  const server = s.auth?.server ?? __DEFAULT_SERVER__;
  const a = await call(server, null, "get", "/api/v1/data/crx/ver", { query: { current_version: VERSION } });
  if (!a.data) return;
  const d = a.data;
  const url = d.download_url ? new URL(d.download_url, server + "/").toString() : "";
  await patchStatus((st) => {
    st.update = { required: !!d.update_required, available: !!d.update_available, latest: d.latest_version ?? "", download_url: url, checked_at: Date.now() };
    if (d.update_required) st.state = "update_required";
    else if (st.state === "update_required") st.state = "idle";
  });
  await chrome.action.setBadgeText({ text: d.update_required || d.update_available ? "↑" : "" });
}

async function reportError(message: string, context: Record<string, unknown>): Promise<void> {
  const s = await read();
  if (!s.auth) return;
  await call(s.auth.server, s.auth.access_token, "post", "/api/v1/log/error", {
    body: { level: "error", message: message.slice(0, 4096), extension_version: VERSION, context: context as Struct, user_agent: navigator.userAgent },
  });
}

// ---- the queue -----------------------------------------------------------------------------

async function enqueueValues(values: CollectedValue[]): Promise<void> {
  if (!values.length) return;
  const dropped = await locked(async () => {
    const s = await read();
    if (!s.auth || !s.config) return 0;
    const metrics = new Map((s.config.server.metrics ?? []).map((m) => [`${m.platform}/${m.key}`, m]));
    const items: QueuedItem[] = [];
    for (const v of values) {
      const m = metrics.get(`${v.platform}/${v.metric_key}`);
      const shop = s.config.shop_by_platform[v.platform];
      if (!m || !shop || !Number.isFinite(v.value)) continue;
      const at = new Date(v.collected_at);
      items.push({
        metric_key: v.metric_key, shop_id: shop, value: v.value, platform: v.platform,
        collected_at: at.toISOString(), stat_time: statTime(at, m.interval_seconds ?? 0), page_url: v.page_url.slice(0, 2048),
      });
      s.config.pages[v.metric_key] = v.page_url;
      s.config.last_collected[v.metric_key] = Date.now();
    }
    const { queue, dropped } = enqueue(s.cache_queue ?? emptyQueue(), items);
    await chrome.storage.local.set({ config: s.config });
    await saveQueue(queue);
    return dropped.length;
  });
  if (dropped) {
    console.warn(`ShopMind: queue full, ${dropped} oldest values dropped`);
    await patchStatus((st) => { st.dropped += dropped; addError(st, `queue full: ${dropped} oldest values dropped`); });
    void reportError(`queue full: ${dropped} oldest values dropped`, { dropped });
  }
  void broadcast();
}

/** Uploads the queue batch by batch; one run at a time (Web Locks). */
async function upload(force: boolean): Promise<void> {
  await navigator.locks.request("shopmind-upload", { ifAvailable: true }, async (lock) => {
    if (!lock) return;
    let done: string[] = []; // batches answered, removed from storage with the next write
    // Removes the answered batches (and applies fn to the queue) in one write.
    const settle = (fn?: (q: CacheQueue) => CacheQueue) => locked(async () => {
      const cur = (await read("cache_queue")).cache_queue ?? emptyQueue();
      let next = completeBatches(cur, done);
      if (fn) next = fn(next);
      if (next !== cur) await saveQueue(next);
      done = [];
      return next;
    });
    run: for (;;) {
      const s = await read("auth", "config", "sync_status");
      if (!s.auth || !s.config) return settle();
      const st = s.sync_status ?? newStatus();
      if (!force && !done.length && (st.state === "needs_login" || st.state === "update_required")) return;
      const batchSize = s.config.server.upload?.batch_size || 100;
      const q = await settle((cur) => takeBatches(cur, batchSize, () => crypto.randomUUID()));
      if (!q.pending.length) {
        await patchStatus((x) => { if (x.state === "uploading" || x.state === "retrying") x.state = "idle"; });
        return;
      }
      // The first batch of a run goes alone; after an accepted one, UPLOAD_PARALLEL batches
      // are in flight at once (the server stores one while the next travels). A 401, an
      // update required or a failure stops the run after the batches already sent.
      let parallel = 1;
      for (let i = 0; i < q.pending.length;) {
        const group: PendingBatch[] = [];
        for (const p of q.pending.slice(i, i + parallel)) {
          if (!force && p.next_attempt_at > Date.now()) break;
          force = false;
          group.push(p);
        }
        if (!group.length) {
          await settle();
          await chrome.alarms.create("retry", { when: q.pending[i].next_attempt_at });
          return;
        }
        i += group.length;
        const start: Message = { action: "sync_start" };
        chrome.runtime.sendMessage(start).catch(() => {});
        const answers = await Promise.all(group.map((p) => call(s.auth!.server, s.auth!.access_token, "post", "/api/v1/data/crx/sync", {
          body: { client_batch_id: p.client_batch_id, extension_version: VERSION, items: p.items },
        })));
        let stop: { p: PendingBatch; a: (typeof answers)[number]; outcome: Outcome } | null = null;
        const splits: { p: PendingBatch; message: string }[] = [];
        for (const [k, p] of group.entries()) {
          const a = answers[k];
          const outcome = classify(a.status);
          if (outcome === "done") {
            done.push(p.client_batch_id);
            const d: Partial<SyncResponse> = a.data ?? {};
            await patchStatus((x) => {
              x.state = "uploading";
              x.pending -= p.items.length;
              x.last_upload_at = Date.now();
              x.last_result = { accepted: d.accepted ?? 0, duplicates: d.duplicates ?? 0, rejected: d.rejected ?? 0 };
              for (const e of d.errors ?? []) {
                x.rejections.push({ metric_key: e.metric_key ?? p.items[e.index ?? 0]?.metric_key ?? "", code: e.code ?? "", message: e.message ?? "", at: Date.now() });
              }
            });
          } else if (outcome === "drop") {
            // A refusal a retry cannot change (400, 403, 404, 413): reported, the batch dropped.
            done.push(p.client_batch_id);
            await patchStatus((x) => { x.state = "error"; addError(x, `upload refused (${a.status}): ${a.message}; ${p.items.length} values dropped`); });
            await reportError(`upload refused (${a.status}): ${a.message}`, { status: a.status, client_batch_id: p.client_batch_id, items: p.items.length });
          } else if (outcome === "split") {
            splits.push({ p, message: a.message });
          } else if (!stop) {
            stop = { p, a, outcome };
          }
        }
        if (splits.length) {
          // 413: refused at the edge, nothing stored; sent again as two halves with new ids.
          await settle((cur) => splits.reduce((q2, x) => splitBatch(q2, x.p.client_batch_id, () => crypto.randomUUID()), cur));
          for (const { p, message } of splits) {
            const one = p.items.length < 2;
            await patchStatus((x) => { addError(x, one ? `upload refused (413): ${message}; 1 value dropped` : `upload too large for the server (413): ${p.items.length} values sent again as two batches`); });
            if (one) await reportError(`upload refused (413): ${message}`, { status: 413, client_batch_id: p.client_batch_id, items: 1 });
          }
        }
        if (!stop) {
          if (splits.length) continue run; // the pending list changed: read it again
          parallel = UPLOAD_PARALLEL;
          continue;
        }
        const { p, a, outcome } = stop;
        if (outcome === "signin") {
          await settle();
          await patchStatus((x) => { x.state = "needs_login"; addError(x, "signed out by the server: sign in again (the queue is kept)"); });
          await chrome.action.setBadgeText({ text: "!" });
          return;
        }
        if (outcome === "update") {
          await settle();
          await patchStatus((x) => { x.state = "update_required"; addError(x, a.message || "update the extension"); });
          return;
        }
        // retry: same batch id and items, later.
        const wait = backoffMs(p.attempts + 1, a.retry_after_ms);
        const when = Date.now() + wait;
        await settle((cur) => ({
          ...cur,
          pending: cur.pending.map((x) => (x.client_batch_id === p.client_batch_id ? { ...x, attempts: x.attempts + 1, next_attempt_at: when } : x)),
        }));
        await chrome.alarms.create("retry", { when });
        await patchStatus((x) => { x.state = "retrying"; x.next_upload_at = when; addError(x, `upload failed (${a.status || "network"}): ${a.message}; retrying`); });
        if (wait < 25_000) setTimeout(() => void upload(false), wait + 50);
        return;
      }
    }
  });
}

// ---- collection ------------------------------------------------------------------------------

function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Revisits, in background tabs, the pages of metrics whose interval has passed. */
async function collectDue(all = false): Promise<void> {
  const s = await read();
  if (!s.auth || !s.config) return;
  const c = s.config;
  const now = Date.now();
  const urls = new Set<string>();
  for (const m of c.server.metrics ?? []) {
    const url = c.pages[m.key ?? ""];
    if (!url) continue;
    if (all || now - (c.last_collected[m.key ?? ""] ?? 0) >= (m.interval_seconds || 600) * 1000) urls.add(url);
  }
  await openTabs([...urls], c);
}

async function openTabs(urls: string[], c: ConfigRecord): Promise<void> {
  const u = c.server.upload ?? {};
  const limit = Math.max(1, u.max_concurrent_tabs || 1);
  const lo = Math.max(0, u.random_delay_ms_min ?? 0), hi = Math.max(lo, u.random_delay_ms_max ?? lo);
  let next = 0;
  const worker = async () => {
    while (next < urls.length) {
      const url = urls[next++];
      await delay(lo + Math.random() * (hi - lo));
      const tab = await chrome.tabs.create({ url, active: false });
      if (tab.id === undefined) continue;
      const id = tab.id;
      await patchStatus((st) => { st.collecting_tabs.push(id); });
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, TAB_TIMEOUT_MS);
        tabWaiters.set(id, () => { clearTimeout(t); resolve(); });
      });
      tabWaiters.delete(id);
      await chrome.tabs.remove(id).catch(() => {});
      await patchStatus((st) => { st.collecting_tabs = st.collecting_tabs.filter((x) => x !== id); });
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, urls.length) }, worker));
}

async function uploadAdhoc(capture: AdhocCapture): Promise<Reply> {
  const s = await read();
  if (!s.auth) return { ok: false, error: "not signed in" };
  const a = await call(s.auth.server, s.auth.access_token, "post", "/api/v1/data/crx/adhoc", {
    body: {
      client_id: crypto.randomUUID(), page_url: capture.page_url.slice(0, 2048), page_title: capture.page_title.slice(0, 512),
      collected_at: new Date().toISOString(), data: capture.data as Struct,
    },
  });
  await patchStatus((st) => {
    st.last_adhoc = { at: Date.now(), title: capture.page_title, id: String(a.data?.id ?? ""), error: a.data ? "" : a.message || `upload failed (${a.status})` };
    if (a.status === 401) st.state = "needs_login";
  });
  return a.data ? { ok: true } : { ok: false, error: a.message };
}
