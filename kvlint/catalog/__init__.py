"""The catalog: engines x releases x backends, GPUs and models, loaded from YAML data.

Built-in data lives in `rules/catalog/`; organisations add their own with `catalog-dir`. Every
entry carries its sources. The catalog is loaded once per process (see `load_catalog`).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Tuple


@lru_cache(maxsize=8)
def load_catalogs(extra_dirs: Tuple[str, ...] = ()):
    """GPUs, models and engines from the built-in catalog plus organisation `catalog-dir`s."""
    from kvlint.catalog.engines import load_engine_catalog
    from kvlint.catalog.gpus import load_gpu_catalog
    from kvlint.catalog.models import load_model_catalog
    from kvlint.resolve.fields import Catalogs
    from kvlint.resources import catalog_dir

    dirs = [catalog_dir(), *extra_dirs]
    return Catalogs(
        engines=load_engine_catalog([catalog_dir() / "engines", *extra_dirs]),
        gpus=load_gpu_catalog(dirs),
        models=load_model_catalog(dirs),
    )
