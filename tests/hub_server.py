"""A Hugging Face Hub stand-in on loopback for the tests of kvlint.hub.

It answers `GET /{org}/{name}/resolve/{revision}/config.json` the way huggingface.co does for a
small file (200 with the bytes, an ETag and X-Repo-Commit; 304 to a matching If-None-Match; 401
or 404 with X-Error-Code), from the real config.json files in tests/data/hub/ (ids.json says
which file each id gets). Special repositories act out what can go wrong: a gated one, a slow
one, a malformed one, an oversized one, and redirects. Every request is recorded (path and
headers) so a test can say what kvlint sent.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

HUB_DATA = Path(__file__).resolve().parent / "data" / "hub"
TOKEN = "hf_kvlint_test_token"  # what the gated repository accepts
GATED = "meta-llama/Llama-3.3-70B-Instruct"  # gated on huggingface.co too (Llama 3.3 community licence)
SLOW = "acme/slow-model"
MALFORMED = "acme/malformed-config"
OVERSIZED = "acme/oversized-config"
NOT_A_MODEL = "acme/not-a-transformers-config"
RENAMED = "acme/renamed-llama"  # 307 to GATED's path on the same host
ELSEWHERE = "acme/moved-elsewhere"  # 302 to the same path on another loopback name
DOWNGRADE = "acme/downgrade"  # 302 to a plain-http URL off loopback
PINNED_COMMIT = "0123456789abcdef0123456789abcdef01234567"


def load_ids() -> Dict[str, Any]:
    return json.loads((HUB_DATA / "ids.json").read_text(encoding="utf-8"))


def config_bytes(name: str) -> bytes:
    return (HUB_DATA / "configs" / name).read_bytes()


class _Handler(BaseHTTPRequestHandler):
    server: HubServer

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, body: bytes = b"", headers: Optional[Dict[str, str]] = None) -> None:
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body:
            self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        hub = self.server
        hub.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
        parts = self.path.split("/")
        # /org/name/resolve/revision/config.json
        if len(parts) != 6 or parts[3] != "resolve" or parts[5] != "config.json":
            self._send(404, b"not found", {"X-Error-Code": "EntryNotFound"})
            return
        repo, revision = f"{parts[1]}/{parts[2]}", parts[4]
        if repo == SLOW:
            time.sleep(hub.slow_seconds)
        if repo == RENAMED:
            self._send(307, headers={"Location": f"/{GATED}/resolve/{revision}/config.json"})
            return
        if repo == ELSEWHERE:
            self._send(302, headers={"Location": f"http://localhost:{hub.server_port}/{GATED}/resolve/{revision}/config.json"})
            return
        if repo == DOWNGRADE:
            self._send(302, headers={"Location": "http://example.com/config.json"})
            return
        if repo == GATED and hub.gated and self.headers.get("Authorization") != f"Bearer {TOKEN}":
            self._send(401, b'{"error":"Access to model is restricted."}', {"X-Error-Code": "GatedRepo"})
            return
        body = hub.body_for(repo, revision)
        if body is None:
            self._send(404, b'{"error":"Repository not found"}', {"X-Error-Code": "RepoNotFound"})
            return
        etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        if self.headers.get("If-None-Match") == etag:
            self._send(304, headers={"ETag": etag})
            return
        commit = PINNED_COMMIT if revision == PINNED_COMMIT else hashlib.sha1(body).hexdigest()
        self._send(200, body, {"ETag": etag, "X-Repo-Commit": commit, "Content-Type": "application/json"})


class HubServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        data = load_ids()
        self.files: Dict[str, str] = {entry["id"]: entry["config"] for entry in data["ids"]}
        self.files.update({entry["id"]: entry["config"] for entry in data["unsized"]})
        self.requests: List[Tuple[str, Dict[str, str]]] = []
        self.gated = False
        self.slow_seconds = 3.0
        self.revisions: Dict[Tuple[str, str], str] = {}  # (repo, revision) -> config file, besides main

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_port}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (kvlint's timeout on the slow hub) breaks the pipe mid-answer:
        expected here, and socketserver's default would print the traceback to sys.stderr, which
        may be the stream a later in-process CLI run in this worker is capturing."""
        kind = sys.exc_info()[0]
        if kind is not None and issubclass(kind, (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)

    def body_for(self, repo: str, revision: str) -> Optional[bytes]:
        if repo == MALFORMED:  # a real config.json cut off half way
            whole = config_bytes("Qwen--Qwen3-8B.json")
            return whole[: len(whole) // 2]
        if repo == OVERSIZED:  # a real config.json, padded past the size kvlint reads
            return config_bytes("Qwen--Qwen3-8B.json") + b" " * self.oversize_padding
        if repo == NOT_A_MODEL:  # a JSON object, but no transformers config (a tokenizer_config.json's keys)
            return b'{"add_bos_token": false, "model_max_length": 131072, "tokenizer_class": "Qwen2Tokenizer"}'
        if repo == SLOW:
            return config_bytes("Qwen--Qwen3-8B.json")
        if revision != "main":
            name = self.revisions.get((repo, revision))
            return config_bytes(name) if name else None
        name = self.files.get(repo)
        return config_bytes(name) if name else None

    oversize_padding = 0

    def paths(self) -> List[str]:
        return [path for path, _ in self.requests]


def start() -> HubServer:
    """The hub, serving on a thread. Its loop looks for shutdown() every 50 ms (socketserver's
    default, 0.5 s, was half a second of waiting at the end of every test)."""
    server = HubServer()
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server
