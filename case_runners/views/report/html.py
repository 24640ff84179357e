"""The report's page: one self-contained HTML file (inline CSS, no script, no URL outside the page: the figures are
data: URIs). Every text that comes from a record or a path goes through esc()."""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Collection, Iterable, Sequence
from typing import Any

IMAGE_PREFIX = "data:image/"  # the only src an <img> of the report has

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: #1d232a;
       margin: 0; background: #f5f6f8; }
header { background: #1d2b3a; color: #fff; padding: 18px 32px 12px; }
header h1 { margin: 0 0 6px; font-size: 22px; font-weight: 600; }
header p { margin: 2px 0; color: #c9d3dd; }
header p.omitted { color: #9aa8b6; font-size: 13px; }
header code { color: #fff; }
nav { margin-top: 10px; display: flex; flex-wrap: wrap; gap: 6px 16px; }
nav a { color: #9fd0ff; text-decoration: none; }
main { max-width: 1100px; margin: 0 auto; padding: 8px 32px 40px; }
section { background: #fff; border: 1px solid #dde2e8; border-radius: 6px; margin: 18px 0; padding: 6px 20px 14px; }
h2 { font-size: 18px; margin: 12px 0 6px; border-bottom: 1px solid #eef0f3; padding-bottom: 4px; }
h3 { font-size: 15px; margin: 16px 0 6px; }
p.about { color: #4b5563; margin: 4px 0 10px; }
p.empty { color: #6b7280; font-style: italic; }
p.note { color: #6b7280; font-size: 13px; margin: 4px 0; }
p.warn { color: #a61b1b; font-size: 13px; margin: 4px 0; font-weight: 600; }
div.alert { background: #fdecea; border: 1px solid #f5c2c0; color: #8a1c1c; border-radius: 6px; padding: 10px 16px;
            margin: 18px 0 0; font-weight: 600; }
table { border-collapse: collapse; margin: 6px 0 12px; font-size: 13px; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #e3e7ec; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f0f3f6; font-weight: 600; }
td.bad { color: #a61b1b; font-weight: 600; }
img { max-width: 100%; height: auto; display: block; margin: 8px 0; }
code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12.5px; }
"""


@dataclasses.dataclass(frozen=True)
class Omitted:
    """What a section's builder gives for runs that have nothing of it (one run has no side by side, a training run
    no generation latency): the page leaves it out and names it in its header with `reason`."""
    reason: str


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def para(text: str, kind: str = "about") -> str:
    return f'<p class="{kind}">{esc(text)}</p>'


def empty(text: str) -> str:
    """What a section or part of one says when it has nothing to show."""
    return para(text, "empty")


def heading(text: str, level: int = 3) -> str:
    return f"<h{level}>{esc(text)}</h{level}>"


def table(header: Sequence[str], rows: Iterable[Sequence[Any]], bad_column: int | None = None,
          bad_values: Collection[str] = ()) -> str:
    """A table of text cells; `bad_column`'s cells (a failed round's status) and cells reading one of `bad_values`
    (a verdict "worse") are marked."""
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f'<td class="bad">{esc(c)}</td>' if i == bad_column or c in bad_values
                                    else f"<td>{esc(c)}</td>" for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def image(uri: str, alt: str) -> str:
    if not uri.startswith(IMAGE_PREFIX):
        raise ValueError(f"a report image must be a {IMAGE_PREFIX} URI")
    return f'<img src="{uri}" alt="{esc(alt)}">'


def section(section_id: str, title: str, body: str) -> str:
    return f'<section id="{esc(section_id)}">{heading(title, 2)}{body}</section>'


def page(title: str, lines: Sequence[str], alert: str | None, nav: Sequence[tuple[str, str]],
         sections: Sequence[str], omitted: Sequence[tuple[str, str]] = ()) -> str:
    """The whole document: a header (title, lines about the runs, the sections left out and why, links to the
    sections), an alert above the sections when there is one."""
    about = "".join(f"<p>{esc(line)}</p>" for line in lines)
    if omitted:
        listed = "; ".join(f"{name} ({reason})" for name, reason in omitted)
        about += f'<p class="omitted">Not in this report: {esc(listed)}.</p>'
    links = "".join(f'<a href="#{esc(sid)}">{esc(name)}</a>' for sid, name in nav)
    warning = f'<div class="alert" id="no-results">{esc(alert)}</div>' if alert else ""
    return ("<!DOCTYPE html>\n"
            f'<html lang="en"><head><meta charset="utf-8"><meta name="viewport" '
            f'content="width=device-width, initial-scale=1"><title>{esc(title)}</title><style>{CSS}</style></head>'
            f"<body><header><h1>{esc(title)}</h1>{about}<nav>{links}</nav></header>"
            f"<main>{warning}{''.join(sections)}</main></body></html>\n")
