// The extension's storage records and messages. Storage keys are the spec's, exactly:
// auth, config, sync_status, cache_queue. The service worker is their only writer.
import type { components } from "./gen/openapi";

type Schemas = components["schemas"];
export type ServerConfig = Schemas["shopmind.crx.v1.GetAuthConfigResponse"];
export type MetricDefinition = Schemas["shopmind.crx.v1.MetricDefinition"];
export type UploadSettings = Schemas["shopmind.crx.v1.UploadSettings"];
export type SyncRequest = Schemas["shopmind.crx.v1.SyncMetricsRequest"];
export type SyncResponse = Schemas["shopmind.crx.v1.SyncMetricsResponse"];
export type MetricItem = Schemas["shopmind.crx.v1.MetricItem"];
export type VersionResponse = Schemas["shopmind.crx.v1.GetVersionResponse"];
export type LoginResponse = Schemas["shopmind.tenant.v1.LoginResponse"];

/** auth: who is signed in where, and when (login_timestamp, ms since the epoch). */
export interface AuthRecord {
  server: string;
  access_token: string;
  tenant_code: string;
  username: string;
  user_id: string;
  login_timestamp: number;
}

/** config: the server's configuration and the user's local settings. */
export interface ConfigRecord {
  server: ServerConfig;
  /** The upload interval the user chose in the popup, seconds; 0: the server's. */
  upload_interval_seconds: number;
  /** The ShopMind shop values are attributed to, per platform ("taobao" -> shop id). */
  shop_by_platform: Record<string, string>;
  /** The tenant's shops (id, name, platform), for the popup's choice. */
  shops: { id: string; name: string; platform: string }[];
  /** Pages metrics were read on, revisited in background tabs: metric key -> URL. */
  pages: Record<string, string>;
  /** When each metric was last read (ms), for its interval_seconds. */
  last_collected: Record<string, number>;
}

export interface ItemRejection {
  metric_key: string;
  code: string;
  message: string;
  at: number;
}

export interface SyncStatus {
  /** idle, uploading, retrying, needs_login, update_required, error */
  state: string;
  /** Values in cache_queue waiting, and in its pending batch (kept with every queue write, so
   * the status is read without reading the queue). */
  queued: number;
  pending: number;
  last_upload_at: number;
  last_result: { accepted: number; duplicates: number; rejected: number } | null;
  next_upload_at: number;
  errors: { at: number; message: string }[];
  rejections: ItemRejection[];
  dropped: number;
  update: { required: boolean; available: boolean; latest: string; download_url: string; checked_at: number } | null;
  collecting_tabs: number[];
  last_adhoc: { at: number; title: string; id: string; error: string } | null;
}

/** One value waiting for upload: a sync item. */
export type QueuedItem = MetricItem;

/** A batch fixed before its first send: every retry sends the same id and items. */
export interface PendingBatch {
  client_batch_id: string;
  items: QueuedItem[];
  attempts: number;
  next_attempt_at: number;
}

export interface CacheQueue {
  items: QueuedItem[];
  /** Batches fixed (ids given) and not yet answered, in sending order. */
  pending: PendingBatch[];
  bytes: number;
}

export interface StorageShape {
  auth?: AuthRecord;
  config?: ConfigRecord;
  sync_status?: SyncStatus;
  cache_queue?: CacheQueue;
}

/** A value read on a page by the content script. */
export interface CollectedValue {
  metric_key: string;
  platform: string;
  value: number;
  page_url: string;
  collected_at: string;
}

export interface AdhocCapture {
  page_url: string;
  page_title: string;
  data: Record<string, unknown>;
}

/** The messages between popup, content scripts and the service worker. */
export type Message =
  | { action: "login"; server: string; tenant_code: string; username: string; password: string; captcha_id?: string; captcha_code?: string }
  | { action: "get_captcha"; server: string }
  | { action: "get_status" }
  | { action: "save_settings"; upload_interval_seconds?: number; shop_by_platform?: Record<string, string> }
  | { action: "sync_start" }
  | { action: "force_sync" }
  | { action: "get_cache_queue" }
  | { action: "logout" }
  | { action: "status_update"; status: PopupState }
  | { action: "collect_adhoc_data"; tab_id?: number }
  | { action: "adhoc_data_collected"; capture: AdhocCapture }
  | { action: "collect_metric_data"; values: CollectedValue[] }
  | { action: "collect_now" };

export interface PopupState {
  signed_in: boolean;
  auth: Omit<AuthRecord, "access_token"> | null;
  config: ConfigRecord | null;
  status: SyncStatus;
  queued: number;
  pending: number;
  version: string;
}

export type Reply =
  | { ok: true; state?: PopupState; captcha?: { captcha_id: string; image: string }; queue?: { queued: number; pending: number; bytes: number; oldest: string | null } }
  | { ok: false; error: string; captcha_required?: boolean; captcha_problem?: "required" | "wrong" };
