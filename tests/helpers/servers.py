"""Real servers on loopback for the object-storage tests and the remote benchmark: an
S3-compatible server (moto in server mode) and a static HTTP server that honours Range
requests and counts the requests and bytes it serves."""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

from .marks import require

_RANGE = re.compile(r"bytes=(\d*)-(\d*)$")
_COLOURS = re.compile(r"\x1b\[[0-9;]*m")  # the server's log colours a 206 answer

SERVER_PIDS: dict[str, int] = {}  # endpoint -> process id of a server in its own process

S3_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@dataclass
class Served:
    """What the HTTP server sent: one entry per request, ``(method, path, range, bytes)``."""

    log: list[tuple[str, str, str | None, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, method: str, path: str, ranged: str | None, sent: int) -> None:
        with self.lock:
            self.log.append((method, path, ranged, sent))

    @property
    def requests(self) -> int:
        return len(self.log)

    @property
    def bytes(self) -> int:
        return sum(entry[3] for entry in self.log)

    def reset(self) -> None:
        with self.lock:
            self.log.clear()


class RangeServer(ThreadingHTTPServer):
    """Serves the files under ``root`` (GET and HEAD, single byte ranges). Its listen queue
    holds 128 connections, as a web server's does: socketserver's 5 drop the SYN of the
    sixth of 7 requests made side by side, which the client sends again a second later."""

    daemon_threads = True
    request_queue_size = 128

    def __init__(self, root: Path, ranges: bool = True, latency: float = 0.0):
        """``ranges=False``: a server that ignores Range headers and answers every GET with
        the whole file (Python's ``http.server``, some static hosts); ``served`` then counts
        the bytes that reached the client's socket before it closed the connection.
        ``latency``: seconds each request waits before its answer (a store far away)."""
        self.root = Path(root)
        self.ranges = ranges
        self.latency = latency
        self.served = Served()
        self.in_flight = self.most_in_flight = 0  # requests being answered at once
        self._flight = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    @contextmanager
    def answering(self):
        """Counts the request in flight while it is answered."""
        with self._flight:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            yield
        finally:
            with self._flight:
                self.in_flight -= 1

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: RangeServer

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def _file(self) -> Path | None:
        path = (self.server.root / unquote(self.path.split("?", 1)[0]).lstrip("/")).resolve()
        if not path.is_file() or self.server.root.resolve() not in path.parents:
            return None
        return path

    def do_HEAD(self) -> None:
        with self.server.answering():
            self._head()

    def do_GET(self) -> None:
        with self.server.answering():
            self._get()

    def _head(self) -> None:
        time.sleep(self.server.latency)
        path = self._file()
        if path is None:
            self.send_error(404)
            return
        self.server.served.add("HEAD", self.path, None, 0)  # counted before the client has it
        self.send_response(200)
        self.send_header("Content-Length", str(path.stat().st_size))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()

    def _get(self) -> None:
        time.sleep(self.server.latency)
        path = self._file()
        if path is None:
            self.send_error(404)
            return
        size = path.stat().st_size
        if not self.server.ranges:
            self._whole(path, size)
            return
        ranged = self.headers.get("Range")
        start, stop = 0, size
        if ranged:
            span = range_span(ranged, size)
            if span is None or span[0] >= size:
                self.send_error(416)
                return
            start, stop = span[0], min(size, span[1] + 1)
        with open(path, "rb") as f:
            f.seek(start)
            data = f.read(stop - start)
        self.server.served.add("GET", self.path, ranged, len(data))
        self.send_response(206 if ranged else 200)
        if ranged:
            self.send_header("Content-Range", f"bytes {start}-{stop - 1}/{size}")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        self.wfile.write(data)

    def _whole(self, path: Path, size: int) -> None:
        """The whole file, whatever was asked, in blocks until the client stops reading."""
        self.send_response(200)
        self.send_header("Content-Length", str(size))
        self.end_headers()
        sent = 0
        try:
            with open(path, "rb") as f:
                while block := f.read(1 << 16):
                    self.wfile.write(block)
                    sent += len(block)
        except OSError:  # the client closed the connection
            pass
        finally:
            self.server.served.add("GET", self.path, None, sent)


def range_span(header: str, size: int) -> tuple[int, int] | None:
    """``(first, last)`` byte a Range header asks for of an object of ``size`` bytes
    (``bytes=a-b``; ``bytes=a-``: to the end; ``bytes=-n``: the last n), ``last`` as asked
    even past the end; None for any other header."""
    match = _RANGE.match(header.strip())
    if not match or not (match.group(1) or match.group(2)):
        return None
    first, last = match.groups()
    if not first:
        return max(0, size - int(last)), size - 1
    return int(first), int(last) if last else size - 1


@contextmanager
def range_server(root: Path, ranges: bool = True, latency: float = 0.0):
    """A RangeServer over ``root`` on loopback, for the duration of the block."""
    require("server", "an HTTP server")
    server = RangeServer(root, ranges, latency)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@contextmanager
def s3_server(own_process: bool = False):
    """moto's S3 server on loopback, with the standard AWS environment pointing at it (the
    endpoint and test credentials); yields the endpoint URL.

    ``own_process``: the server runs in a process of its own (``python -m moto.server``), as a
    real store would, so that its serving does not take this process' interpreter lock (what
    a benchmark timing the client needs); else on a thread of this process."""
    require("server", "moto's S3 server")
    if own_process:
        stop, endpoint = _moto_process()
    else:
        stop, endpoint = _moto_thread()
    try:
        with _environment(**S3_ENVIRONMENT, AWS_ENDPOINT_URL=endpoint):
            yield endpoint
    finally:
        stop()


@contextmanager
def moto_requests(query: bool = False, on_request: Callable[..., None] | None = None):
    """The requests moto's server on a thread of this process answers within the block, as
    ``(method, path, status)``: a ranged GET is answered 206, a GET of a whole object 200
    (read from the server's log of each request, silenced otherwise); with ``query``, each
    also holds its query string (``partNumber=2&uploadId=...``). ``on_request(*entry)`` is
    called with each as it is answered, on the server's thread."""
    seen: list[tuple[str, str, int]] = []

    class Seen(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            args = record.args if isinstance(record.args, tuple) else ()
            line = _COLOURS.sub("", args[0]) if args and isinstance(args[0], str) else ""
            if len(args) >= 2 and line.count(" ") == 2:
                method, path, _ = line.split(" ")
                status = str(args[1])
                path, _, asked = path.partition("?")
                entry = (method, unquote(path), int(status[:3]))
                seen.append((*entry, asked) if query else entry)
                if on_request is not None:
                    on_request(*seen[-1])

    logger = logging.getLogger("werkzeug")
    saved = logger.handlers, logger.level, logger.propagate
    logger.handlers, logger.propagate = [Seen(logging.INFO)], False  # counted, not printed
    logger.setLevel(logging.INFO)
    try:
        yield seen
    finally:
        logger.handlers, level, logger.propagate = saved
        logger.setLevel(level)


def _moto_thread():
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    return server.stop, f"http://{host}:{port}"


def _moto_process():
    port = _free_port()
    command = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    SERVER_PIDS[endpoint] = process.pid
    _wait_for(port, process, "moto's server")

    def stop() -> None:
        SERVER_PIDS.pop(endpoint, None)
        process.terminate()
        process.wait(timeout=30)

    return stop, endpoint


@contextmanager
def refusing_s3_server():
    """moto's S3 server (its own process) checking every request's credentials, which it
    knows none of: each request is refused ``403``, as with wrong credentials."""
    require("server", "moto's S3 server")
    port = _free_port()
    command = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "0"}
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    try:
        _wait_for(port, process, "moto's server")
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=30)


def new_bucket(endpoint: str) -> str:
    """A new, empty bucket on the server at ``endpoint``."""
    import boto3

    name = f"runs-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=name)
    return name


def s3_client(endpoint: str):
    import boto3

    return boto3.client("s3", endpoint_url=endpoint)


def interrupt_once_a_part_is_in(
    endpoint: str, bucket: str, key: str, within: float
) -> tuple[threading.Thread, threading.Event]:
    """A started thread that interrupts this process (SIGINT, as Ctrl-C does) as soon as the
    multipart upload to ``key`` holds a part, giving up after ``within`` seconds, and an event
    set when it did."""
    client = s3_client(endpoint)
    sent = threading.Event()

    def watch() -> None:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            listed = client.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
            started = [u["UploadId"] for u in listed if u["Key"] == key]
            if started and client.list_parts(Bucket=bucket, Key=key, UploadId=started[0]).get(
                "Parts"
            ):
                sent.set()
                os.kill(os.getpid(), signal.SIGINT)
                return
            time.sleep(0.005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    return watcher, sent


def cpu_seconds(pid: int) -> float:
    """CPU time (user and system) the process ``pid`` has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def gcs_server():
    """A Google Cloud Storage emulator (gcp-storage-emulator, in memory) on a thread of this
    process, with ``STORAGE_EMULATOR_HOST`` pointing gcsfs at it; yields its URL.

    gcsfs' experimental bucket-type lookup (a gRPC call the emulator does not answer, waited
    on for a minute per bucket) is turned off, as ``GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT=false``
    does for any user of an emulator."""
    require("server", "a GCS emulator")
    from gcp_storage_emulator.server import create_server

    logging.getLogger("gcp_storage_emulator").setLevel(logging.ERROR)
    port = _free_port()
    server = create_server("127.0.0.1", port, in_memory=True)
    server.start()
    host = f"http://127.0.0.1:{port}"
    with _environment(STORAGE_EMULATOR_HOST=host, GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT="false"):
        try:
            yield host
        finally:
            server.stop()


AZURITE_KEY = (  # the emulator's well-known development account key (public, not a secret)
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)


S3RVER_KEY = "S3RVER"  # s3rver's fixed access key id and secret
PORT = "{port}"  # in a Node server's arguments: the port it is given


def _node_command(binary: str) -> Path:
    return Path(sys.prefix) / "node" / "node_modules" / ".bin" / binary


def node_server_missing(package: str, binary: str) -> str | None:
    """Why the Node server ``package`` (its command ``binary``) cannot start here, or None
    when it can: the tests that need it are skipped with this reason."""
    if not _node_command(binary).exists():
        return f"{package} is not installed: `make test` installs it with npm"
    if shutil.which("node") is None:
        return f"{package} needs Node.js (node is not on PATH): `make test` installs it with npm"
    return None


@contextmanager
def _node_server(package: str, binary: str, arguments: list[str]):
    """A Node server that ``make test`` installs from npm under the virtual environment,
    started in a process of its own with ``arguments``, where the argument :data:`PORT`
    stands for a free loopback port; yields the port and the process once it answers, and
    stops it after (a server waits for its clients' idle connections to close: not long)."""
    require("server", "a Node server")
    missing = node_server_missing(package, binary)
    if missing:
        raise RuntimeError(missing)
    command = _node_command(binary)
    port = _free_port()
    process = subprocess.Popen(
        [str(command), *(str(port) if a == PORT else a for a in arguments)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for(port, process, package)
        yield port, process
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


@contextmanager
def s3rver_server(folder: Path, bucket: str):
    """s3rver, a second S3-compatible server (Node; its objects kept as files, a ranged GET
    read from the file by its range), on loopback, keeping its objects in ``folder``, with
    ``bucket`` made at its start; yields its endpoint. It takes the credentials
    :data:`S3RVER_KEY` and path-style URLs; a client names them in its storage options
    (:func:`s3rver_options`)."""
    arguments = ["-d", str(folder), "-a", "127.0.0.1", "-p", PORT, "--silent"]
    arguments += ["--no-vhost-buckets", "--configure-bucket", bucket]
    with _node_server("s3rver", "s3rver", arguments) as (port, process):
        endpoint = f"http://127.0.0.1:{port}"
        SERVER_PIDS[endpoint] = process.pid
        try:
            yield endpoint
        finally:
            SERVER_PIDS.pop(endpoint, None)


def s3rver_options(endpoint: str) -> dict[str, object]:
    """Storage options that point s3fs at the s3rver at ``endpoint``."""
    return {
        "endpoint_url": endpoint,
        "key": S3RVER_KEY,
        "secret": S3RVER_KEY,
        "client_kwargs": {"region_name": "us-east-1"},
        "config_kwargs": {"s3": {"addressing_style": "path"}},
    }


@contextmanager
def azurite_server(folder: Path):
    """Azurite's blob service (a Node server, its own process) on loopback, keeping its data
    in ``folder``, with ``AZURE_STORAGE_CONNECTION_STRING`` pointing adlfs at it; yields its
    blob endpoint."""
    arguments = ["--blobHost", "127.0.0.1", "--blobPort", PORT, "--location", str(folder)]
    arguments += ["--silent", "--skipApiVersionCheck", "--loose"]
    with _node_server("Azurite", "azurite-blob", arguments) as (port, _):
        endpoint = f"http://127.0.0.1:{port}/devstoreaccount1"
        connection = (
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
            f"AccountKey={AZURITE_KEY};BlobEndpoint={endpoint};"
        )
        with _environment(AZURE_STORAGE_CONNECTION_STRING=connection):
            yield endpoint


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for(port: int, process: subprocess.Popen, name: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"{name} did not start on port {port}") from None
            time.sleep(0.1)


@contextmanager
def _environment(**values: str):
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
