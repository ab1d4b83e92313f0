// Runs in the page's own world at document_start: keeps the last JSON answers the page's
// own fetch and XMLHttpRequest calls received, and hands them to the content script
// (window messages), which reads `api` metrics from them. It sends nothing anywhere.
(() => {
  const SRC = "shopmind-page-hook";
  const MAX_KEEP = 30, MAX_BODY = 512 * 1024;
  const kept: { url: string; body: string }[] = [];
  const post = (url: string, body: string) => {
    if (body.length > MAX_BODY) return;
    kept.push({ url, body });
    if (kept.length > MAX_KEEP) kept.shift();
    window.postMessage({ source: SRC, url, body }, location.origin);
  };
  const isJson = (ct: string | null) => !!ct && /json/i.test(ct);
  const origFetch = window.fetch;
  window.fetch = async function (this: unknown, ...args: Parameters<typeof fetch>) {
    const res = await origFetch.apply(this, args);
    try {
      if (isJson(res.headers.get("content-type"))) res.clone().text().then((b) => post(res.url, b), () => {});
    } catch { /* never break the page */ }
    return res;
  } as typeof fetch;
  const origOpen = XMLHttpRequest.prototype.open;
  XMLHttpRequest.prototype.open = function (this: XMLHttpRequest, ...args: unknown[]) {
    this.addEventListener("load", () => {
      try {
        if (isJson(this.getResponseHeader("content-type")) && (this.responseType === "" || this.responseType === "text")) post(this.responseURL, this.responseText);
      } catch { /* never break the page */ }
    });
    return (origOpen as (...a: unknown[]) => void).apply(this, args);
  } as typeof XMLHttpRequest.prototype.open;
  window.addEventListener("message", (e) => {
    if (e.source === window && e.data?.source === "shopmind-content" && e.data.type === "replay") {
      for (const k of kept) window.postMessage({ source: SRC, url: k.url, body: k.body }, location.origin);
    }
  });
})();
