"""The resolve stage: a manifest plus the catalog becomes a `Deployment` and a facts document.

Resolve reads the manifest defensively (a document that failed the schema still resolves as far
as it can: wrong types read as unknown), looks everything up in the catalog, and computes the
predicates the rules test ("does this backend accept this dtype on this GPU at this release?").
Rules never call the catalog; they read the facts document built here, whose every path is
described in schemas/facts.json.

- `fields`: typed, defensive reads of manifest fields and the `Deployment` pieces they give;
- `engine_view`: what the engine catalog says about this release, GPU and model;
- `builder`: the whole resolve, writing the facts document.
"""

from kvlint.resolve.builder import Resolution, resolve

__all__ = ["Resolution", "resolve"]
