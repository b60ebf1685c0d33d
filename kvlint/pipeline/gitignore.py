""".gitignore in directory walks (`respect-gitignore`, on by default; `--no-respect-gitignore`).

As in ruff, the entries a walk meets below a directory named on the command line are matched
(the named directory itself is walked even when ignored, as a named file is always checked):

* In a git work tree, with `git` on PATH, git answers (`git check-ignore --stdin`, one process
  for the walk): every source git reads counts (.gitignore files at any level, .git/info/exclude,
  core.excludesFile), with git's own rules. A path that git ignores is skipped even when tracked
  (`--no-index`), as ruff does.
* Otherwise (no git, not a work tree, or a named directory that git itself ignores) kvlint reads
  the .gitignore files of the walked directory, of the directories below it, and of the
  directories above it up to the work tree's top (a `.git` beside it) or the configuration's
  directory. It understands blank lines and `#` comments, `!` negation (last match wins), `\\`
  escapes, a trailing `/` (directories only), a `/` at the start or in the middle (anchored to
  the .gitignore's directory; else the name matches at any depth), `*`, `?`, `[...]`, and `**`
  (`**/x`, `x/**`, `x/**/y`). It does not read .git/info/exclude or core.excludesFile.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List, Optional, Pattern, Tuple



def gitignore_matcher(root: Path, stop: Optional[Path] = None) -> GitMatcher | PythonMatcher:
    """Whether a path met while walking `root` is ignored (see the module's docstring). `stop`:
    the highest directory whose .gitignore the pure-Python matcher reads when no work tree is
    found (the configuration's directory)."""
    git = GitMatcher.start(root)
    if git is not None:
        return git
    return PythonMatcher(root, stop)


# --- git ----------------------------------------------------------------------------------------


class GitMatcher:
    """One `git check-ignore --stdin -z --verbose --non-matching --no-index` for the walk: a
    path in, its answer out (git flushes each answer when its output is a pipe)."""

    def __init__(self, process: subprocess.Popen[bytes], root: Path):
        self.process = process
        self.root = root
        self.buffer = b""
        self.failed = False

    @classmethod
    def start(cls, root: Path) -> Optional[GitMatcher]:
        if shutil.which("git") is None:
            return None
        try:
            inside = subprocess.run(["git", "rev-parse", "--is-inside-work-tree"], cwd=root,
                                    capture_output=True, timeout=30)
            if inside.returncode != 0 or inside.stdout.strip() != b"true":
                return None
            process = subprocess.Popen(
                ["git", "check-ignore", "--stdin", "-z", "--verbose", "--non-matching", "--no-index"],
                cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError):
            return None
        matcher = cls(process, root)
        if matcher._ask(os.path.abspath(root)):  # the named directory is ignored: git would skip
            matcher.close()  # all of it, so the pure-Python matcher walks it instead
            return None
        if matcher.failed:
            return None
        return matcher

    def __call__(self, path: Path, is_dir: bool) -> bool:
        if self.failed:
            return False
        return self._ask(os.path.relpath(path, self.root))

    def _ask(self, path: str) -> bool:
        if "\0" in path:
            return False
        try:
            assert self.process.stdin is not None and self.process.stdout is not None
            self.process.stdin.write(os.fsencode(path) + b"\0")
            self.process.stdin.flush()
            fields: List[bytes] = []
            while len(fields) < 4:
                while b"\0" not in self.buffer:
                    chunk = os.read(self.process.stdout.fileno(), 65536)
                    if not chunk:
                        raise EOFError
                    self.buffer += chunk
                field, self.buffer = self.buffer.split(b"\0", 1)
                fields.append(field)
        except (OSError, EOFError, ValueError):
            self.failed = True  # git gave up (a path it cannot place): nothing more is ignored
            self.close()
            return False
        pattern = fields[2]
        return bool(pattern) and not pattern.startswith(b"!")

    def close(self) -> None:
        for stream in (self.process.stdin, self.process.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        try:
            self.process.wait(timeout=5)
        except subprocess.SubprocessError:
            self.process.kill()

    def __del__(self) -> None:  # the walk is over
        if self.process.poll() is None:
            self.close()


# --- pure Python --------------------------------------------------------------------------------

Rule = Tuple[Pattern[str], bool, bool]  # (regex over the path relative to the file's directory, negated, directories only)


def translate(pattern: str) -> str:
    """A gitignore glob (without `!`, trailing `/` and leading `/`) as a regular expression."""
    out: List[str] = []
    i, n = 0, len(pattern)
    while i < n:
        at_segment_start = i == 0 or pattern[i - 1] == "/"
        if at_segment_start and pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if at_segment_start and pattern.startswith("**", i) and i + 2 == n:
            out.append(".*")
            i += 2
            continue
        char = pattern[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        elif char == "[":
            end = i + 1
            if end < n and pattern[end] in "!^":
                end += 1
            if end < n and pattern[end] == "]":
                end += 1
            end = pattern.find("]", end)
            if end == -1:
                out.append(re.escape(char))
            else:
                body = pattern[i + 1:end]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end + 1
                continue
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def parse(text: str) -> List[Rule]:
    """The rules of one .gitignore file."""
    rules: List[Rule] = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\ "):
            line = line.rstrip(" ") + " "
        else:
            line = line.rstrip(" ")
        negated = line.startswith("!")
        if negated:
            line = line[1:]
        elif line.startswith(("\\!", "\\#")):
            line = line[1:]
        directories_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        regex = translate(line)
        if not anchored:
            regex = "(?:.*/)?" + regex
        try:
            rules.append((re.compile(regex + r"\Z", re.DOTALL), negated, directories_only))
        except re.error:
            continue  # a pattern git would not match either
    return rules


class PythonMatcher:
    """The .gitignore files above and within the walk, each matched relative to its directory;
    the last matching rule wins, and rules of deeper files come later."""

    def __init__(self, root: Path, stop: Optional[Path] = None):
        self.root = Path(os.path.abspath(root))
        self.files: Dict[Path, List[Rule]] = {}
        stop_at = Path(os.path.abspath(stop)) if stop is not None else None
        above: List[Path] = []
        if not ((self.root / ".git").exists() or self.root == stop_at):
            for folder in self.root.parents:
                above.append(folder)
                if (folder / ".git").exists() or folder == stop_at:
                    break
            else:  # neither a work tree nor the configuration above: only the walked tree's files
                above = []
        self.above = list(reversed(above))

    def _rules(self, folder: Path) -> List[Rule]:
        if folder not in self.files:
            try:
                with open(folder / ".gitignore", encoding="utf-8", errors="replace") as handle:
                    self.files[folder] = parse(handle.read(1 << 20))
            except OSError:
                self.files[folder] = []
        return self.files[folder]

    def __call__(self, path: Path, is_dir: bool) -> bool:
        absolute = Path(os.path.abspath(path))
        folders = list(self.above)
        try:
            inner = absolute.parent.relative_to(self.root)
        except ValueError:
            return False
        folder = self.root
        folders.append(folder)
        for part in inner.parts:
            folder = folder / part
            folders.append(folder)
        ignored = False
        for folder in folders:
            relative = absolute.relative_to(folder).as_posix()
            for regex, negated, directories_only in self._rules(folder):
                if directories_only and not is_dir:
                    continue
                if regex.match(relative):
                    ignored = not negated
        return ignored

    def close(self) -> None:
        """Nothing to end (as GitMatcher.close)."""
