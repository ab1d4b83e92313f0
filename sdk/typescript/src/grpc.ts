// ShopMind's gRPC client for service-to-service use: the contract's services as generated
// by protoc-gen-es (src/gen/proto), called with Connect for Node over gRPC (HTTP/2).
//
//   const transport = grpcTransport("http://127.0.0.1:9090");
//   const auth = createClient(AuthService, transport);
//   const { claims } = await auth.verifyToken({ token });
import { createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";

export { createClient };
export { AuthService } from "./gen/proto/shopmind/tenant/v1/internal_pb.js";
export { TenantAuthService } from "./gen/proto/shopmind/tenant/v1/auth_pb.js";
export { TenantService } from "./gen/proto/shopmind/tenant/v1/tenant_pb.js";
export { MetricService, QueryService } from "./gen/proto/shopmind/analysis/v1/analysis_pb.js";
export { BasicDataService } from "./gen/proto/shopmind/basic/v1/basic_pb.js";
export { GoodsService } from "./gen/proto/shopmind/basic/v1/goods_pb.js";
export { ChatService } from "./gen/proto/shopmind/chat/v2/chat_pb.js";
export { SessionService } from "./gen/proto/shopmind/chat/v1/session_pb.js";

/**
 * grpcTransport is a gRPC transport to a ShopMind gRPC listener (SHOPMIND_GRPC_ADDR); with a
 * token, every call carries it as the authorization metadata.
 */
export function grpcTransport(baseUrl: string, token?: string) {
  const bearer: Interceptor = (next) => async (req) => {
    if (token) req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
  return createGrpcTransport({ baseUrl, interceptors: [bearer] });
}
