"""Check the distributions `python -m build` wrote before they are published.

    python tools/check_dist.py dist/ [--tag v0.1.0]

What `twine check` does not: the wheel carries the schemas and every rule file, the command
`kvlint` and the import name `kvlint`, the license, nothing of tests/ or tools/ and no bytecode;
the wheel and the sdist agree on name and version, which is kvlint/__init__.py's `__version__`;
the long description (README.md) has no relative link, which would break on the package page;
with --tag, the tag is `v<version>` and CHANGELOG.md has a dated section for that version.

Standard library only (the release workflow runs it before installing anything else). Prints one
line per problem and exits 1 when there is any, 0 otherwise, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import email.parser
import re
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import List, Optional

REPO = Path(__file__).resolve().parent.parent
DIST_NAME = "kvcache-lint"
FILE_STEM = "kvcache_lint"
# A Markdown link or image whose target is neither absolute (scheme:) nor an anchor.
RELATIVE_LINK = re.compile(r"\]\((?![a-z][a-z0-9+.-]*:|#)([^)\s]+)\)")


def source_version() -> str:
    text = (REPO / "kvlint" / "__init__.py").read_text(encoding="utf-8")
    match = re.search(r'^__version__ = "([^"]+)"$', text, flags=re.M)
    if match is None:
        raise SystemExit("tools/check_dist.py: no __version__ in kvlint/__init__.py")
    return match.group(1)


def relative_links(markdown: str) -> List[str]:
    return RELATIVE_LINK.findall(markdown)


def changelog_has_release(version: str, changelog: str) -> bool:
    return re.search(rf"^## \[{re.escape(version)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, flags=re.M) is not None


def _metadata(text: str):
    return email.parser.Parser().parsestr(text)


def check_wheel(path: Path, version: str) -> List[str]:
    problems: List[str] = []
    with zipfile.ZipFile(path) as wheel:
        names = wheel.namelist()
        dist_info = f"{FILE_STEM}-{version}.dist-info"
        try:
            meta = _metadata(wheel.read(f"{dist_info}/METADATA").decode("utf-8"))
            entry_points = wheel.read(f"{dist_info}/entry_points.txt").decode("utf-8")
        except KeyError as exc:
            return [f"{path.name}: {exc.args[0]}"]
        init = wheel.read("kvlint/__init__.py").decode("utf-8") if "kvlint/__init__.py" in names else ""
    if meta["Name"] != DIST_NAME:
        problems.append(f"{path.name}: Name is {meta['Name']!r}, not {DIST_NAME!r}")
    if meta["Version"] != version:
        problems.append(f"{path.name}: Version is {meta['Version']!r}, kvlint/__init__.py says {version!r}")
    if f'__version__ = "{version}"' not in init:
        problems.append(f"{path.name}: kvlint/__init__.py in the wheel does not carry __version__ {version!r}")
    if not re.search(r"^kvlint = kvlint\.cli:run$", entry_points, flags=re.M):
        problems.append(f"{path.name}: no console script `kvlint = kvlint.cli:run`")
    for field in ("Summary", "Requires-Python", "License"):
        if not meta[field]:
            problems.append(f"{path.name}: metadata has no {field}")
    if not meta.get_all("Project-URL"):
        problems.append(f"{path.name}: metadata has no Project-URL")
    if not meta.get_all("Classifier"):
        problems.append(f"{path.name}: metadata has no Classifier")
    if meta["Description-Content-Type"] != "text/markdown":
        problems.append(f"{path.name}: Description-Content-Type is {meta['Description-Content-Type']!r}")
    description = meta.get_payload() or ""
    if "# kvlint" not in description:
        problems.append(f"{path.name}: the long description is not README.md")
    for link in relative_links(description):
        problems.append(f"{path.name}: README link {link!r} is relative: it breaks on the package page")
    if "kvlint/_data/schemas/manifest.v1.json" not in names:
        problems.append(f"{path.name}: kvlint/_data/schemas/manifest.v1.json is missing")
    shipped = {n.rsplit("/", 1)[1] for n in names if re.match(r"kvlint/_data/rules/KV[^/]*\.yaml$", n)}
    expected = {p.name for p in (REPO / "rules").glob("KV*.yaml")}
    if shipped != expected:
        problems.append(f"{path.name}: rule files differ from rules/: missing {sorted(expected - shipped)}, "
                        f"extra {sorted(shipped - expected)}")
    if not any(re.match(rf"{re.escape(dist_info)}/(licenses/)?LICEN[CS]E", n) for n in names):
        problems.append(f"{path.name}: no LICENSE in {dist_info}")
    stray = sorted({n.split("/", 1)[0] for n in names} - {"kvlint", dist_info})
    if stray:
        problems.append(f"{path.name}: unexpected top-level entries {stray}")
    bytecode = [n for n in names if n.endswith((".pyc", ".pyo")) or "/__pycache__/" in n]
    if bytecode:
        problems.append(f"{path.name}: bytecode in the wheel ({bytecode[0]}, ...)")
    return problems


def check_sdist(path: Path, version: str) -> List[str]:
    problems: List[str] = []
    root = f"{FILE_STEM}-{version}"
    with tarfile.open(path) as sdist:
        names = set(sdist.getnames())
        member = sdist.extractfile(f"{root}/PKG-INFO") if f"{root}/PKG-INFO" in names else None
        meta = _metadata(member.read().decode("utf-8")) if member is not None else None
    if meta is None:
        return [f"{path.name}: no {root}/PKG-INFO"]
    if meta["Name"] != DIST_NAME or meta["Version"] != version:
        problems.append(f"{path.name}: PKG-INFO says {meta['Name']} {meta['Version']}, not {DIST_NAME} {version}")
    for needed in ("pyproject.toml", "README.md", "CHANGELOG.md", "LICENSE", "kvlint/__init__.py",
                   "schemas/manifest.v1.json"):
        if f"{root}/{needed}" not in names:
            problems.append(f"{path.name}: {needed} is missing")
    return problems


def check(dist: Path, tag: Optional[str] = None) -> List[str]:
    version = source_version()
    problems: List[str] = []
    wheels = sorted(dist.glob("*.whl"))
    sdists = sorted(dist.glob("*.tar.gz"))
    if [w.name for w in wheels] != [f"{FILE_STEM}-{version}-py3-none-any.whl"]:
        problems.append(f"{dist}: expected one wheel {FILE_STEM}-{version}-py3-none-any.whl, found {[w.name for w in wheels]}")
    if [s.name for s in sdists] != [f"{FILE_STEM}-{version}.tar.gz"]:
        problems.append(f"{dist}: expected one sdist {FILE_STEM}-{version}.tar.gz, found {[s.name for s in sdists]}")
    for wheel in wheels:
        problems.extend(check_wheel(wheel, version))
    for sdist in sdists:
        problems.extend(check_sdist(sdist, version))
    if tag is not None:
        if tag != f"v{version}":
            problems.append(f"tag {tag} does not match kvlint/__init__.py's __version__ {version} (expected v{version})")
        if not changelog_has_release(version, (REPO / "CHANGELOG.md").read_text(encoding="utf-8")):
            problems.append(f"CHANGELOG.md has no section '## [{version}] - YYYY-MM-DD'")
    return problems


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="Check the wheel and sdist in DIST before publishing them.")
    parser.add_argument("dist", type=Path)
    parser.add_argument("--tag", help="the git tag being released (v<version>)")
    args = parser.parse_args(argv)
    if not args.dist.is_dir():
        parser.error(f"{args.dist} is not a directory")
    problems = check(args.dist, args.tag)
    for problem in problems:
        print(f"check_dist: {problem}")
    if not problems:
        print(f"check_dist: {DIST_NAME} {source_version()}: wheel and sdist ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
