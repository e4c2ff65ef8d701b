"""What a failed object-store request is reported as, from obstore's own messages."""

from __future__ import annotations

import http.server
import socket
import socketserver
import threading
from collections.abc import Iterator
from datetime import timedelta

import pytest

from preimage.interface.errors import StoreConfigError
from preimage.store.packs._s3 import S3Location, S3Storage, _first_cause
from preimage.store.packs._storage import ObjectMissing


class _Busy(http.server.BaseHTTPRequestHandler):
    """Answers every request 503, as a loaded S3 server does."""

    def do_PUT(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


class _GoneOnRetry(http.server.BaseHTTPRequestHandler):
    """Drops the first GET without an answer and answers the retry 404: the object was
    deleted between the two (a prune replacing an index file)."""

    protocol_version = "HTTP/1.1"
    dropped = False

    def do_GET(self) -> None:
        if not _GoneOnRetry.dropped:
            _GoneOnRetry.dropped = True
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        body = b"<Error><Code>NoSuchKey</Code></Error>"
        self.send_response(404)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")   # else the test waits out the keep-alive
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class _NoBucket(http.server.BaseHTTPRequestHandler):
    """Answers a write 404 with no ``NoSuchBucket`` in it (a proxy in front of the store,
    a path-style URL naming another service)."""

    protocol_version = "HTTP/1.1"

    def do_PUT(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def _serve(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[int]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def busy_port() -> Iterator[int]:
    yield from _serve(_Busy)


def _put_error(port: int) -> str:
    import obstore
    from obstore.store import S3Store

    store = S3Store(
        "bucket",
        config={"endpoint": f"http://127.0.0.1:{port}", "region": "us-east-1",
                "access_key_id": "a", "secret_access_key": "b",
                "virtual_hosted_style_request": False},
        client_options={"allow_http": True, "connect_timeout": "5s", "timeout": "60s"},
        retry_config={"max_retries": 2, "retry_timeout": timedelta(seconds=15),
                      "backoff": {"init_backoff": timedelta(milliseconds=10),
                                  "max_backoff": timedelta(milliseconds=50), "base": 2}})
    with pytest.raises(Exception) as caught:
        obstore.put(store, "x", b"data")
    return str(caught.value)


def test_a_server_that_answers_503_is_not_called_a_timeout(busy_port: int) -> None:
    """obstore's message after its retries names its ``retry_timeout`` whatever failed; a
    server that answered 503 each time is reported as that answer."""
    text = _put_error(busy_port)
    assert "retry_timeout" in text
    assert _first_cause(text) == "the server answered 503 Service Unavailable"


def test_a_closed_port_is_still_connection_refused() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert _first_cause(_put_error(port)) == "connection refused"


def test_an_object_deleted_while_it_is_read_is_missing_not_an_unreachable_store() -> None:
    """obstore retries a GET that got no answer; when the object is gone by then it
    reports the retry's 404 as a GenericError, not a NotFoundError. A writer that read an index file a prune
    was replacing stopped with "cannot reach the object store"; it must see a missing
    object, which the index refresh skips."""
    _GoneOnRetry.dropped = False
    for port in _serve(_GoneOnRetry):
        storage = S3Storage(S3Location("bucket", "", f"http://127.0.0.1:{port}", None),
                            env={"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b"})
        with pytest.raises(ObjectMissing):
            storage.get("index/0123")


def test_a_write_answered_404_names_the_bucket_not_a_missing_object() -> None:
    """A write cannot miss its object: a 404 to it says the bucket (or the URL) is wrong,
    in the one-line error a user can act on — never the storage layer's "object missing",
    which only a read expects."""
    for port in _serve(_NoBucket):
        storage = S3Storage(S3Location("bucket", "", f"http://127.0.0.1:{port}", None),
                            env={"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b"})
        with pytest.raises(StoreConfigError, match="bucket 'bucket' does not exist"):
            storage.put("packs/0123", b"frame")
