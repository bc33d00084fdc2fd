"""A fault-injecting HTTP proxy on loopback, in front of an S3 server (moto's, servers.py),
for the tests of what a conversion does when the store fails: it forwards each request and,
on command, resets the connection (mid-request or mid-response), answers ``503 SlowDown`` or
``500 InternalError`` (S3's XML error bodies; the latter to UploadPart or PutObject requests),
holds PutObject requests back for a while before forwarding them (a slow store), or goes down
(refuses connections) for a while or for good.

Each client connection carries one request: the proxy asks the server and the client to close
the connection after it (``Connection: close``), so that every request is seen and can be
failed on its own. Every socket has a timeout, the proxy stops by itself after ``lifetime``
seconds, and :meth:`FaultProxy.stop` closes every connection and joins every thread within a
deadline.
"""

from __future__ import annotations

import select
import socket
import struct
import threading
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import urlsplit

HEAD_BYTES = 64 << 10  # a request or answer head larger than this is refused
BODY_BYTES = 256 << 20  # and so is a body larger than this
TIMEOUT = 30.0  # seconds any socket waits for its peer
JOIN = 10.0  # seconds stop() waits for each thread


@dataclass(frozen=True)
class Request:
    """One request as the proxy read it."""

    method: str
    target: str  # the path and query
    head: bytes  # the request line and headers, rewritten to close the connection after it
    body: bytes

    @property
    def upload_part(self) -> bool:
        """An S3 UploadPart (``PUT ...?partNumber=N&uploadId=ID``)."""
        query = self.target.partition("?")[2]
        return self.method == "PUT" and "partNumber=" in query and "uploadId=" in query


def s3_error(status: int, reason: str, code: str, message: str, head_only: bool) -> bytes:
    """An S3 error answer (its XML body unless it answers a HEAD), closing the connection."""
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Error><Code>{code}</Code><Message>{message}</Message>"
        "<RequestId>fault-proxy</RequestId></Error>"
    ).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/xml\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    return head if head_only else head + body


SLOW_DOWN = (503, "Slow Down", "SlowDown", "Please reduce your request rate.")
INTERNAL = (500, "Internal Server Error", "InternalError", "We encountered an internal error.")


class FaultProxy:
    """An HTTP proxy on 127.0.0.1 in front of ``upstream`` (``http://host:port``)."""

    def __init__(self, upstream: str, lifetime: float = 600.0, spacing: int = 1):
        """``spacing``: after a fault, the next ``spacing - 1`` requests are forwarded
        untouched (faults spread over a run rather than one after another)."""
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname, parts.port)
        self.lifetime, self.spacing = lifetime, spacing
        self._calm = 0  # requests still to forward untouched before the next fault
        self.injected: Counter[str] = Counter()  # fault -> times injected
        self.requests: list[tuple[str, str]] = []  # (method, target) of every request read
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._faults: Counter[str] = Counter()  # fault -> requests it is still due for
        self._parts_fail_always = False
        self._put_filter = ""  # the PUTs fail_puts fails hold this in their path
        self._copy_filter = ""  # and this in their copy source (x-amz-copy-source)
        self._delay = (0.0, "")  # seconds PUTs holding the string in their path are held back
        self._puts_spared = 0  # such PUTs still to forward before failing them
        self._down_until = 0.0  # refuses connections until then (inf: for good)
        self._down_on_part: float | None = None  # goes down this long at the next UploadPart
        self._threads: list[threading.Thread] = []
        self._sockets: set[socket.socket] = set()
        self._listener: socket.socket | None = self._listen(0)
        self.port = self._listener.getsockname()[1]
        self._acceptor = threading.Thread(target=self._accept, name="fault-proxy", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # the commands

    def reset_requests(self, n: int) -> None:
        """Close the connection of each of the next ``n`` requests once its head is read."""
        self._due("reset-request", n)

    def reset_responses(self, n: int) -> None:
        """Forward each of the next ``n`` requests, then close the connection halfway through
        sending the server's answer."""
        self._due("reset-response", n)

    def slow_down(self, n: int) -> None:
        """Answer the next ``n`` requests ``503 SlowDown``."""
        self._due("slow-down", n)

    def fail_parts(self, n: int | None) -> None:
        """Answer the next ``n`` UploadPart requests ``500 InternalError`` (None: every one)."""
        with self._lock:
            self._parts_fail_always = n is None
            self._faults["part-error"] = 0 if n is None else n

    def fail_puts(self, n: int, containing: str = "", after: int = 0, copying: str = "") -> None:
        """Answer the next ``n`` PutObject requests (``PUT`` of a whole object, not a part;
        a server-side copy too) whose path holds ``containing`` ``500 InternalError``, once
        ``after`` such requests have been forwarded; with ``copying``, only the server-side
        copies whose source holds it."""
        with self._lock:
            self._put_filter, self._puts_spared = containing, after
            self._copy_filter = copying
        self._due("put-error", n)

    def delay_puts(self, seconds: float, containing: str = "") -> None:
        """Hold every PutObject request whose path holds ``containing`` back ``seconds``
        before forwarding it (its object is stored that much later)."""
        with self._lock:
            self._delay = (seconds, containing)

    def go_down(self, seconds: float | None, at_next_part: bool = False) -> None:
        """Refuse connections for ``seconds`` (None: until stopped), from now or from the next
        UploadPart on (whose connection is reset)."""
        span = float("inf") if seconds is None else seconds
        with self._lock:
            if at_next_part:
                self._down_on_part = span
            else:
                self._down_until = time.monotonic() + span
                self.injected["down"] += 1

    def clear(self) -> None:
        """No fault from now on (and up again)."""
        with self._lock:
            self._faults.clear()
            self._parts_fail_always = False
            self._down_until, self._down_on_part = 0.0, None

    # running

    def start(self) -> FaultProxy:
        self._acceptor.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._acceptor.join(JOIN)
        with self._lock:
            sockets, threads = list(self._sockets), list(self._threads)
        for sock in sockets:
            _close(sock)
        for thread in threads:
            thread.join(JOIN)
        if self._listener is not None:
            _close(self._listener)
        alive = [t.name for t in [self._acceptor, *threads] if t.is_alive()]
        assert not alive, f"fault proxy threads still running: {alive}"

    def _due(self, fault: str, n: int) -> None:
        with self._lock:
            self._faults[fault] = n

    def _take(self, fault: str) -> bool:
        """Whether ``fault`` is due for this request (counted as injected if so)."""
        with self._lock:
            if fault == "part-error" and self._parts_fail_always:
                self.injected[fault] += 1
                return True
            if self._faults[fault] > 0 and self._calm <= 0:
                self._faults[fault] -= 1
                self.injected[fault] += 1
                self._calm = self.spacing
                return True
            return False

    def _listen(self, port: int) -> socket.socket | None:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            sock.close()
            return None  # the port is taken for now: tried again on the next turn
        sock.listen(128)
        return sock

    def _accept(self) -> None:
        deadline = time.monotonic() + self.lifetime
        while not self._stop.is_set() and time.monotonic() < deadline:
            with self._lock:
                down = time.monotonic() < self._down_until
            if down:
                if self._listener is not None:  # refused from now: nobody listens
                    _close(self._listener)
                    self._listener = None
                self._stop.wait(0.02)
                continue
            if self._listener is None:
                self._listener = self._listen(self.port)
                if self._listener is None:
                    self._stop.wait(0.05)
                    continue
            ready, _, _ = select.select([self._listener], [], [], 0.05)
            if not ready:
                continue
            try:
                conn, _ = self._listener.accept()
            except OSError:
                continue
            conn.settimeout(TIMEOUT)
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            with self._lock:
                self._sockets.add(conn)
                self._threads = [t for t in self._threads if t.is_alive()] + [thread]
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            self._handle(conn)
        except OSError:  # the client went away, or stop() closed the socket
            pass
        finally:
            with self._lock:
                self._sockets.discard(conn)
            _close(conn)

    def _handle(self, conn: socket.socket) -> None:
        head, rest = _read_head(conn)
        if head is None:
            return
        lines = head.decode("latin-1").split("\r\n")
        method, target = lines[0].split(" ")[:2]
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        with self._lock:
            self.requests.append((method, target))
            self._calm -= 1
            part = method == "PUT" and "partNumber=" in target and "uploadId=" in target
            if part and self._down_on_part is not None and self._calm <= 0:
                self._down_until = time.monotonic() + self._down_on_part
                self._down_on_part = None
                self._calm = self.spacing
                self.injected["down"] += 1
                _reset(conn)
                return
        if self._take("reset-request"):
            _reset(conn)
            return
        if headers.get("expect", "").lower() == "100-continue":
            conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        body = _read_body(conn, headers, rest)
        request = Request(method, target, _closing(lines, drop=("expect",)), body)
        if self._take("slow-down"):
            conn.sendall(s3_error(*SLOW_DOWN, head_only=method == "HEAD"))
            return
        if request.upload_part and self._take("part-error"):
            conn.sendall(s3_error(*INTERNAL, head_only=False))
            return
        source = headers.get("x-amz-copy-source", "")
        if (
            method == "PUT"
            and "?" not in target
            and self._put_filter in target
            and self._copy_filter in source
        ):
            with self._lock:
                spared, self._puts_spared = self._puts_spared > 0, self._puts_spared - 1
            if not spared and self._take("put-error"):
                conn.sendall(s3_error(*INTERNAL, head_only=False))
                return
        with self._lock:
            delay, delayed = self._delay
        if delay and method == "PUT" and "?" not in target and delayed in target:
            if self._stop.wait(delay):  # stopped meanwhile: the request never reaches the store
                return
        answer = self._forward(request)
        if self._take("reset-response"):
            conn.sendall(answer[: max(1, len(answer) // 2)])
            _reset(conn)
            return
        conn.sendall(answer)

    def _forward(self, request: Request) -> bytes:
        """The server's answer to ``request``, its head rewritten to close the connection."""
        with socket.create_connection(self.upstream, timeout=TIMEOUT) as up:
            with self._lock:
                self._sockets.add(up)
            try:
                up.sendall(request.head + request.body)
                chunks, size = [], 0
                while chunk := up.recv(1 << 20):
                    chunks.append(chunk)
                    size += len(chunk)
                    if size > BODY_BYTES + HEAD_BYTES:
                        raise OSError("the server's answer is too large")
            finally:
                with self._lock:
                    self._sockets.discard(up)
        answer = b"".join(chunks)
        head, sep, body = answer.partition(b"\r\n\r\n")
        if not sep:
            return answer
        lines = head.decode("latin-1").split("\r\n")
        return _closing(lines, drop=()) + body


def _read_head(conn: socket.socket) -> tuple[bytes | None, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > HEAD_BYTES:
            raise OSError("request head too large")
        chunk = conn.recv(1 << 16)
        if not chunk:
            return None, b""
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _read_body(conn: socket.socket, headers: dict[str, str], rest: bytes) -> bytes:
    """The request's body, as sent (a chunked body kept chunked, its trailers too)."""
    if headers.get("transfer-encoding", "").lower() != "chunked":
        length = int(headers.get("content-length") or 0)
        if length > BODY_BYTES:
            raise OSError("request body too large")
        return _read_until(conn, rest, lambda data: len(data) >= length)
    data, at = rest, 0  # at: where the next chunk's size line starts
    while True:
        data = _read_until(conn, data, lambda d, at=at: b"\r\n" in d[at:])
        size_line = data[at : data.index(b"\r\n", at)]
        size = int(size_line.split(b";")[0].strip() or b"0", 16)
        at += len(size_line) + 2
        if size == 0:  # the trailers, up to an empty line
            data = _read_until(conn, data, lambda d, at=at: b"\r\n\r\n" in d[at - 2 :])
            return data
        at += size + 2
        data = _read_until(conn, data, lambda d, at=at: len(d) >= at)


def _read_until(conn: socket.socket, data: bytes, done) -> bytes:  # noqa: ANN001
    """``data`` and what ``conn`` sends next, until ``done(data)`` holds."""
    while not done(data):
        if len(data) > BODY_BYTES + HEAD_BYTES:
            raise OSError("request body too large")
        chunk = conn.recv(1 << 20)
        if not chunk:
            raise OSError("the client closed the connection mid-request")
        data += chunk
    return data


def _closing(lines: list[str], drop: tuple[str, ...]) -> bytes:
    """A head (request or status line, then headers) that closes the connection after it."""
    kept = [lines[0]] + [
        line
        for line in lines[1:]
        if line and line.partition(":")[0].strip().lower() not in ("connection", *drop)
    ]
    return ("\r\n".join([*kept, "Connection: close"]) + "\r\n\r\n").encode("latin-1")


def _reset(sock: socket.socket) -> None:
    """Close ``sock`` with a reset (RST), as a crashed server or a broken network does."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    _close(sock)


def _close(sock: socket.socket) -> None:
    try:
        sock.close()
    except OSError:
        pass


@contextmanager
def fault_proxy(upstream: str, lifetime: float = 600.0, spacing: int = 1):
    """A started :class:`FaultProxy` in front of ``upstream``, stopped after the block."""
    proxy = FaultProxy(upstream, lifetime, spacing).start()
    try:
        yield proxy
    finally:
        proxy.stop()
