// The API client: openapi-fetch typed by the TypeScript SDK's OpenAPI types (sdk/typescript,
// generated from the contract by `make web-types` or `make sdk`), so a contract change that
// breaks a call fails `tsc`. The session (tokens, environment) is kept per tab in
// sessionStorage; the access token is refreshed before it expires, one refresh at a time, and
// a refused refresh signs the tab out.
import createClient, { type Middleware } from 'openapi-fetch';
import type { paths, components } from '@sdk/gen/openapi';

export type Schemas = components['schemas'];
export type Env = 'dev' | 'local' | 'test';

export interface Session {
  access: string;
  refresh: string;
  expiresAt: number; // ms since epoch
  ttl: number; // seconds the access token lived when issued
  env: Env;
  tenant: string;
  username: string;
}

const KEY = 'shopmind.session';
type Listener = (s: Session | null) => void;
const listeners = new Set<Listener>();

export function getSession(): Session | null {
  try {
    const raw = sessionStorage.getItem(KEY);
    return raw ? (JSON.parse(raw) as Session) : null;
  } catch {
    return null;
  }
}

function setSession(s: Session | null) {
  if (s) sessionStorage.setItem(KEY, JSON.stringify(s));
  else sessionStorage.removeItem(KEY);
  scheduleRefresh();
  listeners.forEach((l) => l(s));
}

export function onSession(l: Listener): () => void {
  listeners.add(l);
  return () => listeners.delete(l);
}

/** The envelope error: its code, message and HTTP status. */
export class ApiError extends Error {
  constructor(
    public code: number,
    message: string,
    public status: number,
  ) {
    super(message);
  }
}

interface Envelope<T> {
  code: number;
  message: string;
  data?: T | null;
}

/** unwrap returns an answer's data or throws its envelope error. */
export function unwrap<T>(r: { data?: Envelope<T>; error?: unknown; response: Response }): T {
  if (r.data && r.data.code === 0) return r.data.data as T;
  const e = (r.error ?? r.data) as Partial<Envelope<unknown>> | undefined;
  throw new ApiError(e?.code ?? r.response.status, e?.message || r.response.statusText || 'request failed', r.response.status);
}

// Refresh margin: a third of the token's life, at most a minute.
function margin(s: Session) {
  return Math.min(60_000, (s.ttl * 1000) / 3);
}

let inFlight: Promise<Session | null> | null = null;
let timer: ReturnType<typeof setTimeout> | undefined;

function scheduleRefresh() {
  clearTimeout(timer);
  const s = getSession();
  if (!s) return;
  const wait = Math.max(0, s.expiresAt - margin(s) - Date.now());
  timer = setTimeout(() => void refreshNow(), wait);
}

/** refreshNow exchanges the refresh token (one exchange at a time); a refusal signs out. */
export function refreshNow(): Promise<Session | null> {
  if (inFlight) return inFlight;
  const s = getSession();
  if (!s) return Promise.resolve(null);
  inFlight = (async () => {
    try {
      const r = await raw.POST('/api/v1/tenant/auth/refresh', {
        body: { refresh_token: s.refresh },
        headers: { 'X-Env': s.env },
      });
      const d = unwrap(r);
      const next: Session = {
        ...s,
        access: d.access_token ?? '',
        refresh: d.refresh_token ?? '',
        ttl: d.expires_in ?? s.ttl,
        expiresAt: Date.now() + (d.expires_in ?? s.ttl) * 1000,
      };
      setSession(next);
      return next;
    } catch (e) {
      if (e instanceof ApiError && e.status >= 400 && e.status < 500) setSession(null);
      else scheduleRefresh();
      return null;
    } finally {
      inFlight = null;
    }
  })();
  return inFlight;
}

/** freshToken returns an access token that is not about to expire. */
export async function freshToken(): Promise<Session | null> {
  let s = getSession();
  if (s && s.expiresAt - margin(s) <= Date.now()) s = await refreshNow();
  return s;
}

// raw: no session handling (sign in, refresh, captcha).
const raw = createClient<paths>({ baseUrl: '' });

const auth: Middleware = {
  async onRequest({ request, schemaPath }) {
    if (schemaPath.endsWith('/auth/refresh') || schemaPath.endsWith('/auth/login')) return request;
    const s = await freshToken();
    if (s) {
      request.headers.set('Authorization', `Bearer ${s.access}`);
      request.headers.set('X-Env', s.env);
    }
    return request;
  },
  async onResponse({ response }) {
    if (response.status === 401 && getSession()) setSession(null); // refused: sign out
    return response;
  },
};

/** api is the typed client every page uses. */
export const api = createClient<paths>({ baseUrl: '' });
api.use(auth);

export interface LoginInput {
  tenant: string;
  username: string;
  password: string;
  env: Env;
  captchaId?: string;
  captchaCode?: string;
}

export async function login(i: LoginInput): Promise<Session> {
  const r = await raw.POST('/api/v1/tenant/auth/login', {
    body: {
      tenant_code: i.tenant,
      username: i.username,
      password: i.password,
      captcha_id: i.captchaId || undefined,
      captcha_code: i.captchaCode || undefined,
    },
    headers: { 'X-Env': i.env },
  });
  const d = unwrap(r);
  const s: Session = {
    access: d.access_token ?? '',
    refresh: d.refresh_token ?? '',
    ttl: d.expires_in ?? 7200,
    expiresAt: Date.now() + (d.expires_in ?? 7200) * 1000,
    env: i.env,
    tenant: i.tenant,
    username: i.username,
  };
  setSession(s);
  return s;
}

export async function captcha(env: Env) {
  return unwrap(await raw.GET('/api/v1/tenant/auth/captcha', { headers: { 'X-Env': env } }));
}

export async function logout() {
  const s = getSession();
  if (s) {
    try {
      await api.POST("/api/v1/tenant/auth/logout", { body: {} });
    } catch {
      /* signed out locally either way */
    }
  }
  setSession(null);
}

/** authHeaders are the headers of a call made with fetch itself (streams). */
export async function authHeaders(): Promise<Record<string, string>> {
  const s = await freshToken();
  if (!s) throw new ApiError(401, 'signed out', 401);
  return { Authorization: `Bearer ${s.access}`, 'X-Env': s.env };
}

scheduleRefresh();
