"""Replace one `## ` section of benchmarks/README.md, keeping the others."""

from __future__ import annotations


def replace_section(text: str, heading: str, body: str) -> str:
    """Replace the section under `heading` (up to the next `## `), or append it."""
    before, found, after = text.partition(heading + "\n")
    rest = after[after.find("\n## ") + 1 :] if found and "\n## " in after else ""
    return before.rstrip() + f"\n\n{heading}\n\n{body}\n" + (f"\n{rest}" if rest else "")


def keep_other_sections(new: str, old: str) -> str:
    """`new` plus the sections of `old` whose headings `new` does not have (written by the
    other benchmark scripts)."""
    out = new.rstrip() + "\n"
    for chunk in old.split("\n## ")[1:]:
        heading = "## " + chunk.split("\n", 1)[0]
        if heading + "\n" not in new:
            out += f"\n## {chunk.rstrip()}\n"
    return out
