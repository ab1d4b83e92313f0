// Calls to the ShopMind API, typed by the OpenAPI document generated from the contract
// (openapi-typescript, the TypeScript SDK's REST types): a change of a path, a field or an
// answer's shape breaks this build.
import type { paths } from "./gen/openapi";

type Method = "get" | "post";
type Op<P extends keyof paths, M extends Method> = paths[P][M];
export type Body<P extends keyof paths, M extends Method> =
  Op<P, M> extends { requestBody: { content: { "application/json": infer B } } } ? B : never;
export type Query<P extends keyof paths, M extends Method> =
  Op<P, M> extends { parameters: { query?: infer Q } } ? Q : never;
export type Data<P extends keyof paths, M extends Method> =
  Op<P, M> extends { responses: { 200: { content: { "application/json": { data: infer D } } } } } ? D : never;

export interface Answer<D> {
  /** HTTP status; 0 when the server could not be reached. */
  status: number;
  data?: D;
  message: string;
  /** Retry-After in milliseconds, when the server sent one. */
  retry_after_ms?: number;
}

/** Parses Retry-After (seconds or an HTTP date) into milliseconds from now. */
export function parseRetryAfter(v: string | null, now = Date.now()): number | undefined {
  if (!v) return undefined;
  const s = Number(v);
  if (Number.isFinite(s) && s >= 0) return s * 1000;
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : Math.max(0, t - now);
}

export async function call<P extends keyof paths, M extends Method>(
  server: string,
  token: string | null,
  method: M,
  path: P,
  opts: { body?: Body<P, M>; query?: Query<P, M>; timeout_ms?: number } = {},
): Promise<Answer<Data<P, M>>> {
  const url = new URL(String(path), server.replace(/\/+$/, "") + "/");
  url.pathname = String(path);
  for (const [k, v] of Object.entries((opts.query ?? {}) as Record<string, unknown>)) {
    if (v !== undefined && v !== null && v !== "") url.searchParams.set(k, String(v));
  }
  const headers: Record<string, string> = { Accept: "application/json" };
  if (token) headers.Authorization = "Bearer " + token;
  if (opts.body !== undefined) headers["Content-Type"] = "application/json";
  let res: Response;
  try {
    res = await fetch(url, {
      method: method.toUpperCase(),
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      signal: AbortSignal.timeout(opts.timeout_ms ?? 30_000),
    });
  } catch (e) {
    return { status: 0, message: "server unreachable: " + (e instanceof Error ? e.message : String(e)) };
  }
  let env: { code?: number; message?: string; data?: unknown } = {};
  try {
    env = await res.json();
  } catch {
    env = { message: res.statusText };
  }
  const out: Answer<Data<P, M>> = { status: res.status, message: env.message ?? "" };
  if (res.ok && env.code === 0) out.data = env.data as Data<P, M>;
  else if (res.ok) out.status = 502; // not the envelope: a proxy or a wrong server address
  const ra = parseRetryAfter(res.headers.get("Retry-After"));
  if (ra !== undefined) out.retry_after_ms = ra;
  return out;
}
