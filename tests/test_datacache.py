"""The parsed-data cache for kvlint's own rule and catalog files."""

from __future__ import annotations

import os

import yaml

from kvlint.datacache import load_cached, load_cached_group

PARSE = yaml.safe_load


def test_cache_hit_returns_stored_data_and_a_changed_file_is_parsed_again(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("KVLINT_CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "rule.yaml"
    source.write_text("code: KV999\n")
    calls = []

    def counting(text):
        calls.append(text)
        return PARSE(text)

    assert load_cached(source, counting) == {"code": "KV999"}
    assert load_cached(source, counting) == {"code": "KV999"}
    assert len(calls) == 1  # the second read came from the cache
    source.write_text("code: KV998\n")
    os.utime(source, ns=(1, 1))  # a different mtime even on coarse clocks
    assert load_cached(source, counting) == {"code": "KV998"}
    assert len(calls) == 2


def test_group_cache_invalidates_when_any_member_changes(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("KVLINT_CACHE_DIR", str(tmp_path / "cache"))
    files = [tmp_path / f"{name}.yaml" for name in "ab"]
    for index, path in enumerate(files):
        path.write_text(f"n: {index}\n")
    assert load_cached_group(files, PARSE) == [{"n": 0}, {"n": 1}]
    files[1].write_text("n: 7\n")
    os.utime(files[1], ns=(2, 2))
    assert load_cached_group(files, PARSE) == [{"n": 0}, {"n": 7}]


def test_unusable_cache_directory_and_opt_out_still_parse(tmp_path, monkeypatch) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setenv("KVLINT_CACHE_DIR", str(blocker / "cache"))
    source = tmp_path / "x.yaml"
    source.write_text("a: 1\n")
    assert load_cached(source, PARSE) == {"a": 1}
    monkeypatch.setenv("KVLINT_NO_CACHE", "1")
    assert load_cached(source, PARSE) == {"a": 1}
