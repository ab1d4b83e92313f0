// Fakes of the chrome.* APIs the service worker uses (storage, alarms, runtime, action, tabs),
// of Web Locks and of the server, so the worker's module runs in Node as it does in Chrome:
// importing it again with the same storage is a restart of the worker.
import { vi } from "vitest";

export interface Sent { path: string; body: any }

type Answer = { status: number; data?: unknown; headers?: Record<string, string> };

export function installFakes(answer: (path: string, body: any) => Answer | Promise<Answer>) {
  const store = new Map<string, unknown>();
  const alarms = new Map<string, { name: string; scheduledTime: number; periodInMinutes?: number }>();
  const listeners: Record<string, ((...a: any[]) => any)[]> = {};
  const on = (name: string) => ({ addListener: (f: (...a: any[]) => any) => { (listeners[name] ??= []).push(f); } });
  const sent: Sent[] = [];
  const clone = <T>(v: T): T => structuredClone(v);
  const chrome = {
    storage: {
      local: {
        get: async (keys: string[] | string | null) => {
          const ks = keys === null ? [...store.keys()] : Array.isArray(keys) ? keys : [keys];
          const out: Record<string, unknown> = {};
          for (const k of ks) if (store.has(k)) out[k] = clone(store.get(k));
          return out;
        },
        set: async (v: Record<string, unknown>) => { for (const [k, x] of Object.entries(v)) store.set(k, clone(x)); },
        clear: async () => { store.clear(); },
      },
    },
    alarms: {
      create: async (name: string, info: { when?: number; delayInMinutes?: number; periodInMinutes?: number }) => {
        alarms.set(name, { name, scheduledTime: info.when ?? Date.now() + (info.delayInMinutes ?? info.periodInMinutes ?? 0) * 60_000, periodInMinutes: info.periodInMinutes });
      },
      get: async (name: string) => alarms.get(name),
      getAll: async () => [...alarms.values()],
      clearAll: async () => { alarms.clear(); return true; },
      onAlarm: on("alarm"),
    },
    runtime: {
      getManifest: () => ({ version: "1.0.0" }),
      onInstalled: on("installed"), onStartup: on("startup"), onMessage: on("message"),
      sendMessage: async () => undefined,
    },
    action: { setBadgeText: async () => {} },
    tabs: { create: async () => ({}), remove: async () => {}, query: async () => [], sendMessage: async () => undefined },
  };
  const held = new Map<string, Promise<unknown>>();
  const locks = {
    request: (name: string, a: any, b?: any) => {
      const opts = b ? a : {};
      const fn = b ?? a;
      if (opts.ifAvailable && held.has(name)) return Promise.resolve(fn(null));
      const prev = held.get(name) ?? Promise.resolve();
      const run = prev.then(() => fn({ name }));
      const tail = run.catch(() => {}).finally(() => { if (held.get(name) === tail) held.delete(name); });
      held.set(name, tail);
      return run;
    },
  };
  vi.stubGlobal("chrome", chrome);
  vi.stubGlobal("navigator", { locks, userAgent: "vitest" });
  vi.stubGlobal("fetch", async (url: URL, init: RequestInit) => {
    const path = new URL(url).pathname;
    const body = init.body ? JSON.parse(String(init.body)) : undefined;
    sent.push({ path, body });
    const a = await answer(path, body);
    return new Response(JSON.stringify(a.status === 200 ? { code: 0, message: "success", data: a.data ?? {} } : { code: a.status, message: "failed", data: null }),
      { status: a.status, headers: { "Content-Type": "application/json", ...(a.headers ?? {}) } });
  });
  /** Starts (or restarts) the worker: a fresh module on the same storage and alarms. */
  const startWorker = async () => {
    for (const k of Object.keys(listeners)) delete listeners[k];
    vi.resetModules();
    await import("../src/background");
  };
  const message = (msg: unknown): Promise<any> =>
    new Promise((resolve) => listeners.message[0](msg, {}, resolve));
  const fireAlarm = async (name: string) => {
    for (const f of listeners.alarm ?? []) f({ name });
    await new Promise((r) => setTimeout(r, 50));
  };
  return { store, alarms, sent, startWorker, message, fireAlarm };
}
