"""A model's config.json from the Hugging Face Hub, fetched when needed and cached on disk.

Resolve asks for it only when nothing closer says the model's geometry (`model.geometry`,
`model.config`, the local Hugging Face cache, kvlint's catalog): a model kvlint does not know by
name, written as users write it (`RedHatAI/Qwen3-8B-FP8-dynamic`, `unsloth/...`, `...-AWQ`).
Only `config.json` is ever requested: `{endpoint}/{org}/{name}/resolve/{revision}/config.json`,
the URL `huggingface_hub.hf_hub_url` builds (huggingface/huggingface_hub
src/huggingface_hub/file_download.py), with the endpoint from `HF_ENDPOINT`.

What keeps a CI gate quick and deterministic, and the fetch safe:

- the id is checked before any URL is built (`org/name`, the characters, length and `--`/`..`
  rules of huggingface_hub's `validate_repo_id`); the revision is percent-encoded whole;
- offline (`--offline`, `offline = true` in kvlint.toml, or `HF_HUB_OFFLINE=1`) nothing is
  requested: the disk cache alone answers;
- https only; plain http only to a loopback host (a local test hub). A redirect is followed (at
  most five) only to https, or from loopback to loopback, and the `Authorization` header
  (`HF_TOKEN`, else `HUGGING_FACE_HUB_TOKEN`) goes only to the endpoint's own scheme, host and
  port, never to a host a redirect names;
- one request has a few seconds (`TIMEOUT_S`) and at most `MAX_CONFIG_BYTES`; an endpoint that
  cannot be reached is not asked again in the same run;
- an answer is used only when it is a JSON object with `model_type` or `architectures` (a
  transformers config), and cached under kvlint's cache directory (`hub/`, one JSON file per
  endpoint, repository and revision, written atomically through kvlint.cachefiles). A revision
  that is a full commit hash never changes and is never asked again; any other (`main`) is
  revalidated after `TTL_S` with If-None-Match / If-Modified-Since, and when the Hub cannot be
  reached then, the cached copy is used as it is.

Nothing here raises: every failure is a `HubConfig` whose `error` says why, which KV203 quotes.
The network modules (urllib, ssl, http.client) and json are imported only when a fetch or a
cache entry needs them: a check that never asks the Hub never loads them.
"""

from __future__ import annotations

import os
import re
import time
from kvlint.records import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

from kvlint import __version__
from kvlint.cachefiles import private_directory, read_private, write_private
from kvlint.datacache import cache_dir

DEFAULT_ENDPOINT = "https://huggingface.co"
TIMEOUT_S = 5.0
MAX_CONFIG_BYTES = 8 * 1024 * 1024  # real ones reach megabytes: nvidia/MiniMax-M3-NVFP4 lists every layer in quantization_config (3 MB)
TTL_S = 24 * 3600
MAX_REDIRECTS = 5
MAX_REPO_ID = 96  # huggingface_hub validate_repo_id
_PART = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?\Z")
_REVISION = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_./-]{0,254}\Z")
_COMMIT = re.compile(r"[0-9a-f]{40}\Z")
_TRUE = frozenset({"1", "on", "yes", "true"})  # huggingface_hub constants._is_true
_CACHE_FORMAT = 1


@dataclass(frozen=True)
class HubConfig:
    """The Hub's answer for one model: the parsed config.json, or why there is none.

    `origin` is `fetched` (this run asked the Hub), `cached` (kvlint's hub cache, fresh or
    pinned) or `stale` (an expired cache entry used because the Hub could not be asked)."""

    repo: str
    revision: str
    url: str
    config: Optional[Dict[str, Any]] = None
    origin: str = ""
    commit: Optional[str] = None
    error: Optional[str] = None


_forced_offline = False
_MEMO: Dict[Tuple[str, str, str], HubConfig] = {}
_UNREACHABLE: Dict[str, str] = {}  # endpoint -> why, for the rest of the run


def set_offline(offline: bool) -> None:
    """The run's `--offline` / `offline = true`: no request to the Hub, the disk cache only."""
    global _forced_offline
    _forced_offline = bool(offline)


def forget() -> None:
    """Drop what this process remembers (answers, unreachable endpoints) and the offline switch."""
    set_offline(False)
    _MEMO.clear()
    _UNREACHABLE.clear()


def offline(environ: Optional[Mapping[str, str]] = None) -> bool:
    env = os.environ if environ is None else environ
    return _forced_offline or env.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE


def valid_repo_id(name: str) -> bool:
    """`org/name` with huggingface_hub's allowed characters (letters, digits, `_.-`, neither
    starting nor ending with `.` or `-`), no `--` or `..`, at most 96 characters."""
    if not isinstance(name, str) or len(name) > MAX_REPO_ID or "--" in name or ".." in name:
        return False
    parts = name.split("/")
    return len(parts) == 2 and all(_PART.match(part) for part in parts)


def valid_revision(revision: str) -> bool:
    """A branch, tag or commit: letters, digits, `_.-/`, no `..` or `//`, at most 255 characters."""
    return (isinstance(revision, str) and bool(_REVISION.match(revision)) and ".." not in revision
            and "//" not in revision and not revision.endswith("/"))


def endpoint(environ: Optional[Mapping[str, str]] = None) -> str:
    env = os.environ if environ is None else environ
    return (env.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).strip().rstrip("/")


def config_url(repo: str, revision: str = "main", environ: Optional[Mapping[str, str]] = None) -> str:
    """The URL of a repository's config.json (validate repo and revision first)."""
    from urllib.parse import quote  # on use

    return f"{endpoint(environ)}/{repo}/resolve/{quote(revision, safe='')}/config.json"


def hub_config(repo: str, revision: Optional[str] = None,
               environ: Optional[Mapping[str, str]] = None) -> Optional[HubConfig]:
    """The config.json of Hub model `repo` at `revision` (default main), from kvlint's hub cache
    or the Hub. None when `repo` is not a Hub id (a local path, an Ollama tag), or when offline
    and nothing is cached: then there is nothing to say about the Hub."""
    env = os.environ if environ is None else environ
    revision = revision or "main"
    if not valid_repo_id(repo):
        return None
    if not valid_revision(revision):
        return HubConfig(repo, revision, "", error=f"revision {revision[:80]!r} is not a Hub branch, tag or commit")
    base = endpoint(env)
    url = config_url(repo, revision, env)
    key = (base, repo, revision)
    if key in _MEMO:
        return _MEMO[key]
    if not _endpoint_allowed(base):
        return HubConfig(repo, revision, url, error=f"HF_ENDPOINT {base[:120]!r} is not https (plain http only to a "
                                                    "loopback host); not fetched")
    entry_path = _entry_path(base, repo, revision)
    entry = _read_entry(entry_path, url) if entry_path else None
    if entry is not None:
        fresh = _COMMIT.match(revision) is not None or time.time() - entry["fetched"] < TTL_S
        if fresh or offline(env):
            result = HubConfig(repo, revision, url, entry["config"], "cached", entry.get("commit"))
            _MEMO[key] = result
            return result
    elif offline(env):
        return None
    if base in _UNREACHABLE:
        result = _stale(entry, repo, revision, url) or HubConfig(repo, revision, url, error=_UNREACHABLE[base])
        _MEMO[key] = result
        return result
    result = _fetch(repo, revision, url, base, entry, entry_path, env)
    _MEMO[key] = result
    return result


def remembered(repo: str, revision: Optional[str] = None,
               environ: Optional[Mapping[str, str]] = None) -> Optional[HubConfig]:
    """What hub_config already answered for repo in this run, or None; never a request."""
    return _MEMO.get((endpoint(environ), repo, revision or "main"))


def _stale(entry: Optional[Dict[str, Any]], repo: str, revision: str, url: str) -> Optional[HubConfig]:
    if entry is None:
        return None
    return HubConfig(repo, revision, url, entry["config"], "stale", entry.get("commit"))


def _is_loopback(host: Optional[str]) -> bool:
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    import ipaddress  # on use

    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _endpoint_allowed(url: str) -> bool:
    from urllib.parse import urlsplit  # on use

    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return False
    return bool(host) and (parts.scheme == "https" or (parts.scheme == "http" and _is_loopback(host)))


def _origin(url: str) -> Tuple[str, str, Optional[int]]:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), parts.port


def token(environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    env = os.environ if environ is None else environ
    value = (env.get("HF_TOKEN") or env.get("HUGGING_FACE_HUB_TOKEN") or "").strip()
    return value or None


def _fetch(repo: str, revision: str, url: str, base: str, entry: Optional[Dict[str, Any]],
           entry_path: Optional[str], env: Mapping[str, str]) -> HubConfig:
    """One GET (and its redirects) of config.json; the cache entry updated on success."""
    secret = token(env)
    headers = {"User-Agent": f"kvlint/{__version__}", "Accept": "application/json"}
    if entry is not None and entry.get("etag"):
        headers["If-None-Match"] = entry["etag"]
    elif entry is not None and entry.get("last_modified"):
        headers["If-Modified-Since"] = entry["last_modified"]
    home = _origin(base)
    current = url
    deadline = time.monotonic() + TIMEOUT_S * 2
    for _ in range(MAX_REDIRECTS + 1):
        send = dict(headers)
        if secret and _origin(current) == home:  # never to another host a redirect names
            send["Authorization"] = f"Bearer {secret}"
        status, answer, body, problem = _request(current, send, deadline)
        if problem is not None:
            if problem.startswith("cannot connect") or problem.startswith("no answer"):
                _UNREACHABLE[base] = f"cannot fetch {url}: {problem}"
            return _stale(entry, repo, revision, url) or HubConfig(repo, revision, url,
                                                                   error=f"cannot fetch {url}: {problem}")
        if status in (301, 302, 303, 307, 308):
            location = answer.get("location")
            if not location:
                return HubConfig(repo, revision, url, error=f"cannot fetch {url}: HTTP {status} without a Location")
            from urllib.parse import urljoin

            target = urljoin(current, location)
            scheme, host, _port = _origin(target)
            allowed = scheme == "https" or (scheme == "http" and _is_loopback(host) and _is_loopback(_origin(current)[1]))
            if not allowed:
                return HubConfig(repo, revision, url, error=f"cannot fetch {url}: redirected to {target[:200]}, "
                                                            "which is not https; not followed")
            current = target
            continue
        if status == 304 and entry is not None:
            entry["fetched"] = time.time()
            _write_entry(entry_path, entry)
            return HubConfig(repo, revision, url, entry["config"], "cached", entry.get("commit"))
        if status != 200:
            return _stale(entry, repo, revision, url) or HubConfig(
                repo, revision, url, error=f"cannot fetch {url}: {_status_reason(status, answer, secret)}")
        config, problem = parse_config(body)
        if config is None:
            return HubConfig(repo, revision, url, error=f"cannot use {url}: {problem}")
        commit = answer.get("x-repo-commit")
        commit = commit if commit and _COMMIT.match(commit) else None
        record = {"format": _CACHE_FORMAT, "url": url, "fetched": time.time(), "etag": answer.get("etag"),
                  "last_modified": answer.get("last-modified"), "commit": commit,
                  "body": body.decode("utf-8")}
        _write_entry(entry_path, record)
        return HubConfig(repo, revision, url, config, "fetched", commit)
    return HubConfig(repo, revision, url, error=f"cannot fetch {url}: more than {MAX_REDIRECTS} redirects")


def _status_reason(status: int, answer: Mapping[str, str], secret: Optional[str]) -> str:
    code = answer.get("x-error-code", "")
    if status in (401, 403) and code != "RepoNotFound":
        if secret:
            return (f"HTTP {status}: the token in HF_TOKEN has no access to this gated or private repository "
                    "(accept its licence on the model page with that account)")
        return (f"HTTP {status}: a gated or private repository, or no such repository "
                "(set HF_TOKEN to a token of an account with access)")
    if status == 404 or code in ("RepoNotFound", "EntryNotFound", "RevisionNotFound"):
        return f"HTTP {status}: no such repository, revision or config.json on the Hub"
    if status == 429:
        return "HTTP 429: rate-limited by the Hub (set HF_TOKEN, or try again later)"
    return f"HTTP {status}"


_TLS: List[Any] = [None]  # the ssl.SSLContext _request builds on its first https fetch


def _request(url: str, headers: Mapping[str, str], deadline: float
             ) -> Tuple[int, Dict[str, str], bytes, Optional[str]]:
    """(status, lower-cased headers, body, problem): one GET, no redirect followed, the body
    read only for a 200 and only up to MAX_CONFIG_BYTES, within the deadline."""
    # Imported here: only a fetch needs the network stack (start-up time of every other run).
    import http.client
    import socket
    import ssl
    import urllib.error
    import urllib.request

    class _NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:  # hub._fetch follows them itself
            return None

    handlers: list = [_NoRedirect()]
    if url.startswith("https:"):  # a TLS context loads the system's CA store (~25 ms): once per process
        if _TLS[0] is None:
            _TLS[0] = ssl.create_default_context()
        handlers.append(urllib.request.HTTPSHandler(context=_TLS[0]))
    if _is_loopback(_origin(url)[1]):
        handlers.append(urllib.request.ProxyHandler({}))  # a local hub is never reached through a proxy
    opener = urllib.request.build_opener(*handlers)
    request = urllib.request.Request(url, headers=dict(headers), method="GET")
    try:
        response = opener.open(request, timeout=TIMEOUT_S)
    except urllib.error.HTTPError as error:
        answer = {k.lower(): v for k, v in (error.headers or {}).items()}
        error.close()
        return error.code, answer, b"", None
    except (socket.timeout, TimeoutError):
        return 0, {}, b"", f"no answer within {TIMEOUT_S:g} s"
    except urllib.error.URLError as error:
        reason = error.reason
        if isinstance(reason, (socket.timeout, TimeoutError)):
            return 0, {}, b"", f"no answer within {TIMEOUT_S:g} s"
        return 0, {}, b"", f"cannot connect ({' '.join(str(getattr(reason, 'strerror', None) or reason).split())[:200]})"
    except (OSError, ValueError, http.client.HTTPException) as error:  # ssl.SSLError is an OSError
        return 0, {}, b"", f"cannot connect ({type(error).__name__}: {' '.join(str(error).split())[:200]})"
    with response:
        answer = {k.lower(): v for k, v in response.headers.items()}
        status = response.status
        if status != 200:
            return status, answer, b"", None
        length = answer.get("content-length", "")
        if length.isdigit() and int(length) > MAX_CONFIG_BYTES:
            return 0, answer, b"", f"config.json is {int(length):,} bytes, more than the {MAX_CONFIG_BYTES:,} kvlint reads"
        chunks = []
        size = 0
        try:
            while True:
                if time.monotonic() > deadline:
                    return 0, answer, b"", f"no answer within {TIMEOUT_S:g} s"
                chunk = response.read1(65536)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
                if size > MAX_CONFIG_BYTES:
                    return 0, answer, b"", f"config.json is more than the {MAX_CONFIG_BYTES:,} bytes kvlint reads"
        except (socket.timeout, TimeoutError):
            return 0, answer, b"", f"no answer within {TIMEOUT_S:g} s"
        except (OSError, ValueError, http.client.HTTPException) as error:  # IncompleteRead is neither
            return 0, answer, b"", f"cannot connect (the answer broke off: {type(error).__name__})"
    if length.isdigit() and size != int(length):
        return 0, answer, b"", f"cannot connect (the answer broke off after {size:,} of {int(length):,} bytes)"
    return 200, answer, b"".join(chunks), None


def parse_config(body: bytes) -> Tuple[Optional[Dict[str, Any]], str]:
    """(config, "") for a transformers config.json, else (None, why)."""
    import json  # on use

    if len(body) > MAX_CONFIG_BYTES:
        return None, f"more than the {MAX_CONFIG_BYTES:,} bytes kvlint reads"
    try:
        config = json.loads(body.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        return None, f"not valid JSON: {str(error)[:200]}"
    except RecursionError:
        return None, "not valid JSON: nested too deeply"
    if not isinstance(config, dict):
        return None, f"config.json holds a JSON {type(config).__name__}, not an object"
    if not isinstance(config.get("model_type"), str) and not isinstance(config.get("architectures"), list):
        return None, "not a transformers config.json (it has neither model_type nor architectures)"
    return config, ""


# --- the disk cache ----------------------------------------------------------------------------


def hub_cache_dir() -> Optional[str]:
    """kvlint's hub cache (`<kvlint cache>/hub`), or None when caching is off or the directory
    cannot be used (see kvlint.cachefiles.private_directory)."""
    root = cache_dir()
    if root is None:
        return None
    directory = os.path.join(str(root), "hub")
    return directory if private_directory(directory) else None


def _entry_path(base: str, repo: str, revision: str) -> Optional[str]:
    directory = hub_cache_dir()
    if directory is None:
        return None
    import hashlib  # on use

    digest = hashlib.sha256(f"{base}\0{repo}\0{revision}".encode()).hexdigest()[:40]
    return os.path.join(directory, f"{repo.replace('/', '--')}.{digest}.json")


def _read_entry(path: str, url: str) -> Optional[Dict[str, Any]]:
    """A cache entry for url, or None: absent, foreign, damaged, or not a transformers config."""
    raw = read_private(path, MAX_CONFIG_BYTES * 8 + 65536)
    if raw is None:
        return None
    import json

    try:
        record = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if (not isinstance(record, dict) or record.get("format") != _CACHE_FORMAT or record.get("url") != url
            or not isinstance(record.get("body"), str) or type(record.get("fetched")) not in (int, float)):
        return None
    config, _ = parse_config(record["body"].encode("utf-8"))
    if config is None:
        return None
    record["config"] = config
    return record


def _write_entry(path: Optional[str], record: Dict[str, Any]) -> None:
    if path is None:
        return
    import json

    stored = {key: value for key, value in record.items() if key != "config"}
    write_private(path, json.dumps(stored, sort_keys=True).encode("utf-8"))
