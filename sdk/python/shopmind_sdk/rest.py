"""The REST client of the envelope API, on the standard library (urllib, json)."""

import json
import urllib.error
import urllib.parse
import urllib.request


class ShopMindError(Exception):
    """A failure the platform answered: the envelope's code (400, 401, 403, 404, ...) and message."""

    def __init__(self, code, message, status, request_id=None):
        super().__init__("%d %s" % (code, message))
        self.code = code
        self.message = message
        self.status = status  # the HTTP status (the code too, unless the deployment answers 200 always)
        self.request_id = request_id  # X-Request-Id, for the platform's logs


class Client:
    """A client of one gateway (http://127.0.0.1:8080), signed in or not.

    Every call returns the envelope's ``data`` (a dict as the OpenAPI document describes it:
    field names of the contract, 64-bit integers as strings) or raises ShopMindError.
    """

    def __init__(self, base_url, token=None, timeout=30.0):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def _request(self, method, path, body=None, params=None, accept="application/json"):
        url = self.base_url + path
        if params:
            url += "?" + urllib.parse.urlencode(params, doseq=True)
        data = None
        headers = {"Accept": accept}
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            return urllib.request.urlopen(req, timeout=self.timeout)
        except urllib.error.HTTPError as err:  # an error envelope under a 4xx/5xx status
            return err

    @staticmethod
    def _unwrap(resp):
        status = resp.status if hasattr(resp, "status") else resp.code
        raw = resp.read()
        try:
            env = json.loads(raw)
            code, message = env["code"], env["message"]
        except (ValueError, KeyError, TypeError):
            raise ShopMindError(status, "not an envelope: HTTP %d" % status, status, resp.headers.get("X-Request-Id"))
        if code != 0:
            raise ShopMindError(code, message, status, resp.headers.get("X-Request-Id"))
        return env.get("data")

    def call(self, method, path, body=None, params=None):
        """Calls any operation of the document and returns its data."""
        resp = self._request(method, path, body, params)
        try:
            return self._unwrap(resp)
        finally:
            resp.close()

    def get(self, path, **params):
        """GET path?params; list values repeat the parameter."""
        return self.call("GET", path, params=params or None)

    def post(self, path, body=None):
        return self.call("POST", path, body=body if body is not None else {})

    def login(self, tenant_code, username, password):
        """Signs in and keeps the access token; returns the LoginResponse data."""
        data = self.post("/api/v1/tenant/auth/login",
                         {"tenant_code": tenant_code, "username": username, "password": password})
        self.token = data["access_token"]
        return data

    def chat(self, message, **fields):
        """Sends a chat message (POST /api/v2/chat/message) and yields its events as dicts
        (shopmind.chat.v2.ChatEvent) until the stream ends. A refusal before the stream
        starts raises ShopMindError; a failure during it is an event of type "error"."""
        body = dict(fields, message=message)
        resp = self._request("POST", "/api/v2/chat/message", body, accept="text/event-stream")
        try:
            if not resp.headers.get("Content-Type", "").startswith("text/event-stream"):
                self._unwrap(resp)
                raise ShopMindError(0, "expected an event stream", resp.status)
            data = []
            for raw in resp:  # the response reads line by line as the events arrive
                line = raw.decode("utf-8").rstrip("\r\n")
                if line.startswith("data: "):
                    data.append(line[6:])
                elif line == "" and data:
                    payload = "\n".join(data)
                    data = []
                    if payload == "[DONE]":
                        return
                    yield json.loads(payload)
        finally:
            resp.close()
