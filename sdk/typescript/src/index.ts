// ShopMind's REST client: the paths and types of the OpenAPI document (openapi-typescript,
// src/gen/openapi.ts), called with openapi-fetch; `unwrap` takes the envelope's data or
// throws ShopMindError with its code and message; `chat` streams the chat reply as typed
// events. The gRPC/Connect client is in ./grpc.js.
import createClient, { type Client, type Middleware } from "openapi-fetch";
import type { components, paths } from "./gen/openapi.js";

export type { components, paths };
/** Every schema of the document, by its full contract name (shopmind.tenant.v1.LoginResponse). */
export type Schemas = components["schemas"];
/** One event of a chat stream. */
export type ChatEvent = Schemas["shopmind.chat.v2.ChatEvent"];
/** The body of a chat message (POST /api/v2/chat/message). */
export type ChatRequest = NonNullable<paths["/api/v2/chat/message"]["post"]["requestBody"]>["content"]["application/json"];

/** A failure answered by the platform: the envelope's code (400, 401, 403, 404, ...) and message. */
export class ShopMindError extends Error {
  constructor(
    readonly code: number,
    message: string,
    /** The HTTP status (the code too, unless the deployment answers every request with 200). */
    readonly status: number,
    /** The X-Request-Id of the answer, for the platform's logs. */
    readonly requestId: string | null,
  ) {
    super(message);
    this.name = "ShopMindError";
  }
}

interface Envelope {
  code: number;
  message: string;
  data: unknown;
}

/**
 * unwrap returns the envelope's data of an openapi-fetch result, typed by the operation, or
 * throws ShopMindError for an error envelope (also one answered with HTTP 200).
 */
export function unwrap<E extends Envelope>(result: { data?: E; error?: unknown; response: Response }): E["data"] {
  const env = (result.data ?? result.error) as Partial<Envelope> | undefined;
  const { response } = result;
  if (!env || typeof env.code !== "number") {
    throw new ShopMindError(response.status, `not an envelope: HTTP ${response.status}`, response.status, response.headers.get("x-request-id"));
  }
  if (env.code !== 0) {
    throw new ShopMindError(env.code, env.message ?? "", response.status, response.headers.get("x-request-id"));
  }
  return (result.data as E).data;
}

export interface Options {
  /** The gateway, e.g. http://127.0.0.1:8080. */
  baseUrl: string;
  /** An access token; login sets it. */
  token?: string;
  /** A fetch implementation (default: the global fetch of Node 20 and browsers). */
  fetch?: typeof fetch;
}

/** ShopMind is a signed-in (or not yet) client of one gateway. */
export class ShopMind {
  /** The typed openapi-fetch client of every operation: unwrap(await sm.api.GET("/api/v1/tenant/auth/info")). */
  readonly api: Client<paths>;
  token: string | undefined;
  private readonly baseUrl: string;
  private readonly fetchImpl: typeof fetch;

  constructor(opts: Options) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, "");
    this.token = opts.token;
    this.fetchImpl = opts.fetch ?? globalThis.fetch;
    this.api = createClient<paths>({ baseUrl: this.baseUrl, fetch: (req: Request) => this.fetchImpl(req) });
    const auth: Middleware = {
      onRequest: ({ request }) => {
        if (this.token && !request.headers.has("Authorization")) {
          request.headers.set("Authorization", `Bearer ${this.token}`);
        }
        return request;
      },
    };
    this.api.use(auth);
  }

  /** Signs in (POST /api/v1/tenant/auth/login) and keeps the access token for later calls. */
  async login(tenantCode: string, username: string, password: string): Promise<Schemas["shopmind.tenant.v1.LoginResponse"]> {
    const data = unwrap(await this.api.POST("/api/v1/tenant/auth/login", { body: { tenant_code: tenantCode, username, password } }));
    this.token = data.access_token;
    return data;
  }

  /**
   * Sends a chat message and yields the reply's events as they arrive (server-sent events of
   * POST /api/v2/chat/message); the stream's end ([DONE]) ends the iteration. A refusal
   * before the stream starts (400, 401, 429...) throws ShopMindError; a failure during the
   * stream is an event of type "error". Breaking out of the loop cancels the request.
   */
  async *chat(body: ChatRequest, signal?: AbortSignal): AsyncGenerator<ChatEvent, void, undefined> {
    const controller = new AbortController();
    signal?.addEventListener("abort", () => controller.abort(signal.reason), { once: true });
    const headers: Record<string, string> = { "Content-Type": "application/json", Accept: "text/event-stream" };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    const res = await this.fetchImpl(`${this.baseUrl}/api/v2/chat/message`, {
      method: "POST", headers, body: JSON.stringify(body), signal: controller.signal,
    });
    try {
      if (!(res.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
        const env = (await res.json()) as Envelope;
        throw new ShopMindError(env.code, env.message, res.status, res.headers.get("x-request-id"));
      }
      if (!res.body) return;
      const decoder = new TextDecoder();
      let pending = "";
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        pending += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = pending.indexOf("\n\n")) >= 0) {
          const block = pending.slice(0, end);
          pending = pending.slice(end + 2);
          const data = block.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
          if (data === "") continue; // a keep-alive comment
          if (data === "[DONE]") return;
          yield JSON.parse(data) as ChatEvent;
        }
      }
    } finally {
      controller.abort();
    }
  }
}
