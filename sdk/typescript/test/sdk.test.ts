// The SDK against a running platform: SHOPMIND_URL (the gateway), SHOPMIND_GRPC_URL (the gRPC
// listener, http://host:port) and SHOPMIND_PASSWORD (the demo administrator's), as
// tests/sdk starts it. The declared types are checked by tsc (each field is read into a
// variable of its declared type); the values at run time by the assertions.
import assert from "node:assert/strict";
import { test } from "node:test";

import { ShopMind, ShopMindError, unwrap, type ChatEvent, type Schemas } from "../src/index.js";
import { AuthService, TenantAuthService, createClient, grpcTransport } from "../src/grpc.js";

const baseUrl = process.env.SHOPMIND_URL ?? "http://127.0.0.1:8080";
const grpcUrl = process.env.SHOPMIND_GRPC_URL ?? "http://127.0.0.1:9090";
const password = process.env.SHOPMIND_PASSWORD ?? "admin123";

async function signedIn(): Promise<ShopMind> {
  const sm = new ShopMind({ baseUrl });
  await sm.login("demo", "admin", password);
  return sm;
}

test("login reads every field with its declared type", async () => {
  const sm = new ShopMind({ baseUrl });
  const login = await sm.login("demo", "admin", password);
  const accessToken: string = login.access_token;
  const tokenType: string = login.token_type;
  const expiresIn: number = login.expires_in;
  const refreshToken: string = login.refresh_token;
  const refreshExpiresIn: number = login.refresh_expires_in;
  const user: Schemas["shopmind.tenant.v1.UserInfo"] | null = login.user;
  assert.match(accessToken, /^ey/);
  assert.equal(tokenType, "Bearer");
  assert.ok(expiresIn > 0 && refreshExpiresIn > expiresIn);
  assert.match(refreshToken, /^ey/);
  assert.ok(user);
  assert.equal(sm.token, accessToken);
});

test("info", async () => {
  const sm = await signedIn();
  const info = unwrap(await sm.api.GET("/api/v1/tenant/auth/info"));
  const user = info.user;
  assert.ok(user);
  const id: string = user.id; // int64: a JSON string
  const username: string = user.username;
  const isAdmin: boolean = user.is_admin;
  const permissions: string[] = user.permissions;
  const tenantCode: string | undefined = user.tenant?.code;
  assert.match(id, /^[1-9][0-9]*$/);
  assert.equal(username, "admin");
  assert.equal(isAdmin, true);
  assert.ok(Array.isArray(permissions));
  assert.equal(tenantCode, "demo");
});

test("metrics and a metric preview", async () => {
  const sm = await signedIn();
  const metrics = unwrap(await sm.api.GET("/api/v1/analytics/metrics"));
  const names = metrics.groups.flatMap((g) => (g.metrics ?? []).map((m) => m.name));
  assert.ok(names.includes("gmv"), `metrics: ${names.join(", ")}`);
  const end = new Date();
  const start = new Date(end.getTime() - 365 * 24 * 3600 * 1000);
  const preview = unwrap(await sm.api.POST("/api/v1/anls/query/preview", {
    body: { metric_names: ["gmv"], dimensions: ["shop"], start_time: start.toISOString(), end_time: end.toISOString() },
  }));
  const columns: Schemas["shopmind.analysis.v1.ResultColumn"][] = preview.columns;
  const rows: unknown[][] = preview.rows;
  const sql: string = preview.sql;
  const elapsed: string = preview.elapsed_ms;
  const truncated: boolean = preview.truncated;
  const gmv = columns.findIndex((c) => c.name === "gmv");
  assert.ok(columns[0].name === "shop" && gmv > 0, JSON.stringify(columns));
  assert.ok(rows.length > 0 && typeof rows[0][gmv] === "number", JSON.stringify(rows[0]));
  assert.match(sql, /SELECT/i);
  assert.match(elapsed, /^[0-9]+$/);
  assert.equal(truncated, false);
});

test("a goods list", async () => {
  const sm = await signedIn();
  const goods = unwrap(await sm.api.GET("/api/v1/basic/goods", { params: { query: { page_size: 5 } } }));
  const total: string = goods.total;
  const pageSize: number = goods.page_size;
  const items: Schemas["shopmind.basic.v1.Goods"][] = goods.items;
  assert.ok(Number(total) > 0);
  assert.equal(pageSize, 5);
  assert.equal(items.length, 5);
  const first = items[0];
  const name: string | undefined = first.name;
  const price: number | undefined = first.price;
  assert.ok(name && typeof price === "number");
});

test("a chat message streamed as typed events", async () => {
  const sm = await signedIn();
  const events: ChatEvent[] = [];
  for await (const ev of sm.chat({ message: "What was the GMV last month?" })) {
    events.push(ev);
  }
  assert.ok(events.length > 0);
  const conversation = events[0].conversation_id;
  assert.ok(events.every((e) => e.conversation_id === conversation));
  const text = events.filter((e) => e.object === "chat.completion.chunk").map((e) => e.choices?.[0]?.delta.content ?? "").join("");
  assert.ok(text.length > 0, JSON.stringify(events));
  const last = events[events.length - 1];
  assert.ok(last.type === "done" || last.type === "pipeline_end", JSON.stringify(last));
  assert.equal(last.finish_reason, "stop");
});

test("a 400 is a typed error naming the field", async () => {
  const sm = await signedIn();
  await assert.rejects(
    async () => unwrap(await sm.api.GET("/api/v1/tenant/users", { params: { query: { page_size: 101 } } })),
    (err: unknown) => err instanceof ShopMindError && err.code === 400 && err.status === 400 && err.message.includes("page_size"),
  );
});

test("a 401 is a typed error", async () => {
  const sm = new ShopMind({ baseUrl });
  await assert.rejects(
    async () => unwrap(await sm.api.GET("/api/v1/tenant/auth/info")),
    (err: unknown) => err instanceof ShopMindError && err.code === 401 && err.message === "missing bearer token",
  );
  await assert.rejects(async () => {
    for await (const _ of sm.chat({ message: "hello" })) { /* never reached */ }
  }, (err: unknown) => err instanceof ShopMindError && err.code === 401);
});

test("gRPC: VerifyToken and GetInfo with Connect", async () => {
  const sm = await signedIn();
  const token = sm.token!;
  const auth = createClient(AuthService, grpcTransport(grpcUrl));
  const { claims } = await auth.verifyToken({ token });
  assert.ok(claims);
  assert.equal(claims.username, "admin");
  assert.equal(claims.isAdmin, true);
  const tenantAuth = createClient(TenantAuthService, grpcTransport(grpcUrl, token));
  const info = await tenantAuth.getInfo({});
  assert.equal(info.user?.username, "admin");
  await assert.rejects(() => createClient(TenantAuthService, grpcTransport(grpcUrl)).getInfo({}), /unauthenticated|token/i);
});
