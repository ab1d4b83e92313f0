"""ShopMind API client.

REST (standard library only): :class:`Client` unwraps the ``{code, message, data}`` envelope,
raises :class:`ShopMindError` for a non-zero code and streams chat replies as events.
gRPC: :mod:`shopmind_sdk.grpc` opens channels to the contract's services, whose stubs
``make sdk`` generates with protoc (``shopmind.<service>.v1.<file>_pb2[_grpc]``).
"""

from .rest import Client, ShopMindError

__version__ = "1.0.0"
__all__ = ["Client", "ShopMindError", "__version__"]
