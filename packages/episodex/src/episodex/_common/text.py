"""Short renderings of text for messages and prompts; the one way imports drop a BOM."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import overload
from xml.sax.saxutils import escape, quoteattr

__all__ = ["bad_lines_summary", "clip", "mended", "without_bom", "xml_attribute", "xml_text"]

# What XML 1.0 cannot hold at all, not even as a character reference: the C0 controls but
# tab, newline and carriage return, and U+FFFE, U+FFFF. (Lone surrogates are never stored.)
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


@overload
def without_bom(data: str) -> str: ...
@overload
def without_bom(data: bytes) -> bytes: ...
def without_bom(data: str | bytes) -> str | bytes:
    """`data` without a leading UTF-8 byte order mark (or the U+FEFF it decodes to).

    Notepad, Excel's "CSV UTF-8" and PowerShell write one before UTF-8 text; it marks the
    encoding and is never part of the first record.
    """
    if isinstance(data, bytes):
        return data.removeprefix(b"\xef\xbb\xbf")
    return data.removeprefix("\ufeff")


def clip(text: str, limit: int, *, ellipsis: str = "…") -> str:
    """`text` on one line (whitespace runs become one space), cut to `limit` characters.

    A cut text ends with `ellipsis`, counted in the limit, after the cut's trailing spaces.
    """
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return text[: max(0, limit - len(ellipsis))].rstrip() + ellipsis


def bad_lines_summary(bad: Sequence[tuple[int, str]], *, what: str = "line", shown: int = 5) -> str:
    """`line 3: why; line 7: why (and 4 more)`: the first `shown` of `(number, reason)` pairs."""
    listed = "; ".join(f"{what} {number}: {why}" for number, why in bad[:shown])
    more = f" (and {len(bad) - shown} more)" if len(bad) > shown else ""
    return listed + more


def mended(text: str) -> str:
    """`text` with each half character (a lone surrogate) read as U+FFFD.

    A client that cuts text by UTF-16 units leaves half an emoji; no model can read it and no
    store can keep it as UTF-8. Chat messages are end-user text, so the adapters' paths mend
    it rather than lose the turn; two halves of one character come back as that character.
    """
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def xml_text(text: str) -> str:
    """`text` as the content of an XML element that a parser reads back as `text`.

    `&`, `<` and `>` are escaped and a carriage return is written `&#13;` (a parser reads a
    raw one as a newline). A character XML 1.0 cannot hold (a NUL, terminal escapes, a form
    feed) would make the whole block ill-formed, so it is shown as U+FFFD, as a lone
    surrogate is; every other character is kept exactly.
    """
    return _NOT_XML.sub("\ufffd", escape(text, {"\r": "&#13;"}))


def xml_attribute(text: str) -> str:
    """`text` as a quoted XML attribute value, read back as `text` (see `xml_text`)."""
    return _NOT_XML.sub("\ufffd", quoteattr(text))
