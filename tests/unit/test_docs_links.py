"""Every relative link of the README, docs/ and the cases' and vendors' READMEs points to a file that exists, and
a link to a heading (`page.md#anchor`, `#anchor`) to a heading that exists, by GitHub's anchor rules."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted({ROOT / "README.md", *ROOT.glob("docs/*.md"), *ROOT.glob("vendor/*/README.md"),
                *ROOT.glob("case_runners/cases/*/README.md")})
FENCE = re.compile(r"^ {0,3}(```|~~~)")
CODE_SPAN = re.compile(r"(`+).*?\1")
INLINE_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # https:, mailto:, ...


def prose(path: Path) -> list[tuple[int, str]]:
    """(line number, text) of a Markdown file outside fenced code blocks."""
    lines, fenced = [], None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        fence = FENCE.match(line)
        if fence and (fenced is None or fence[1] == fenced):
            fenced = fence[1] if fenced is None else None
            continue
        if fenced is None:
            lines.append((number, line))
    return lines


def links(path: Path) -> list[tuple[int, str]]:
    """(line number, target) of every inline and reference link; code spans are not links."""
    found = []
    for number, line in prose(path):
        text = CODE_SPAN.sub("", line)
        found += [(number, m[1]) for m in INLINE_LINK.finditer(text)]
        reference = REFERENCE.match(text)
        if reference:
            found.append((number, reference[1]))
    return found


def slug(title: str) -> str:
    """GitHub's anchor of a heading: code spans kept verbatim; elsewhere links reduced to their text, HTML tags
    dropped and backslash escapes undone; then lower case, punctuation removed, spaces to hyphens."""
    parts = []
    for index, part in enumerate(re.split(r"`+([^`]*)`+", title)):
        if index % 2 == 0:  # outside code spans
            part = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", part)
            part = re.sub(r"(?<!\\)<[^>]+>", "", part)
            part = re.sub(r"\\(.)", r"\1", part)
        parts.append(part)
    return re.sub(r"[^\w\- ]", "", "".join(parts).lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings; a repeated one gets -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    found = set()
    for _, line in prose(path):
        heading = HEADING.match(line)
        if not heading:
            continue
        base = slug(heading[2])
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def test_the_pages_are_found() -> None:
    assert ROOT / "README.md" in PAGES and ROOT / "docs" / "running.md" in PAGES


def test_the_slugs_follow_github() -> None:
    assert slug("2. `vendor.yaml`") == "2-vendoryaml"
    assert slug("Writing a vendor's image") == "writing-a-vendors-image"
    assert slug("`rank<R>.result.json` (`perfplay.rank_result/1`)") == "rankrresultjson-perfplayrank_result1"
    assert slug("rank\\<R\\> <b>and</b> [a link](x.md)") == "rankr-and-a-link"
    assert slug("5. Case configs: only what a vendor may change") == "5-case-configs-only-what-a-vendor-may-change"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for number, target in links(page):
        if EXTERNAL.match(target):
            continue
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        where = f"{page.relative_to(ROOT)}:{number}: {target}"
        if not dest.exists():
            broken.append(f"{where}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{where}: {dest.name} has no heading with the anchor #{anchor}")
    assert not broken, "broken links:\n" + "\n".join(broken)
