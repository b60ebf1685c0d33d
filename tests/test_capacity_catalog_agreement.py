"""The capacity model's release switches and the engine catalog must tell the same story.

kvlint/capacity/vllm.py mirrors each vLLM release's accounting with named version thresholds;
rules/catalog/engines/vllm.yaml records the same changes as sourced facts (`defaults`). This
test pins them together for every release the catalog knows, so a correction on one side that
forgets the other fails here instead of silently disagreeing.
"""

from __future__ import annotations

import pytest

from kvlint.capacity import vllm as capacity_vllm
from kvlint.versions import parse_release
from kvlint.catalog import load_catalogs

CATALOG = load_catalogs(())
RELEASES = CATALOG.engines.known_versions("vllm")


def test_catalog_knows_the_releases_capacity_models() -> None:
    assert RELEASES[0] == "0.11.0"
    assert parse_release(RELEASES[-1]) == capacity_vllm.LATEST_KNOWN


@pytest.mark.parametrize("version", RELEASES)
def test_release_switches_agree(version: str) -> None:
    release = CATALOG.engines.release("vllm", version)
    at = parse_release(version)
    expected_log = (
        "max_concurrency_times_max_model_len"
        if at >= capacity_vllm.NEW_CAPACITY_LOG_FROM
        else "num_blocks_per_group_times_min_block"
    )
    assert release.default("kv_cache_size_log_formula") == expected_log
    expected_inflight = (
        "max_in_flight_tokens" if at >= capacity_vllm.INFLIGHT_BATCHES_FROM else "max_num_batched_tokens"
    )
    assert release.default("sliding_window_inflight_tokens") == expected_inflight
    if at >= capacity_vllm.SKIP_LAYERS_FROM:
        expected_align = "align_heterogeneous" if at >= capacity_vllm.SKIP_BLOCK_ALIGN_FROM else "page_unify"
        assert release.default("skip_layer_block_alignment") == expected_align
    # pool.py's fallback for an unknown release uses the same 0.20 boundary as the catalog.
    assert release.default("gpu_memory_utilization") == (0.92 if at >= (0, 20, 0) else 0.9)
    assert release.default("estimate_cudagraph_memory") is (at >= (0, 20, 0))
    assert release.feature("kv_cache_dtype_skip_layers").available is (at >= capacity_vllm.SKIP_LAYERS_FROM)
