"""The catalog: engines x releases x backends, GPUs and models, loaded from YAML data.

Built-in data lives in `rules/catalog/`; organisations add their own with `catalog-dir`. Every
entry carries its sources. The catalog is loaded once per process (see `load_catalog`).
"""
