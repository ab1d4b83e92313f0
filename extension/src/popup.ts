// The popup: sign-in, the signed-in user and tenant, sync status, sync now, collect this
// page, the upload interval, the shop per platform, sign-out. It writes nothing itself: every
// change is a message to the service worker.
import { TEXTS, type Lang } from "./i18n";
import type { Message, PopupState, Reply } from "./types";

declare const __DEFAULT_SERVER__: string;
const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
let lang: Lang = /^zh/i.test(navigator.language) ? "zh" : "en";
let T = TEXTS[lang];
let captchaId = "";
let last: PopupState | null = null;

function send(msg: Message): Promise<Reply> {
  return chrome.runtime.sendMessage(msg) as Promise<Reply>;
}

const fmt = (ms: number) => (ms ? new Date(ms).toLocaleString(lang === "zh" ? "zh-CN" : "en-GB") : T.never);

function applyTexts(): void {
  document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
  for (const el of document.querySelectorAll<HTMLElement>("[data-t]")) {
    const v = T[el.dataset.t as keyof typeof T];
    if (typeof v === "string") el.textContent = v;
  }
  $("lang").textContent = T.lang;
}

function render(s: PopupState): void {
  last = s;
  $("version").textContent = "v" + s.version;
  // A server that signed the user out (401) asks for a new sign-in; the queue is kept.
  const again = s.signed_in && s.status.state === "needs_login";
  $("login").hidden = s.signed_in && !again;
  $("main").hidden = !s.signed_in;
  if (again && s.auth && !$<HTMLInputElement>("username").value) {
    $<HTMLInputElement>("server").value = s.auth.server;
    $<HTMLInputElement>("tenant").value = s.auth.tenant_code;
    $<HTMLInputElement>("username").value = s.auth.username;
  }
  const up = s.status.update;
  const notice = $("update");
  notice.hidden = !(up && (up.required || up.available));
  if (up && !notice.hidden) {
    notice.textContent = (up.required ? T.update_required : T.update_available)(up.latest) + " ";
    if (up.download_url) {
      const a = document.createElement("a");
      a.href = up.download_url;
      a.target = "_blank";
      a.textContent = T.download;
      notice.append(a);
    }
  }
  if (!s.signed_in || !s.auth) return;
  $("who").textContent = s.auth.username;
  $("tenant-name").textContent = s.auth.tenant_code || s.auth.server;
  $("signin-again").hidden = s.status.state !== "needs_login";
  const st = T[("st_" + s.status.state) as keyof typeof T];
  $("state").textContent = typeof st === "string" ? st : s.status.state;
  $("queued").textContent = String(s.queued + s.pending) + (s.pending ? T.pending(s.pending) : "");
  const r = s.status.last_result;
  $("last-upload").textContent = fmt(s.status.last_upload_at) + (r ? " · " + T.result(r.accepted, r.duplicates, r.rejected) : "");
  $("next-upload").textContent = fmt(s.status.next_upload_at);
  const la = s.status.last_adhoc;
  $("adhoc").textContent = la ? (la.error ? T.adhoc_err(la.error) : T.adhoc_ok(la.title)) : "";
  const sel = $<HTMLSelectElement>("interval");
  const cur = String(s.config?.upload_interval_seconds ?? 0);
  sel.replaceChildren(...[0, 60, 300, 900, 1800, 3600].map((v) => {
    const o = document.createElement("option");
    o.value = String(v);
    o.textContent = v === 0 ? `${Math.round((s.config?.server.upload?.interval_seconds ?? 300) / 60)} ${T.minutes} ${T.server_default}` : `${v / 60} ${T.minutes}`;
    return o;
  }));
  sel.value = cur;
  const platforms = [...new Set((s.config?.server.metrics ?? []).map((m) => m.platform ?? ""))].filter(Boolean);
  $("shops").replaceChildren(...platforms.map((p) => {
    const label = document.createElement("label");
    label.className = "inline";
    const span = document.createElement("span");
    span.textContent = `${T.shop_for} ${p}`;
    const select = document.createElement("select");
    select.dataset.platform = p;
    for (const shop of (s.config?.shops ?? []).filter((x) => x.platform === p)) {
      const o = document.createElement("option");
      o.value = shop.id;
      o.textContent = shop.name;
      select.append(o);
    }
    select.value = s.config?.shop_by_platform[p] ?? "";
    select.onchange = () => void send({ action: "save_settings", shop_by_platform: { [p]: select.value } });
    label.append(span, select);
    return label;
  }));
  const li = (text: string) => { const el = document.createElement("li"); el.textContent = text; return el; };
  $("errors").replaceChildren(...s.status.errors.slice().reverse().map((e) => li(`${fmt(e.at)} ${e.message}`)));
  $("errors-box").hidden = s.status.errors.length === 0;
  $("rejections").replaceChildren(...s.status.rejections.slice().reverse().map((e) => li(`${e.metric_key}: ${e.code} ${e.message}`)));
  $("rejections-box").hidden = s.status.rejections.length === 0;
}

async function refresh(): Promise<void> {
  const r = await send({ action: "get_status" });
  if (r.ok && r.state) render(r.state);
}

async function showCaptcha(): Promise<void> {
  const r = await send({ action: "get_captcha", server: $<HTMLInputElement>("server").value });
  if (r.ok && r.captcha) {
    captchaId = r.captcha.captcha_id;
    $<HTMLImageElement>("captcha-img").src = r.captcha.image;
    $("captcha-row").hidden = false;
  }
}

$("login").addEventListener("submit", async (e) => {
  e.preventDefault();
  const btn = $<HTMLButtonElement>("signin");
  btn.disabled = true;
  $("login-error").textContent = "";
  const code = $<HTMLInputElement>("captcha").value.trim();
  const r = await send({
    action: "login", server: $<HTMLInputElement>("server").value, tenant_code: $<HTMLInputElement>("tenant").value,
    username: $<HTMLInputElement>("username").value, password: $<HTMLInputElement>("password").value,
    ...(captchaId && code ? { captcha_id: captchaId, captcha_code: code } : {}),
  });
  btn.disabled = false;
  if (r.ok) { $<HTMLInputElement>("password").value = ""; if (r.state) render(r.state); return; }
  $("login-error").textContent = r.captcha_problem === "required" ? T.captcha_required : r.captcha_problem === "wrong" ? T.captcha_wrong : r.error;
  $("login-error").title = r.error; // the server's own words
  if (r.captcha_required || captchaId) { $<HTMLInputElement>("captcha").value = ""; await showCaptcha(); }
});
$("logout").onclick = async () => { const r = await send({ action: "logout" }); if (r.ok && r.state) render(r.state); };
$("sync").onclick = async () => { const r = await send({ action: "force_sync" }); if (r.ok && r.state) render(r.state); };
$("collect").onclick = async () => {
  const r = await send({ action: "collect_adhoc_data" });
  if (!r.ok) $("adhoc").textContent = T.adhoc_err(r.error);
  else await refresh();
};
$<HTMLSelectElement>("interval").onchange = async (e) => {
  const r = await send({ action: "save_settings", upload_interval_seconds: Number((e.target as HTMLSelectElement).value) });
  if (r.ok && r.state) render(r.state);
};
$("lang").onclick = () => { lang = lang === "en" ? "zh" : "en"; T = TEXTS[lang]; applyTexts(); if (last) render(last); };

chrome.runtime.onMessage.addListener((msg: Message) => {
  if (msg.action === "status_update") render(msg.status);
});

$<HTMLInputElement>("server").value = __DEFAULT_SERVER__;
applyTexts();
void refresh();
