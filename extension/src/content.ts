// The content script: on a page a metric of the tenant's configuration names (url_pattern),
// reads `dom` metrics by selector and `api` metrics from the page's own JSON answers (via
// page-hook.js), and sends them to the service worker (collect_metric_data). It also
// captures the page on demand (collect_adhoc_data -> adhoc_data_collected). It only reads
// storage; the service worker writes it.
import { jsonPath, parseNumber } from "./queue";
import type { CollectedValue, ConfigRecord, Message, MetricDefinition } from "./types";

const WAIT_MS = 15_000;

function matches(pattern: string | undefined, s: string): boolean {
  if (!pattern) return false;
  try {
    return new RegExp(pattern).test(s);
  } catch {
    return false;
  }
}

function readDom(m: MetricDefinition): Promise<number | null> {
  return new Promise((resolve) => {
    const deadline = Date.now() + WAIT_MS;
    const tick = () => {
      const el = m.selector ? document.querySelector(m.selector) : null;
      const v = el ? parseNumber(el.textContent ?? "") : null;
      if (v !== null) return resolve(v);
      if (Date.now() > deadline) return resolve(null);
      setTimeout(tick, 250);
    };
    tick();
  });
}

function readApi(m: MetricDefinition): Promise<number | null> {
  return new Promise((resolve) => {
    const done = (v: number | null) => {
      window.removeEventListener("message", onMsg);
      clearTimeout(timer);
      resolve(v);
    };
    const onMsg = (e: MessageEvent) => {
      if (e.source !== window || e.data?.source !== "shopmind-page-hook") return;
      if (!matches(m.api_url_pattern, String(e.data.url))) return;
      try {
        const raw = jsonPath(JSON.parse(String(e.data.body)), m.json_path ?? "$");
        const v = typeof raw === "number" ? raw : typeof raw === "string" ? parseNumber(raw) : null;
        if (v !== null) done(v);
      } catch { /* not JSON */ }
    };
    const timer = setTimeout(() => done(null), WAIT_MS);
    window.addEventListener("message", onMsg);
    window.postMessage({ source: "shopmind-content", type: "replay" }, location.origin);
  });
}

async function collect(): Promise<void> {
  const { config, auth } = (await chrome.storage.local.get(["config", "auth"])) as { config?: ConfigRecord; auth?: unknown };
  if (!auth || !config) return;
  const url = location.href;
  const metrics = (config.server.metrics ?? []).filter((m) => matches(m.url_pattern, url));
  if (!metrics.length) return;
  const values: CollectedValue[] = [];
  await Promise.all(metrics.map(async (m) => {
    const v = m.source === "api" ? await readApi(m) : await readDom(m);
    if (v !== null) values.push({ metric_key: m.key ?? "", platform: m.platform ?? "", value: v, page_url: url, collected_at: new Date().toISOString() });
  }));
  const msg: Message = { action: "collect_metric_data", values };
  await chrome.runtime.sendMessage(msg);
}

/** What "collect this page" captures: title, URL, headings, tables, key-value pairs, text. */
function capture(): Record<string, unknown> {
  const text = (el: Element | null) => (el?.textContent ?? "").replace(/\s+/g, " ").trim();
  const tables = [...document.querySelectorAll("table")].slice(0, 10).map((t) =>
    [...t.querySelectorAll("tr")].slice(0, 50).map((tr) => [...tr.querySelectorAll("th,td")].slice(0, 20).map((c) => text(c).slice(0, 200))));
  const headings = [...document.querySelectorAll("h1,h2,h3")].slice(0, 30).map((h) => text(h).slice(0, 200));
  const fields: Record<string, string> = {};
  for (const dl of document.querySelectorAll("dl")) {
    const dts = dl.querySelectorAll("dt");
    dts.forEach((dt) => { if (Object.keys(fields).length < 100) fields[text(dt).slice(0, 100)] = text(dt.nextElementSibling).slice(0, 500); });
  }
  return {
    headings, tables, fields,
    description: document.querySelector('meta[name="description"]')?.getAttribute("content") ?? "",
    selection: String(window.getSelection() ?? "").slice(0, 5000),
    text: text(document.body).slice(0, 5000),
  };
}

chrome.runtime.onMessage.addListener((msg: Message, _sender, sendResponse) => {
  if (msg.action !== "collect_adhoc_data") return false;
  const out: Message = { action: "adhoc_data_collected", capture: { page_url: location.href, page_title: document.title, data: capture() } };
  chrome.runtime.sendMessage(out).then(sendResponse, (e) => sendResponse({ ok: false, error: String(e) }));
  return true;
});

void collect().catch((e) => console.warn("ShopMind collect", e));
