"""The SDK against a running platform: SHOPMIND_URL (the gateway), SHOPMIND_GRPC_ADDR
(host:port of the gRPC listener) and SHOPMIND_PASSWORD (the demo administrator's), as
tests/sdk starts it. Run from sdk/python after `make sdk`: python3 -m unittest -v."""

import datetime
import os
import unittest

import grpc

from shopmind.tenant.v1 import auth_pb2, auth_pb2_grpc, internal_pb2, internal_pb2_grpc
from shopmind_sdk import Client, ShopMindError
from shopmind_sdk.grpc import bearer, channel

BASE_URL = os.environ.get("SHOPMIND_URL", "http://127.0.0.1:8080")
GRPC_ADDR = os.environ.get("SHOPMIND_GRPC_ADDR", "127.0.0.1:9090")
PASSWORD = os.environ.get("SHOPMIND_PASSWORD", "admin123")


def signed_in():
    c = Client(BASE_URL)
    c.login("demo", "admin", PASSWORD)
    return c


class RestTest(unittest.TestCase):
    def test_login(self):
        c = Client(BASE_URL)
        login = c.login("demo", "admin", PASSWORD)
        self.assertEqual(login["token_type"], "Bearer")
        self.assertTrue(login["access_token"].startswith("ey"))
        self.assertIsInstance(login["expires_in"], int)
        self.assertEqual(login["user"]["username"], "admin")
        self.assertEqual(c.token, login["access_token"])

    def test_info(self):
        info = signed_in().get("/api/v1/tenant/auth/info")
        self.assertEqual(info["user"]["username"], "admin")
        self.assertTrue(info["user"]["is_admin"])
        self.assertEqual(info["user"]["tenant"]["code"], "demo")
        int(info["user"]["id"])  # int64: a JSON string

    def test_metric_preview(self):
        c = signed_in()
        groups = c.get("/api/v1/analytics/metrics")["groups"]
        names = [m["name"] for g in groups for m in g["metrics"]]
        self.assertIn("gmv", names)
        end = datetime.datetime.now(datetime.timezone.utc)
        start = end - datetime.timedelta(days=365)
        preview = c.post("/api/v1/anls/query/preview", {
            "metric_names": ["gmv"], "dimensions": ["shop"],
            "start_time": start.isoformat(), "end_time": end.isoformat()})
        cols = [col["name"] for col in preview["columns"]]
        self.assertEqual(cols[0], "shop")
        gmv = cols.index("gmv")
        self.assertGreater(len(preview["rows"]), 0)
        self.assertIsInstance(preview["rows"][0][gmv], (int, float))
        self.assertIn("SELECT", preview["sql"].upper())

    def test_goods_list(self):
        goods = signed_in().get("/api/v1/basic/goods", page_size=5)
        self.assertEqual(goods["page_size"], 5)
        self.assertEqual(len(goods["items"]), 5)
        self.assertGreater(int(goods["total"]), 0)
        self.assertIsInstance(goods["items"][0]["price"], (int, float))

    def test_chat_streamed(self):
        events = list(signed_in().chat("What was the GMV last month?"))
        self.assertGreater(len(events), 0)
        conv = events[0]["conversation_id"]
        self.assertTrue(all(e["conversation_id"] == conv for e in events))
        text = "".join(e["choices"][0]["delta"].get("content", "")
                       for e in events if e.get("object") == "chat.completion.chunk")
        self.assertTrue(text, events)
        self.assertIn(events[-1]["type"], ("done", "pipeline_end"))
        self.assertEqual(events[-1]["finish_reason"], "stop")

    def test_400_is_a_typed_error(self):
        with self.assertRaises(ShopMindError) as ctx:
            signed_in().get("/api/v1/tenant/users", page_size=101)
        self.assertEqual(ctx.exception.code, 400)
        self.assertEqual(ctx.exception.status, 400)
        self.assertIn("page_size", ctx.exception.message)

    def test_401_is_a_typed_error(self):
        with self.assertRaises(ShopMindError) as ctx:
            Client(BASE_URL).get("/api/v1/tenant/auth/info")
        self.assertEqual(ctx.exception.code, 401)
        self.assertEqual(ctx.exception.message, "missing bearer token")
        with self.assertRaises(ShopMindError) as ctx:
            list(Client(BASE_URL).chat("hello"))
        self.assertEqual(ctx.exception.code, 401)


class GrpcTest(unittest.TestCase):
    def test_verify_token_and_get_info(self):
        token = signed_in().token
        with channel(GRPC_ADDR) as ch:
            claims = internal_pb2_grpc.AuthServiceStub(ch).VerifyToken(
                internal_pb2.VerifyTokenRequest(token=token)).claims
            self.assertEqual(claims.username, "admin")
            self.assertTrue(claims.is_admin)
            info = auth_pb2_grpc.TenantAuthServiceStub(ch).GetInfo(
                auth_pb2.GetInfoRequest(), metadata=bearer(token))
            self.assertEqual(info.user.username, "admin")
            with self.assertRaises(grpc.RpcError) as ctx:
                auth_pb2_grpc.TenantAuthServiceStub(ch).GetInfo(auth_pb2.GetInfoRequest())
            self.assertEqual(ctx.exception.code(), grpc.StatusCode.UNAUTHENTICATED)


if __name__ == "__main__":
    unittest.main()
