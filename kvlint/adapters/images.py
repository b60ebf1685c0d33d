"""Container image references → serving engine and engine release.

Data tables plus one parser. An image that names an engine but not a release (`:latest`, a
digest, an LMCache or llm-d build) yields the engine with `release=None` and a reason, so the
caller can list the release as missing instead of guessing.
"""

from __future__ import annotations

import re
from typing import Optional, Tuple

from kvlint.records import dataclass

# Moving tags: the image changes under the same name, so the release cannot be read from it.
_FLOATING = frozenset({"latest", "nightly", "main", "dev", "stable", "edge", "master"})

_VERSION_IN_TAG = re.compile(
    # at most 18 digits a component (docs/security.md): a longer one is no release, and int() of
    # a 5,000-digit component raises ValueError further on
    r"^v?(?P<v>\d{1,18}\.\d{1,18}(?:\.\d{1,18}){0,2}(?:(?:rc|a|b|\.post|\.dev|post|dev)\d{0,18})?)(?:$|[-_+])"
)
# rocm/vllm:rocm6.4.1_vllm_0.9.0.1_20250605 → 0.9.0.1
_ROCM_VLLM = re.compile(r"_vllm_(?P<v>\d{1,18}(?:\.\d{1,18}){1,3})(?!\d)")


@dataclass(frozen=True)
class ImageRef:
    """A container image reference split into registry, repository, tag and digest."""

    raw: str
    registry: str  # "" for Docker Hub
    repository: str  # "vllm/vllm-openai", "nvidia/tensorrt-llm/release"
    tag: Optional[str]
    digest: Optional[str]


@dataclass(frozen=True)
class ImageEngine:
    """The engine and release an image reference implies, or why its release is unknown."""

    engine: str  # vllm | sglang | tensorrt-llm | llama.cpp | ollama
    release: Optional[str]
    why_unknown: str  # when release is None: why, and how to supply it
    floating: bool  # the tag moves (`latest`) or is absent: an unpinned image
    source: str  # where the image→release rule comes from
    backend: Optional[str] = None  # llama.cpp / Ollama: the ggml backend the image was built for
    serves: bool = False  # the image's default command starts the server (no command needed)


def parse_image(raw: str) -> ImageRef:
    text = raw.strip()
    digest = None
    if "@" in text:
        text, digest = text.split("@", 1)
    registry = ""
    first, _, rest = text.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        registry, text = first, rest
    tag = None
    last_slash = text.rfind("/")
    colon = text.rfind(":")
    if colon > last_slash:
        text, tag = text[:colon], text[colon + 1:]
    if registry in ("docker.io", "index.docker.io", "registry-1.docker.io"):
        registry = ""
    if not registry and text.startswith("library/"):
        text = text[len("library/"):]
    return ImageRef(raw, registry, text, tag or None, digest)


def _tag_version(tag: str) -> Optional[str]:
    match = _VERSION_IN_TAG.match(tag)
    return match.group("v") if match else None


# KServe's Hugging Face server pins a vLLM release per KServe release: the image installs
# `vllm==${VLLM_VERSION}` last (python/huggingface_server.Dockerfile `ARG VLLM_VERSION` at each
# tag, https://github.com/kserve/kserve/blob/v0.15.0/python/huggingface_server.Dockerfile; at
# v0.15.0 that pip install of 0.8.1 comes after poetry installed the lock's 0.8.2, so 0.8.1 runs).
_KSERVE_VLLM = {
    "0.13.0": "0.4.2", "0.13.1": "0.4.3", "0.14.0": "0.6.1.post2", "0.14.1": "0.6.1.post2",
    "0.15.0": "0.8.1", "0.15.1": "0.8.5", "0.15.2": "0.8.5", "0.16.0": "0.9.2", "0.17.0": "0.15.1",
    "0.17.1": "0.15.1", "0.18.0": "0.19.0", "0.18.1": "0.19.0", "0.19.0": "0.20.0",
    # also https://github.com/kserve/kserve/blob/v0.20.0/python/kserve/pyproject.toml (llm extra)
    "0.20.0": "0.24.0",
}


def engine_from_image(raw: str) -> Optional[ImageEngine]:
    """The engine (and release, when the tag pins one) that an image runs, or None."""
    ref = parse_image(raw)
    repo = ref.repository.lower()
    registry = ref.registry.lower()
    tag = ref.tag or ""
    floating = not tag or tag.lower() in _FLOATING

    def pinned(engine: str, source: str, version: Optional[str], unknown_why: str) -> ImageEngine:
        if version:
            return ImageEngine(engine, version, "", False, source)
        if floating:
            why = (
                f"image {raw!r} is not pinned to a release ({'no tag' if not tag else ':' + tag}); "
                "pin a versioned tag or give the release explicitly"
            )
            if ref.digest:
                why = f"image {raw!r} is pinned by digest, which does not name the release"
            return ImageEngine(engine, None, why, not ref.digest, source)
        return ImageEngine(engine, None, unknown_why, False, source)

    name = repo.rsplit("/", 1)[-1]
    # vLLM's official images: https://hub.docker.com/r/vllm/vllm-openai (tags v<release>[-suffix])
    if repo in ("vllm/vllm-openai", "vllm/vllm-openai-rocm", "vllm/vllm-tpu") or (
        repo.endswith("/vllm-openai") and not repo.startswith("lmcache/")
    ) and registry in ("", "public.ecr.aws", "ghcr.io"):
        return pinned(
            "vllm", "https://hub.docker.com/r/vllm/vllm-openai", _tag_version(tag),
            f"tag {tag!r} of {raw!r} does not name a vLLM release",
        )
    if repo in ("rocm/vllm", "rocm/vllm-dev"):
        match = _ROCM_VLLM.search(tag)
        return pinned(
            "vllm", "https://hub.docker.com/r/rocm/vllm", match.group("v") if match else None,
            f"tag {tag!r} of {raw!r} does not carry the `_vllm_X.Y.Z` part",
        )
    if repo == "lmcache/vllm-openai":
        return pinned(
            "vllm", "https://hub.docker.com/r/lmcache/vllm-openai", None,
            f"{raw!r} is an LMCache build; its tag is LMCache's release, not vLLM's",
        )
    if "llm-d" in repo:
        return pinned(
            "vllm", "https://github.com/llm-d/llm-d", None,
            f"{raw!r} is an llm-d build whose vLLM release is not in its tag",
        )
    if repo == "kserve/huggingfaceserver":
        version = _tag_version(tag)
        return pinned(
            "vllm", "https://github.com/kserve/kserve (python/huggingface_server.Dockerfile VLLM_VERSION)",
            _KSERVE_VLLM.get(version or ""),
            f"{raw!r} is KServe {tag}, whose pinned vLLM release kvlint does not know",
        )
    # SGLang: https://hub.docker.com/r/lmsysorg/sglang (tags v<release>-cu<ver>[-arch])
    if repo == "lmsysorg/sglang" or name == "sglang":
        return pinned(
            "sglang", "https://hub.docker.com/r/lmsysorg/sglang", _tag_version(tag),
            f"tag {tag!r} of {raw!r} does not name an SGLang release",
        )
    # TensorRT-LLM release containers: tag = release,
    # https://catalog.ngc.nvidia.com/orgs/nvidia/teams/tensorrt-llm/containers/release
    if repo in ("nvidia/tensorrt-llm/release", "nvidia/tensorrt-llm/devel") or repo.endswith("tensorrt-llm/release"):
        return pinned(
            "tensorrt-llm", "https://catalog.ngc.nvidia.com/orgs/nvidia/teams/tensorrt-llm/containers/release",
            _tag_version(tag), f"tag {tag!r} of {raw!r} does not name a TensorRT-LLM release",
        )
    ggml = _ggml_image(raw, ref, repo, tag, floating)
    if ggml is not None:
        return ggml
    if repo == "nvidia/tritonserver":
        # YY.MM-trtllm-python-py3 / YY.MM-vllm-python-py3: the engine release needs NGC's
        # framework support matrix, which kvlint does not ship
        engine = "tensorrt-llm" if "trtllm" in tag else "vllm" if "vllm" in tag else None
        if engine is None:
            return None
        return pinned(
            engine, "https://docs.nvidia.com/deeplearning/frameworks/support-matrix/index.html", None,
            f"{raw!r} is a Triton container; its {engine} release is listed only in NGC's support matrix",
        )
    return None


# ghcr.io/ggml-org/llama.cpp:<kind>[-<variant>][-b<build>], kind full | light | server, variant
# the backend (no variant = the CPU build): .github/workflows/docker.yml and docs/docker.md at
# https://github.com/ggml-org/llama.cpp/blob/0c1e57098bba43ac29e6e3b677cdceebdd22334f/docs/docker.md
_LLAMA_TAG = re.compile(r"^(?P<kind>full|light|server)(?:-(?!b\d+$)(?P<variant>[a-z][a-z0-9]*))?(?:-b(?P<build>\d+))?$")
_LLAMA_BACKENDS = {
    None: "cpu", "cpu": "cpu", "s390x": "cpu", "cuda": "cuda", "cuda12": "cuda", "cuda13": "cuda",
    "rocm": "hip", "musa": "musa", "intel": "sycl", "vulkan": "vulkan",
}
# ollama/ollama:<version>[-rocm]; `rocm` alone is a moving tag
# (https://github.com/ollama/ollama/blob/v0.5.0/docs/docker.md)
_OLLAMA_TAG = re.compile(r"^v?(?P<v>\d+\.\d+(?:\.\d+)?(?:-rc\d+)?)(?:-(?P<variant>rocm))?$")


def _ggml_image(raw: str, ref: ImageRef, repo: str, tag: str, floating: bool) -> Optional[ImageEngine]:
    """llama.cpp's and Ollama's images: release, backend, and whether they start the server."""
    if repo in ("ggml-org/llama.cpp", "ggerganov/llama.cpp"):
        source = "https://github.com/ggml-org/llama.cpp/blob/0c1e57098bba43ac29e6e3b677cdceebdd22334f/docs/docker.md"
        match = _LLAMA_TAG.match(tag)
        backend = _LLAMA_BACKENDS.get(match.group("variant")) if match else None
        serves = bool(match) and match.group("kind") == "server"
        if match and match.group("build"):
            return ImageEngine("llama.cpp", f"b{match.group('build')}", "", False, source, backend, serves)
        if match:
            why = (f"image {raw!r} is not pinned to a llama.cpp build (:{tag} moves with every release); "
                   f"pin a tag such as :{tag}-b4747")
            return ImageEngine("llama.cpp", None, why, not ref.digest, source, backend, serves)
        why = f"tag {tag!r} of {raw!r} does not name a llama.cpp build (bNNNN)"
        if floating:
            why = f"image {raw!r} is not pinned to a llama.cpp build ({':' + tag if tag else 'no tag'})"
        return ImageEngine("llama.cpp", None, why, floating and not ref.digest, source, None, False)
    if repo == "ollama/ollama":
        source = "https://hub.docker.com/r/ollama/ollama"
        match = _OLLAMA_TAG.match(tag)
        if match:
            backend = "hip" if match.group("variant") else None
            return ImageEngine("ollama", match.group("v"), "", False, source, backend, True)
        moving = floating or tag.lower() == "rocm"
        why = (f"image {raw!r} is not pinned to an Ollama release ({':' + tag if tag else 'no tag'}); "
               "pin a versioned tag such as ollama/ollama:0.13.3")
        if not moving:
            why = f"tag {tag!r} of {raw!r} does not name an Ollama release"
        if ref.digest:
            why = f"image {raw!r} is pinned by digest, which does not name the release"
        return ImageEngine("ollama", None, why, moving and not ref.digest, source,
                           "hip" if tag.lower() == "rocm" else None, True)
    return None


def split_release(raw: str) -> Tuple[Optional[str], str]:
    """(`release`, `rest`) of a version-looking annotation value such as "v0.19.1"."""
    version = _tag_version(raw.strip())
    return version, raw
