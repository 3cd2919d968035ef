"""Docstrings as the reference renders them.

ndflow's docstrings are written to be read with `help()`: Markdown-style `code` spans (rendered
as code through `default_role`), `*args`, names ending in `_`, and code examples indented under
a sentence that ends with a colon. reST reads those as emphasis, link targets and block quotes.
This hook, run after napoleon has turned the numpydoc sections into reST, keeps the text and
makes reST read it as written: code blocks become literal blocks, and `*`, a trailing `_` and
`|` outside code are escaped. Doctest blocks (`>>>`) and literal blocks are left alone.
"""
import re

_CODE_SPAN = re.compile(r"(``.+?``|`[^`]+`)")
_STRONG = re.compile(r"(\*\*[^*\s][^*]*?\*\*)")
_TRAILING_UNDERSCORE = re.compile(r"(?<=\w)_(?=[^\w]|$)")


def _indent(line):
    return len(line) - len(line.lstrip())


def _content_indent(line):
    """Where a line's text starts: after a list item's marker (`- `, `1. `)."""
    m = re.match(r"\s*(?:[-*+]|\d+[.)])\s+(?=\S)", line)
    return len(m.group(0)) if m else _indent(line)


def escape_prose(text):
    """Escape what reST would read as markup in a line of prose, outside code spans."""
    out = []
    for i, part in enumerate(_CODE_SPAN.split(text)):
        if i % 2:                    # a code span: as written
            out.append(part)
            continue
        pieces = _STRONG.split(part)
        for j, piece in enumerate(pieces):
            if j % 2 == 0:
                piece = piece.replace("\\", "\\\\").replace("*", "\\*").replace("|", "\\|")
                piece = _TRAILING_UNDERSCORE.sub(r"\\_", piece)
            pieces[j] = piece
        out.append("".join(pieces))
    return "".join(out)


def _is_directive(stripped):
    return stripped.startswith(".. ") or (stripped.startswith(":") and
                                           re.match(r":[\w ]+:", stripped) is not None)


def convert(lines):
    """The docstring's lines, made into reST that reads as written (see the module's doc)."""
    out = []
    literal_indent = None            # inside a literal block: the indent it must exceed
    doctest = False
    for line in lines:
        stripped = line.strip()
        ind = _indent(line)
        if not stripped:
            doctest = False
            out.append(line)
            continue
        if literal_indent is not None:
            if ind > literal_indent:
                out.append(line)
                continue
            literal_indent = None
        if doctest or stripped.startswith(">>>"):
            doctest = True
            out.append(line)
            continue
        # an indented block right under prose: code, as Markdown and help() show it
        last = next((l for l in reversed(out) if l.strip()), "")
        if last and ind > _content_indent(last) and not _is_directive(last.strip()) \
                and not last.rstrip().endswith("::") and _prose_block_start(out):
            _make_literal_intro(out)
            literal_indent = _indent(last)
            out.append(line)
            continue
        if stripped.endswith("::") and not _is_directive(stripped):
            out.append(line if stripped == "::" else _escape_line(line))
            literal_indent = ind
            continue
        out.append(_escape_line(line))
    return out


def _escape_line(line):
    stripped = line.strip()
    if stripped.startswith(".. "):
        return line
    # a field of napoleon's (`:param \*args: ...`): its name is escaped already
    field = re.match(r"(\s*:(?:param|type|returns|rtype|raises|ivar|cvar|var)\b[^:]*:\s*)(.*)$",
                     line)
    if field:
        return field.group(1) + escape_prose(field.group(2))
    return line[:_indent(line)] + escape_prose(stripped)


def _prose_block_start(out):
    """The block above is prose (not a directive or a literal/doctest block)."""
    for l in reversed(out):
        if not l.strip():
            return True
        s = l.strip()
        if s.startswith(">>>") or s.startswith(".. "):
            return False
    return True


def _make_literal_intro(out):
    """End the paragraph above with `::` (a literal block follows) and a blank line."""
    i = len(out) - 1
    while i >= 0 and not out[i].strip():
        i -= 1
    text = out[i].rstrip()
    if text.endswith(":") and not text.endswith("::"):
        out[i] = text + ":"
    else:
        out[i] = text + " ::" if text else "::"
    if i == len(out) - 1:
        out.append("")


def _process(app, what, name, obj, options, lines):
    lines[:] = convert(lines)


def setup(app):
    app.connect("autodoc-process-docstring", _process, priority=600)   # after napoleon (500)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
