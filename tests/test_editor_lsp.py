"""The editor path of docs/editors.md, end to end: yaml-language-server, driven over stdio as an
editor would (LSP initialize, initialized, didOpen), reads the `# yaml-language-server: $schema=`
modeline of a manifest, loads schemas/manifest.v1.json from disk and publishes a diagnostic for
a value outside an enum.

Needs node and the npm package `yaml-language-server`: `npm install yaml-language-server` and
put its `node_modules/.bin` on PATH, or set KVLINT_YAML_LANGUAGE_SERVER to the executable. The
test skips, with that reason, when they are missing.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from conftest import REPO_ROOT, VALID_MANIFEST

pytestmark = pytest.mark.slow

TIMEOUT_S = 60


def _server() -> List[str]:
    configured = os.environ.get("KVLINT_YAML_LANGUAGE_SERVER")
    found = configured or shutil.which("yaml-language-server")
    if not found:
        pytest.skip("yaml-language-server not installed (npm install yaml-language-server; "
                    "or set KVLINT_YAML_LANGUAGE_SERVER)")
    if shutil.which("node") is None:
        pytest.skip("node not installed: yaml-language-server needs it")
    return [found, "--stdio"]


class LspClient:
    """The smallest LSP client: Content-Length framing, requests, notifications, and answers to
    the server's own requests (configuration, capability registration)."""

    def __init__(self, command: List[str], cwd: Path):
        self.process = subprocess.Popen(command, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL)
        self.messages: queue.Queue[Dict[str, Any]] = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            if length is None:
                continue
            self.messages.put(json.loads(stream.read(length)))

    def _send(self, message: Dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def notify(self, method: str, params: Any) -> None:
        self._send({"method": method, "params": params})

    def request(self, method: str, params: Any) -> Any:
        self.next_id += 1
        self._send({"id": self.next_id, "method": method, "params": params})
        return self.wait(lambda m: m.get("id") == self.next_id and "method" not in m)

    def wait(self, wanted) -> Dict[str, Any]:
        while True:
            message = self.messages.get(timeout=TIMEOUT_S)
            if "method" in message and "id" in message:  # a request from the server
                result: Any = None
                if message["method"] == "workspace/configuration":
                    result = [self.settings(item.get("section")) for item in message["params"]["items"]]
                self._send({"id": message["id"], "result": result})
                continue
            if wanted(message):
                return message

    @staticmethod
    def settings(section: Optional[str]) -> Any:
        yaml = {"validate": True, "hover": True, "completion": True, "schemaStore": {"enable": False}}
        if section == "yaml":
            return yaml
        if section is None:
            return {"yaml": yaml}
        return None

    def close(self) -> None:
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            self.process.wait(timeout=10)
        except Exception:
            pass
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()


def _diagnostics_for(tmp_path: Path, text: str) -> List[Dict[str, Any]]:
    shutil.copy(REPO_ROOT / "schemas" / "manifest.v1.json", tmp_path / "manifest.v1.json")
    manifest = tmp_path / "llama8b.yaml"
    manifest.write_text(text, encoding="utf-8")
    client = LspClient(_server(), tmp_path)
    try:
        client.request("initialize", {
            "processId": os.getpid(),
            "rootUri": tmp_path.as_uri(),
            "capabilities": {"workspace": {"configuration": True},
                             "textDocument": {"publishDiagnostics": {}}},
        })
        client.notify("initialized", {})
        client.notify("workspace/didChangeConfiguration", {"settings": LspClient.settings(None)})
        uri = manifest.as_uri()
        client.notify("textDocument/didOpen", {
            "textDocument": {"uri": uri, "languageId": "yaml", "version": 1, "text": text}})
        published = client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                                and m["params"]["uri"] == uri)
        return published["params"]["diagnostics"]
    finally:
        client.close()


MODELINE = "# yaml-language-server: $schema=./manifest.v1.json\n"


def test_yaml_language_server_flags_a_value_outside_an_enum(tmp_path):
    text = MODELINE + VALID_MANIFEST.replace("name: vllm", "name: vlm")
    diagnostics = _diagnostics_for(tmp_path, text)
    assert diagnostics, "no diagnostic for engine.name: vlm"
    line = text.splitlines().index("  name: vlm")
    at_value = [d for d in diagnostics if d["range"]["start"]["line"] == line]
    assert at_value, diagnostics
    assert "vllm" in at_value[0]["message"], at_value  # the message lists the allowed values


def test_yaml_language_server_accepts_the_valid_manifest(tmp_path):
    assert _diagnostics_for(tmp_path, MODELINE + VALID_MANIFEST) == []
