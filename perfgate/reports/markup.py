"""Markdown and HTML text that renders literally: shared by every markdown reporter (check,
explain, baseline show and diff)."""

from __future__ import annotations

from perfgate.common.escape import no_mentions, one_line

# ASCII punctuation that markdown or HTML give meaning to; the rest of the text stays as it is.
_SPECIAL = set("&<>|*_`[]\\~#!{}$")
ARROW = "\u00a0→\u00a0"  # " -> " of the plain-text reports, in markdown and HTML


def cell(text: str) -> str:
    """Text that renders literally inside a GFM table cell or inline HTML, mentioning no one
    and linking nowhere; newlines, controls, bidi and zero-width characters show as escapes
    (`\\u202e`, common.escape)."""
    out = []
    # "0.005 -> 2.550": a browser breaks a line after the hyphen of "->"; an arrow with no-break
    # spaces keeps a value and what it became on one line.
    for ch in no_mentions(one_line(text)).replace(" -> ", ARROW):
        if ch in _SPECIAL:
            out.append(f"&#{ord(ch)};")
        elif ch == "\t":
            out.append(" ")
        else:
            out.append(ch)
    return "".join(out)


_BREAK_AFTER = set("_,:")
_LONG = 32


def code(text: str) -> str:
    """Inline code; a long name gets <wbr> break points after '_', ',' and ':' so that a
    cuDNN kernel name does not stretch a table past the page (copied text is unchanged).

    `<code>` is raw HTML, and GitHub still turns `www.x.com`, `http://...` and `a@b.com`
    between its tags into live links (a markdown code span would not, but a backquote in a
    name would end it). So the whole text goes through no_mentions first, which puts an
    invisible word joiner into `www.`, `://` and after `@`; GitHub renders it as plain text.
    Character by character, `www` would never be seen next to its `.`."""
    if len(text) <= _LONG:
        return f"<code>{cell(text)}</code>"
    inert = no_mentions(one_line(text))
    return (
        "<code>"
        + "".join(cell(ch) + ("<wbr>" if ch in _BREAK_AFTER else "") for ch in inert)
        + "</code>"
    )
