// The extension in Debian's chromium against the running platform (started by
// tests/platform/extension, which sets the environment), through a proxy that counts batches
// and injects faults, collecting from a local back office imitation. One browser, steps in
// order: each step leaves the queue empty for the next.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { copyExtension, env, killWorker, launch, sleep, startBackOffice, startProxy, until } from "./helpers.mjs";

const API = env("SHOPMIND_URL");
const ADMIN = env("SHOPMIND_ADMIN_TOKEN");
const SHOP = env("SHOPMIND_SHOP_ID");
const OUT = process.env.TEST_OUTPUT ?? "test-output";
mkdirSync(OUT, { recursive: true });

let office, proxy, ext, profile, browser, popup;
let slot = 0; // distinct minutes for synthetic values, so none is a duplicate of another

async function api(method, path, body) {
  const res = await fetch(API + path, {
    method, headers: { Authorization: "Bearer " + ADMIN, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const j = await res.json();
  assert.equal(j.code, 0, `${method} ${path}: ${res.status} ${JSON.stringify(j)}`);
  return j.data;
}

/**
 * Asks the platform's chat (POST /api/v2/chat/message, the production chat service: the
 * offline analyst, no model configured) and reads the event stream to its end; returns the
 * answer's text.
 */
async function chat(question) {
  const res = await fetch(API + "/api/v2/chat/message", {
    method: "POST", headers: { Authorization: "Bearer " + ADMIN, "Content-Type": "application/json", Accept: "text/event-stream" },
    body: JSON.stringify({ message: question }),
  });
  const raw = await res.text();
  assert.equal(res.status, 200, raw);
  const data = raw.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim());
  assert.equal(data.at(-1), "[DONE]", `the stream ends with [DONE]: ${raw.slice(-500)}`);
  let text = "";
  for (const d of data.slice(0, -1)) {
    const ev = JSON.parse(d);
    if (ev.object === "chat.completion.chunk") text += ev.choices?.[0]?.delta?.content ?? "";
  }
  return text;
}

/** A number as the chat writes an amount: 1,555.50. */
const money = (v) => v.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });

async function storage() {
  return popup.evaluate(() => chrome.storage.local.get(null));
}

/** Values in the queue (queued and in pending batches), counted in the popup's page. */
async function queued() {
  return popup.evaluate(async () => {
    const q = (await chrome.storage.local.get("cache_queue")).cache_queue ?? { items: [], pending: [] };
    return q.items.length + q.pending.reduce((n, p) => n + p.items.length, 0);
  });
}

/** The queue's counts the worker keeps in sync_status: a cheap read while a large queue drains. */
async function statusQueued() {
  return popup.evaluate(async () => {
    const st = (await chrome.storage.local.get("sync_status")).sync_status;
    return st ? st.queued + st.pending : -1;
  });
}

async function openPopup() {
  if (popup && !popup.isClosed()) await popup.close();
  popup = await browser.context.newPage();
  await popup.setViewportSize({ width: 360, height: 640 });
  await popup.goto(`chrome-extension://${browser.id}/popup.html`);
  await popup.waitForFunction(() => !document.getElementById("login").hidden || !document.getElementById("main").hidden);
}

const T0 = Date.now();
/** n synthetic values, each of its own minute (stat_time), none matching another. */
function values(n, metric = "synthetic") {
  const now = T0;
  return Array.from({ length: n }, (_, i) => ({
    metric_key: metric, platform: "taobao", value: i + 1, page_url: office.base + "/backoffice/dom",
    collected_at: new Date(now - (++slot + 60) * 60_000).toISOString(),
  }));
}

async function enqueue(vals) {
  for (let i = 0; i < vals.length; i += 1000) {
    const r = await popup.evaluate((v) => chrome.runtime.sendMessage({ action: "collect_metric_data", values: v }), vals.slice(i, i + 1000));
    assert.ok(r.ok, JSON.stringify(r));
  }
}

/** Stored values per metric key, from a derived metric's preview (count and sum). */
async function stored() {
  const body = (name) => ({
    metric_names: [name], dimensions: ["diy_crx_metrics.metric_key"],
    start_time: new Date(Date.now() - 40 * 86_400_000).toISOString(), end_time: new Date(Date.now() + 86_400_000).toISOString(),
    filters: [{ field: "diy_crx_metrics.shop_id", operator: "eq", value: Number(SHOP) }],
  });
  const out = {};
  for (const name of ["ext_sum", "ext_count"]) {
    const p = await api("POST", "/api/v1/anls/query/preview", body(name));
    for (const r of p.rows) (out[r[0]] ??= {})[name] = Number(r[1]);
  }
  return out;
}

const metric = (key, source, page, extra) => ({
  key, name: key, platform: "taobao", url_pattern: `^http://backoffice\\.shop\\.test:[0-9]+/backoffice/${page}`, source, interval_seconds: 3600, ...extra,
});
/** Stored synthetic values. */
const count = async () => (await stored()).synthetic?.ext_count ?? 0;
const apiMetric = (key, page, n) => metric(key, "api", page, { api_url_pattern: `/backoffice/data\\.json\\?n=${n}&`, json_path: "$.data.traffic.visitors" });

before(async () => {
  office = await startBackOffice();
  proxy = await startProxy(API);
  await api("PUT", "/api/v1/crx/config-m", {
    metrics: [metric("gmv", "dom", "dom$", { selector: "#gmv" }), apiMetric("visitors", "api$", 0),
      ...[1, 2, 3, 4].map((n) => apiMetric(`slow_${n}`, `slow\\?n=${n}$`, n)),
      // Values the suite queues itself (read on no page), one a minute.
      { ...metric("synthetic", "dom", "never$", { selector: "#none" }), interval_seconds: 60 }],
    upload: { batch_size: 10, interval_seconds: 3600, max_concurrent_tabs: 2, random_delay_ms_min: 0, random_delay_ms_max: 100 },
  });
  for (const [name, aggregation] of [["ext_sum", "sum"], ["ext_count", "count"]]) {
    await api("POST", "/analysis/api/v1/analytics/metrics", {
      name, display_name: name, group: "Extension", type: "derived", config: { derived: { source_field: "diy_crx_metrics.value", aggregation } },
    });
  }
  ext = copyExtension(env("EXTENSION_DIR"));
  profile = mkdtempSync(join(tmpdir(), "shopmind-profile-"));
  browser = await launch(ext.dir, profile);
  await openPopup();
});

after(async () => {
  await browser?.context.close();
  await office?.close();
  await proxy?.close();
  ext?.remove();
  rmSync(profile, { recursive: true, force: true });
});

test("the popup shows the captcha the server asks for after failed logins; a wrong one is refused", async () => {
  // A user name of its own: the server counts failed logins per tenant and user name.
  await popup.fill("#server", proxy.base);
  await popup.fill("#tenant", env("SHOPMIND_TENANT"));
  await popup.fill("#username", "captcha.probe");
  const attempt = async (password) => {
    await popup.fill("#password", password);
    await popup.click("#signin");
    await popup.waitForFunction(() => !document.getElementById("signin").disabled && document.getElementById("login-error").textContent !== "");
    return popup.textContent("#login-error");
  };
  for (let i = 0; i < 3; i++) {
    assert.match(await attempt(`wrong password ${i}`), /invalid tenant, username or password/);
    assert.ok(await popup.isHidden("#captcha-row"), "no captcha before the server asks for one");
  }
  // The server now asks for a captcha: the popup says so and shows the server's image.
  assert.match(await attempt("wrong password 3"), /Too many failed sign-ins: type the characters in the image/);
  assert.match(await popup.getAttribute("#login-error", "title"), /captcha required/);
  await popup.waitForSelector("#captcha-row", { state: "visible" });
  await popup.waitForFunction(() => { const i = document.getElementById("captcha-img"); return i.complete && i.naturalWidth > 0 && i.naturalHeight > 0; });
  const first = await popup.getAttribute("#captcha-img", "src");
  assert.match(first, /^data:image\/png;base64,/);
  await popup.screenshot({ path: join(OUT, "popup-captcha.png") });
  // A wrong answer (letters: the server's codes are digits) is refused with its reason, and a
  // new captcha replaces the used one; nobody is signed in.
  await popup.fill("#captcha", "wrong");
  assert.match(await attempt("wrong password 4"), /Wrong characters: type the ones in the new image/);
  assert.match(await popup.getAttribute("#login-error", "title"), /wrong captcha code/);
  await popup.waitForFunction((src) => document.getElementById("captcha-img").src !== src && document.getElementById("captcha-img").naturalWidth > 0, first);
  assert.equal(await popup.inputValue("#captcha"), "", "the used answer is cleared");
  assert.ok(await popup.isVisible("#login") && (await popup.isHidden("#main")));
  assert.equal((await storage()).auth, undefined);
  await popup.screenshot({ path: join(OUT, "popup-captcha-refused.png") });
});

test("sign in through the popup; the configuration is read", async () => {
  assert.ok(await popup.isVisible("#login"), "signed out at first");
  await popup.fill("#server", proxy.base);
  await popup.fill("#tenant", env("SHOPMIND_TENANT"));
  await popup.fill("#username", env("SHOPMIND_USER"));
  await popup.fill("#password", "wrong password");
  await popup.click("#signin");
  await popup.waitForFunction(() => document.getElementById("login-error").textContent !== "");
  assert.ok(await popup.isVisible("#login"), "a wrong password does not sign in");
  await popup.fill("#password", env("SHOPMIND_PASSWORD"));
  await popup.click("#signin");
  await popup.waitForSelector("#main", { state: "visible" });
  assert.equal(await popup.textContent("#who"), env("SHOPMIND_USER"));
  assert.equal(await popup.textContent("#tenant-name"), env("SHOPMIND_TENANT"));
  const s = await storage();
  assert.deepEqual(Object.keys(s).sort(), ["auth", "config", "sync_status"]);
  assert.ok(s.auth.access_token && Math.abs(s.auth.login_timestamp - Date.now()) < 120_000);
  assert.equal(s.config.server.metrics.length, 7);
  assert.equal(s.config.server.upload.batch_size, 10);
  assert.equal(s.config.server.login_expiry_days, 30);
  assert.ok(s.config.shops.some((x) => x.id === SHOP), JSON.stringify(s.config.shops));
  // The shop values are attributed to, chosen in the popup.
  await popup.selectOption('select[data-platform="taobao"]', SHOP);
  await until("the shop choice stored", async () => (await storage()).config.shop_by_platform.taobao === SHOP);
  const alarms = await popup.evaluate(() => chrome.alarms.getAll());
  assert.deepEqual(alarms.map((a) => a.name).sort(), ["collect", "config", "upload", "version"]);
});

test("the version check shows the update and its download is the platform's zip", async () => {
  await popup.waitForSelector("#update", { state: "visible" });
  assert.match(await popup.textContent("#update"), /1\.1\.0/);
  const href = await popup.getAttribute("#update a", "href");
  assert.ok(href.startsWith(proxy.base + "/api/v1/data/crx/download/"), href);
  const res = await fetch(href);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "application/zip");
  const b = Buffer.from(await res.arrayBuffer());
  assert.equal(b.subarray(0, 2).toString(), "PK");
});

test("a DOM metric and an API metric are collected, uploaded and previewed", async () => {
  for (const path of ["/backoffice/dom", "/backoffice/api"]) {
    const page = await browser.context.newPage();
    await page.goto(office.base + path);
    await until(`the value of ${path} queued`, async () => (await storage()).config.pages[path.endsWith("dom") ? "gmv" : "visitors"]);
    await page.close();
  }
  assert.equal(await queued(), 2);
  await popup.screenshot({ path: join(OUT, "popup-queued.png") });
  await popup.click("#sync");
  await until("the queue uploaded", async () => (await queued()) === 0);
  const st = await stored();
  assert.equal(st.gmv?.ext_sum, 1234.5, JSON.stringify({ st, batches: proxy.state.batches }));
  assert.equal(st.visitors?.ext_sum, 321, JSON.stringify(st));
  // The values the extension uploaded, in a chat answer: the offline analyst reads the derived
  // metric over diy_crx_metrics by its name for this month, where these two are all there is.
  const total = Object.values(st).reduce((n, x) => n + x.ext_sum, 0);
  assert.equal(total, 1555.5, JSON.stringify(st));
  const answer = await chat("ext_sum this month");
  assert.ok(answer.includes(money(total)), `the chat answer lacks the preview's ${money(total)}:\n${answer}`);
  await popup.waitForFunction(() => /2/.test(document.getElementById("last-upload").textContent));
  await popup.screenshot({ path: join(OUT, "popup-signed-in.png") });
  await popup.click("#lang");
  assert.equal(await popup.textContent("#sync"), "立即同步");
  await popup.screenshot({ path: join(OUT, "popup-signed-in-zh.png") });
  await popup.click("#lang");
  assert.equal(await popup.textContent("#sync"), "Sync now");
});

test("background collection opens at most max_concurrent_tabs tabs at once", async () => {
  for (const n of [1, 2, 3, 4]) {
    const page = await browser.context.newPage();
    await page.goto(`${office.base}/backoffice/slow?n=${n}`);
    await until(`slow_${n} read`, async () => (await storage()).config.pages[`slow_${n}`]);
    await page.close();
  }
  await popup.click("#sync");
  await until("the queue uploaded", async () => (await queued()) === 0);
  const before = office.stats.api_calls;
  office.stats.max_inflight = 0;
  let maxTabs = 0;
  const baseTabs = browser.context.pages().length;
  const watch = setInterval(() => { maxTabs = Math.max(maxTabs, browser.context.pages().length - baseTabs); }, 20);
  const r = await popup.evaluate(() => chrome.runtime.sendMessage({ action: "collect_now" }));
  clearInterval(watch);
  assert.ok(r.ok);
  // Six pages (dom, api, slow 1-4): five with an API call, at most two tabs at a time.
  assert.equal(office.stats.api_calls - before, 5);
  assert.ok(office.stats.max_inflight <= 2 && office.stats.max_inflight >= 1, `in flight at once: ${office.stats.max_inflight}`);
  assert.ok(maxTabs <= 2 && maxTabs >= 1, `tabs at once: ${maxTabs}`);
  assert.equal(browser.context.pages().length, baseTabs, "every collection tab closed");
  assert.equal(await queued(), 6);
  await popup.click("#sync");
  await until("the queue uploaded", async () => (await queued()) === 0);
});

test("ad-hoc capture is uploaded and found by search", async () => {
  const page = await browser.context.newPage();
  await page.goto(office.base + "/backoffice/report");
  const tabId = await popup.evaluate(async (url) => (await chrome.tabs.query({})).find((t) => t.url === url)?.id, office.base + "/backoffice/report");
  const r = await popup.evaluate((id) => chrome.runtime.sendMessage({ action: "collect_adhoc_data", tab_id: id }), tabId);
  assert.ok(r.ok, JSON.stringify(r));
  await page.close();
  const found = await api("GET", "/api/v1/data/crx/adhoc?keyword=zebrafinch");
  assert.equal(Number(found.total), 1, JSON.stringify(found));
  assert.match(JSON.stringify(found.items[0]), /Blue kettle/);
  await popup.waitForFunction(() => /zebrafinch/.test(document.getElementById("adhoc").textContent));
});

test("25 values with batch size 10 upload as 10, 10 and 5", async () => {
  const start = proxy.state.batches.length;
  const before = await count();
  await enqueue(values(25));
  assert.equal(await queued(), 25);
  await popup.click("#sync");
  await until("the queue uploaded", async () => (await queued()) === 0);
  const b = proxy.state.batches.slice(start);
  assert.deepEqual(b.map((x) => x.size), [10, 10, 5]);
  assert.ok(b.every((x) => x.status === 200));
  assert.equal(new Set(b.map((x) => x.id)).size, 3);
  assert.equal(await count(), before + 25);
});

test("a server error is retried with the same batch id", async () => {
  const start = proxy.state.batches.length;
  const before = await count();
  proxy.state.fail500 = 1;
  await enqueue(values(3));
  await popup.click("#sync");
  await until("the retry", async () => proxy.state.batches.slice(start).some((x) => x.status === 200), 60_000);
  const b = proxy.state.batches.slice(start);
  assert.deepEqual(b.map((x) => x.status), [500, 200]);
  assert.equal(b[0].id, b[1].id);
  await until("the queue empty", async () => (await queued()) === 0);
  assert.equal(await count(), before + 3);
  const s = await storage();
  assert.ok(s.sync_status.errors.some((e) => /500/.test(e.message)));
});

test("the worker killed with values queued loses nothing", async () => {
  const before = await count();
  await enqueue(values(5));
  assert.ok((await killWorker(browser.context, browser.id)) >= 1, "a worker to kill");
  await openPopup(); // wakes the worker
  assert.equal(await queued(), 5);
  await popup.click("#sync");
  await until("the queue uploaded", async () => (await queued()) === 0);
  assert.equal(await count(), before + 5);
});

test("the worker killed during an upload: the batch is sent again with its id and stored once", async () => {
  const start = proxy.state.batches.length;
  const before = await count();
  await enqueue(values(4));
  proxy.state.hold = true;
  await popup.click("#sync");
  await until("the upload in flight", async () => proxy.state.held.length === 1);
  await killWorker(browser.context, browser.id);
  proxy.state.hold = false;
  proxy.state.held.splice(0).forEach((h) => h.drop());
  await openPopup();
  assert.equal(await queued(), 4, "the batch is still queued");
  await popup.click("#sync");
  await until("the queue uploaded", async () => (await queued()) === 0);
  const b = proxy.state.batches.slice(start);
  assert.equal(b.length, 2);
  assert.equal(b[0].id, b[1].id, "the same batch id");
  assert.equal(b[1].answer.accepted, 4, "the server's first answer, replayed");
  assert.equal(await count(), before + 4, "stored once");
});

test("a 401 stops uploads, asks to sign in and keeps the queue", async () => {
  const start = proxy.state.batches.length;
  proxy.state.fail401 = 1;
  await enqueue(values(2));
  await popup.click("#sync");
  await popup.waitForSelector("#signin-again", { state: "visible" });
  await sleep(3000);
  assert.equal(proxy.state.batches.length - start, 1, "no upload after the 401");
  assert.equal(await queued(), 2);
  assert.equal((await storage()).sync_status.state, "needs_login");
  // Signing in again (the form is shown again, filled but for the password) uploads the queue.
  assert.ok(await popup.isVisible("#login"));
  assert.equal(await popup.inputValue("#username"), env("SHOPMIND_USER"));
  await popup.fill("#password", env("SHOPMIND_PASSWORD"));
  await popup.click("#signin");
  await until("the queue uploaded", async () => (await queued()) === 0);
  await popup.waitForSelector("#login", { state: "hidden" });
  assert.equal(proxy.state.batches.at(-1).status, 200);
});

test("values the server rejects one by one are listed in the popup", async () => {
  await enqueue([{ metric_key: "synthetic", platform: "taobao", value: 1, page_url: office.base + "/backoffice/dom",
    collected_at: new Date(Date.now() - 31 * 86_400_000).toISOString() }]);
  await popup.click("#sync");
  await until("the queue uploaded", async () => (await queued()) === 0);
  await popup.waitForSelector("#rejections-box", { state: "visible" });
  assert.match(await popup.textContent("#rejections"), /synthetic: stale_timestamp/);
});

test("10,000 queued values upload without loss or duplicates", async () => {
  const cfg = await api("GET", "/api/v1/crx/config-m");
  await api("PUT", "/api/v1/crx/config-m", { metrics: cfg.config.metrics, upload: { ...cfg.config.upload, batch_size: 500 } });
  const start = proxy.state.batches.length;
  const before = await count();
  await enqueue(values(10_000));
  assert.equal(await queued(), 10_000);
  const t0 = Date.now();
  await popup.click("#sync"); // reloads the configuration (new config_version): batches of 500
  // Polled through sync_status's counts: reading the whole queue (about 1.5 MB) every 150 ms
  // took the CPU the worker needs on this 2-core machine.
  await until("10,000 values uploaded", async () => (await statusQueued()) === 0, 300_000);
  const secs = (Date.now() - t0) / 1000;
  // The counts reach 0 as the last answer arrives; the worker removes the answered batches
  // from the queue with its next write.
  await until("the queue itself empty", async () => (await queued()) === 0, 10_000);
  const b = proxy.state.batches.slice(start);
  const server = b.reduce((n, x) => n + x.ms, 0) / 1000;
  const load = (await import("node:os")).loadavg()[0].toFixed(1);
  console.log(`10,000 values uploaded in ${secs.toFixed(1)} s, ${server.toFixed(1)} s of server time summed over the batches (${b.length} batches, up to 2 at once), load average ${load}`);
  // Background collection may add a value of its own to a batch; the suite's are 10,000.
  // A loaded server's edge may refuse a batch with 413 (its WAF inspection over the time
  // budget): the extension sends it again as two halves with new ids (nothing of it stored).
  assert.ok(b.every((x) => x.size <= 500 && (x.status === 200 || x.status === 413)), JSON.stringify(b.map((x) => [x.size, x.status])));
  const refused = b.filter((x) => x.status === 413).length;
  if (refused) console.log(`${refused} batches refused with 413 and sent again as halves`);
  assert.equal(b.filter((x) => x.status === 200).reduce((n, x) => n + x.synthetic, 0), 10_000);
  const accepted = b.filter((x) => x.status === 200);
  assert.equal(new Set(accepted.map((x) => x.id)).size, accepted.length, "each accepted batch sent once");
  assert.equal(await count(), before + 10_000);
});

test("the queue survives a browser restart", async () => {
  proxy.state.fail500 = 1_000;
  await enqueue(values(7));
  await browser.context.close();
  browser = await launch(ext.dir, profile);
  await openPopup();
  assert.ok(await popup.isVisible("#main"), "still signed in");
  assert.equal(await queued(), 7);
  proxy.state.fail500 = 0;
  await popup.click("#sync");
  await until("the queue uploaded", async () => (await queued()) === 0, 60_000);
});

test("a login older than login_expiry_days clears storage at start", async () => {
  await popup.evaluate(async () => {
    const { auth } = await chrome.storage.local.get("auth");
    auth.login_timestamp = Date.now() - 31 * 86_400_000;
    await chrome.storage.local.set({ auth });
  });
  await killWorker(browser.context, browser.id);
  await openPopup();
  assert.ok(await popup.isVisible("#login"), "signed out");
  assert.deepEqual(await storage(), {});
  assert.deepEqual(await popup.evaluate(() => chrome.alarms.getAll()), []);
});

test("sign-out clears storage and alarms", async () => {
  await popup.fill("#server", proxy.base);
  await popup.fill("#tenant", env("SHOPMIND_TENANT"));
  await popup.fill("#username", env("SHOPMIND_USER"));
  await popup.fill("#password", env("SHOPMIND_PASSWORD"));
  await popup.click("#signin");
  await popup.waitForSelector("#main", { state: "visible" });
  assert.ok(Object.keys(await storage()).length >= 3);
  await popup.click("#logout");
  await popup.waitForSelector("#login", { state: "visible" });
  assert.deepEqual(await storage(), {});
  assert.deepEqual(await popup.evaluate(() => chrome.alarms.getAll()), []);
});
