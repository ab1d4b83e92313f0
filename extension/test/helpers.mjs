// Helpers of the browser suite: a back office imitation, a fault-injecting proxy in front of
// the platform, the browser with the extension loaded, storage reads and worker kills.
import http from "node:http";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

export const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set: the suite runs from tests/platform/extension (make test)`);
  return v;
};

/** The back office's host name, mapped to 127.0.0.1 by the browser (--host-resolver-rules). */
export const BACK_OFFICE_HOST = "backoffice.shop.test";

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls fn until it returns a truthy value; fails with what it last saw. */
export async function until(what, fn, timeoutMs = 30_000) {
  const end = Date.now() + timeoutMs;
  let last;
  for (;;) {
    last = await fn();
    if (last) return last;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)}`);
    await sleep(150);
  }
}

function listen(server) {
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${server.address().port}`)));
}

/**
 * The back office: /dom shows GMV in the page, /api renders visitors from its own JSON API,
 * /slow?n=N a page whose API answers after 700 ms (for the tab limit), /report a page to
 * capture. It counts the JSON requests in flight at once.
 */
export async function startBackOffice() {
  const stats = { inflight: 0, max_inflight: 0, api_calls: 0 };
  const page = (title, body) => `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body>${body}</body></html>`;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, "http://x");
    if (url.pathname === "/backoffice/dom") {
      res.setHeader("Content-Type", "text/html; charset=utf-8");
      return res.end(page("Sales overview", `<h1>Overview</h1><div class="card">GMV <span id="gmv">¥ 1,234.50</span></div>`));
    }
    if (url.pathname === "/backoffice/api" || url.pathname === "/backoffice/slow") {
      res.setHeader("Content-Type", "text/html; charset=utf-8");
      const n = url.searchParams.get("n") ?? "0";
      return res.end(page("Traffic", `<div id="out">loading</div><script>
        fetch("/backoffice/data.json?n=${n}&slow=${url.pathname.endsWith("slow") ? 1 : 0}").then(r => r.json())
          .then(j => { document.getElementById("out").textContent = "Visitors " + j.data.traffic.visitors; });
      </script>`));
    }
    if (url.pathname === "/backoffice/data.json") {
      stats.api_calls++;
      stats.inflight++;
      stats.max_inflight = Math.max(stats.max_inflight, stats.inflight);
      const n = Number(url.searchParams.get("n") ?? 0);
      setTimeout(() => {
        stats.inflight--;
        res.setHeader("Content-Type", "application/json");
        res.end(JSON.stringify({ code: 0, data: { traffic: { visitors: 321 + n } } }));
      }, url.searchParams.get("slow") === "1" ? 700 : 20);
      return;
    }
    if (url.pathname === "/backoffice/report") {
      res.setHeader("Content-Type", "text/html; charset=utf-8");
      return res.end(page("Competitor report zebrafinch", `<h1>Competitor prices zebrafinch</h1>
        <table><tr><th>Item</th><th>Price</th></tr><tr><td>Blue kettle</td><td>89</td></tr></table>`));
    }
    res.statusCode = 404;
    res.end("not found");
  });
  // Named by a host name, as back offices are (the edge's WAF refuses bodies holding URLs of
  // an IP address or localhost: CRS rules 931100, 934110); the browser maps it to 127.0.0.1.
  const base = (await listen(server)).replace("127.0.0.1", BACK_OFFICE_HOST);
  return { base, stats, close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }) };
}

/**
 * The proxy between the extension and the platform: records every sync batch (id, size,
 * status) and can answer the next sync requests with 500 or 401, or hold one (forwarded,
 * its answer kept back until released or dropped).
 */
export async function startProxy(target) {
  const state = { batches: [], fail500: 0, fail401: 0, hold: false, held: [], versionChecks: 0 };
  const server = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks);
    const isSync = req.method === "POST" && req.url.startsWith("/api/v1/data/crx/sync");
    if (req.url.startsWith("/api/v1/data/crx/ver")) state.versionChecks++;
    let rec;
    if (isSync) {
      const j = JSON.parse(body.toString());
      rec = { id: j.client_batch_id, size: j.items.length, synthetic: j.items.filter((i) => i.metric_key === "synthetic").length, status: 0, answer: null, at: Date.now(), ms: 0 };
      state.batches.push(rec);
      const fault = state.fail500 > 0 ? 500 : state.fail401 > 0 ? 401 : 0;
      if (fault) {
        if (fault === 500) state.fail500--; else state.fail401--;
        rec.status = fault;
        res.writeHead(fault, { "Content-Type": "application/json" });
        return res.end(JSON.stringify({ code: fault, message: fault === 500 ? "injected failure" : "token expired", data: null }));
      }
    }
    const headers = { ...req.headers };
    delete headers.host;
    delete headers.origin;
    const up = await fetch(target + req.url, { method: req.method, headers, body: ["GET", "HEAD"].includes(req.method) ? undefined : body });
    const text = Buffer.from(await up.arrayBuffer());
    const send = () => {
      res.writeHead(up.status, { "Content-Type": up.headers.get("content-type") ?? "application/json" });
      res.end(text);
    };
    if (rec) {
      rec.status = up.status;
      rec.ms = Date.now() - rec.at;
      try { rec.answer = JSON.parse(text.toString()).data; } catch { /* not JSON */ }
      if (state.hold) {
        state.held.push({ rec, send, drop: () => res.destroy() });
        return;
      }
    }
    send();
  });
  const base = await listen(server);
  return { base, state, close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }) };
}

/** Chromium with the extension loaded from a copy of dir, in profileDir. */
export async function launch(dir, profileDir) {
  const context = await chromium.launchPersistentContext(profileDir, {
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: [`--disable-extensions-except=${dir}`, `--load-extension=${dir}`, "--no-sandbox", "--disable-gpu", "--disable-quic",
      "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
      `--host-resolver-rules=MAP ${BACK_OFFICE_HOST} 127.0.0.1`],
    ignoreDefaultArgs: ["--disable-extensions"],
  });
  let [sw] = context.serviceWorkers();
  if (!sw) sw = await context.waitForEvent("serviceworker");
  const id = new URL(sw.url()).host;
  return { context, id };
}

export function copyExtension(src) {
  const dir = mkdtempSync(join(tmpdir(), "shopmind-ext-"));
  cpSync(src, dir, { recursive: true });
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Stops the extension's service worker as Chrome does when idle (CDP Target.closeTarget). */
export async function killWorker(context, id) {
  const page = context.pages()[0] ?? (await context.newPage());
  const cdp = await context.newCDPSession(page);
  const { targetInfos } = await cdp.send("Target.getTargets");
  const sw = targetInfos.filter((t) => t.type === "service_worker" && t.url.startsWith(`chrome-extension://${id}/`));
  for (const t of sw) await cdp.send("Target.closeTarget", { targetId: t.targetId });
  await cdp.detach();
  return sw.length;
}
