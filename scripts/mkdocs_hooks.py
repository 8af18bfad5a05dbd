"""mkdocs hook: links from a documentation page to files of the repository outside docs/.

The pages under docs/ link to examples, tests and benchmarks/README.md by relative paths, which
work where the repository itself is read (a clone, a forge's file view). The built site has no
such files, so this hook checks that each target exists (a missing one fails the build, as a
broken link between pages does under ``--strict``) and then points the link at the repository's
copy when mkdocs.yml names ``repo_url``, or else shows the path as code.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

_LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^\s*```")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    docs_dir = Path(config["docs_dir"]).resolve()
    root = docs_dir.parent
    page_dir = (docs_dir / page.file.src_path).parent
    repo_url = (config.get("repo_url") or "").rstrip("/")

    def rewrite(match: re.Match[str]) -> str:
        text, target = match.group(1), match.group(2)
        if "://" in target or target.startswith(("#", "mailto:")):
            return match.group(0)
        path, _, fragment = target.partition("#")
        resolved = (page_dir / path).resolve()
        if resolved.is_relative_to(docs_dir):
            return match.group(0)  # a page or an image of the site: mkdocs checks it
        if not resolved.is_relative_to(root) or not resolved.exists():
            raise PluginError(f"{page.file.src_path}: the link to {target} names no file of the repository")
        relative = resolved.relative_to(root).as_posix()
        if repo_url:
            kind = "tree" if resolved.is_dir() else "blob"
            anchor = f"#{fragment}" if fragment else ""
            return f"[{text}]({repo_url}/{kind}/HEAD/{relative}{anchor})"
        shown = text.strip("`")
        return text if relative.rstrip("/") in shown else f"{text} (`{relative}`)"

    lines, fenced = [], False
    for line in markdown.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
        lines.append(line if fenced else _LINK.sub(rewrite, line))
    return "\n".join(lines)
