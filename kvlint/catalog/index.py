"""Id-and-alias lookup shared by the GPU and model catalogs."""

from __future__ import annotations

from typing import Callable, Dict, Iterable, Tuple, TypeVar

Entry = TypeVar("Entry")


def build_alias_index(
    entries: Iterable[Entry], normalize: Callable[[str], str]
) -> Tuple[Dict[str, Entry], Dict[str, str]]:
    """(entries by id, normalized id or alias -> id).

    A later entry with the same id (from a later catalog directory) replaces the earlier one; the
    replaced entry's aliases keep pointing at the id, so an override need not repeat them. Ids
    are indexed before aliases, so an alias never shadows another entry's id.
    """
    by_id: Dict[str, Entry] = {}
    inherited: Dict[str, Tuple[str, ...]] = {}
    for entry in entries:
        previous = by_id.get(entry.id)  # type: ignore[attr-defined]
        if previous is not None:
            inherited[entry.id] = inherited.get(entry.id, ()) + previous.aliases  # type: ignore[attr-defined]
        by_id[entry.id] = entry  # type: ignore[attr-defined]
    index: Dict[str, str] = {}
    for entry_id in by_id:
        index[normalize(entry_id)] = entry_id
    for entry_id, entry in by_id.items():
        for alias in (*entry.aliases, *inherited.get(entry_id, ())):  # type: ignore[attr-defined]
            index.setdefault(normalize(alias), entry_id)
    return by_id, index
