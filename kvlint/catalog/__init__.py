"""The catalog: engines x releases x backends, GPUs and models, loaded from YAML data.

Built-in data lives in `rules/catalog/`; organisations add their own with `catalog-dir`. Every
entry carries its sources. The catalogs are loaded once per process (`load_catalogs`).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Tuple

from kvlint.catalog.engines import EngineCatalog, load_engine_catalog
from kvlint.catalog.gpus import GpuCatalog, load_gpu_catalog
from kvlint.catalog.models import ModelCatalog, load_model_catalog
from kvlint.records import dataclass
from kvlint.resources import catalog_dir


@dataclass(frozen=True)
class Catalogs:
    """The engine, GPU and model catalogs a check reads."""

    engines: EngineCatalog
    gpus: GpuCatalog
    models: ModelCatalog


@lru_cache(maxsize=8)
def load_catalogs(extra_dirs: Tuple[str, ...] = ()) -> Catalogs:
    """GPUs, models and engines from the built-in catalog plus organisation `catalog-dir`s."""
    dirs = [catalog_dir(), *extra_dirs]
    return Catalogs(
        engines=load_engine_catalog([catalog_dir() / "engines", *extra_dirs]),
        gpus=load_gpu_catalog(dirs),
        models=load_model_catalog(dirs),
    )
