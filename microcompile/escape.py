"""The one way each destination receives text that microcompile did not write itself.

A model file is hostile input (README "Untrusted models"): its op, tensor and model names
are bytes an attacker chose. Such a name reaches generated text only through the function
of its destination below, and nowhere else:

| destination                         | function          | what it does                                   |
|-------------------------------------|-------------------|------------------------------------------------|
| a C identifier                      | `c_identifier`    | derives one: [A-Za-z_][A-Za-z0-9_]*, not a     |
|                                     | (`Identifiers`)   | keyword, not reserved; collision-free per table|
| a C string literal                  | `c_string`        | every byte not plain printable ASCII, and      |
|                                     |                   | `"` `\\` `?`, as a three-digit octal escape     |
| a C (or linker script) comment      | `c_comment`       | an allow-list of characters; every other one   |
|                                     |                   | (`*` `\\` `?` newlines, non-ASCII) becomes `_`  |
| a Makefile comment                  | `make_comment`    | the same allow-list, without `$`               |
| a shell word in a Makefile recipe   | `make_shell_word` | shell-quoted, `$` doubled; no newlines         |
| a CMake argument                    | `cmake_bracket`   | a bracket argument no name can close           |
| JSON                                | `json_text`       | json.dumps with every non-ASCII and control    |
|                                     |                   | character escaped                              |
| the terminal                        | `terminal`        | control, bidi and invisible characters escaped |

Why an allow-list for comments: a deny-list of `*/` is not enough. The C preprocessor
removes backslash-newline before it recognizes comments, so `*\\<newline>/` closes one; a
trigraph `??/` is a backslash under -std=c99; bidi and zero-width characters fail
-Werror=bidi-chars or hide code from a reader. Nothing outside the allow-list gets in.

Templates print through `templating.py`, whose jinja2 environment refuses any string that
has not passed one of these functions (its filters) or been marked as generated code.
Stdlib only: every stage may import this module.
"""

from __future__ import annotations

import json
import re
import unicodedata

# Characters a comment may hold verbatim. No `*` (so neither `/*` nor `*/` can form), no `\`
# (line splices), no `?` (trigraphs), no `$` in Makefiles, nothing outside printable ASCII.
_COMMENT_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                          " _-.,:;=+/()[]{}<>#@!%&|^~'\"$`")
_MAKE_COMMENT_SAFE = _COMMENT_SAFE - {"$"}
COMMENT_REPLACEMENT = "_"
# A comment holds at most this many characters of one name: a 100 KB name is cut, not printed.
COMMENT_NAME_MAX = 200

_C_KEYWORDS = frozenset(
    "auto break case char const continue default do double else enum extern float for goto if inline int long "
    "register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while "
    "_Bool _Complex _Imaginary _Alignas _Alignof _Atomic _Generic _Noreturn _Static_assert _Thread_local "
    "asm typeof bool true false".split())
_IDENT_BAD = re.compile(r"[^A-Za-z0-9_]")


def valid_text(text: str) -> str:
    """`text` as valid Unicode: a file name's undecodable bytes (os.fsdecode's surrogate
    escapes) become U+FFFD, so the name can be written as UTF-8 (a .tflite, JSON, C)."""
    return str(text).encode("utf-8", "surrogatepass").decode("utf-8", "replace") \
        if any("\ud800" <= ch <= "\udfff" for ch in str(text)) else str(text)


def c_comment(text: str, limit: int | None = COMMENT_NAME_MAX) -> str:
    """`text` as it may stand inside a C or linker script /* */ comment, whatever surrounds
    it: every character outside the allow-list becomes `_`, and so does a `/` at either end;
    longer than `limit` characters, it is cut and the cut says how long it was."""
    text = str(text)
    cut = ""
    if limit is not None and len(text) > limit:
        text, cut = text[:limit], f"... ({len(text):,} characters)"
    out = "".join(ch if ch in _COMMENT_SAFE else COMMENT_REPLACEMENT for ch in text)
    # Nor a `/` at either end, where the text around it could supply the `*` of a `*/` or `/*`.
    if out.startswith("/"):
        out = COMMENT_REPLACEMENT + out[1:]
    if out.endswith("/") and not cut:
        out = out[:-1] + COMMENT_REPLACEMENT
    return out + cut


def make_comment(text: str) -> str:
    """`text` as it may stand in a Makefile `#` comment (no `$`, no backslash, one line)."""
    return "".join(ch if ch in _MAKE_COMMENT_SAFE else COMMENT_REPLACEMENT for ch in c_comment(text))


def md_code(text: str) -> str:
    """`text` as a Markdown code span (backticks included): the comment allow-list (one line,
    no control characters) without backtick and `|`, so the span cannot end early or break a
    table row; inside a code span `<` is text, not HTML."""
    return "`" + c_comment(text).replace("`", COMMENT_REPLACEMENT).replace("|", COMMENT_REPLACEMENT) + "`"


def xml_text(text: str) -> str:
    """`text` as XML character data or an attribute value in double quotes: the comment
    allow-list (no control characters, which XML 1.0 forbids), then `&`, `<`, `>`, `"` escaped."""
    out = c_comment(text)
    return out.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def c_string(text: str | bytes) -> str:
    """A C string literal (quotes included) holding exactly the bytes of `text` (UTF-8 for a
    str). Printable ASCII stays, but for `"`, `\\` and `?` (trigraphs); every other byte is a
    three-digit octal escape, which, unlike \\x, cannot swallow the character after it."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    return '"' + "".join(chr(b) if 32 <= b < 127 and chr(b) not in '"\\?' else f"\\{b:03o}" for b in data) + '"'


def c_identifier(text: str, fallback: str = "x") -> str:
    """A valid, unreserved C identifier derived from `text`: every character outside
    [A-Za-z0-9_] becomes `_`, a leading digit or underscore gets `fallback` in front, a
    keyword gets `_` behind. Not unique: use `Identifiers` where names must not collide."""
    name = _IDENT_BAD.sub("_", str(text))
    if not name or name[0].isdigit() or name[0] == "_":
        name = fallback + ("_" if name and name[0] != "_" else "") + name
    if name in _C_KEYWORDS:
        name += "_"
    return name


class Identifiers:
    """A table of C identifiers, each derived once from a text and never handed out twice:
    `a/b` and `a_b` become `a_b` and `a_b_1`. `reserved` names are taken from the start."""

    def __init__(self, reserved=()):
        self._taken: set[str] = set(reserved)
        self._given: dict[str, str] = {}

    def __call__(self, text: str, fallback: str = "x") -> str:
        if text in self._given:
            return self._given[text]
        base = name = c_identifier(text, fallback)
        k = 1
        while name in self._taken:
            name, k = f"{base}_{k}", k + 1
        self._taken.add(name)
        self._given[text] = name
        return name


def shell_word(arg: str) -> str:
    """`arg` as one POSIX shell word (single-quoted unless plainly safe)."""
    arg = str(arg)
    if arg and all(c.isascii() and (c.isalnum() or c in "-_./=:@,+%") for c in arg):
        return arg
    return "'" + arg.replace("'", "'\\''") + "'"


def make_shell_word(arg: str) -> str:
    """`arg` as one shell word in a Makefile recipe: shell-quoted and `$` doubled (make
    expands `$` before the shell sees the line). A newline cannot be written in a recipe line."""
    arg = str(arg)
    if "\n" in arg or "\r" in arg or "\0" in arg:
        raise ValueError(f"a Makefile recipe cannot hold a newline or NUL: {terminal(arg)!r}")
    return shell_word(arg).replace("$", "$$")


def cmake_bracket(text: str) -> str:
    """`text` as a CMake bracket argument, [==[...]==], with one `=` more than any run of
    `=` between brackets in it, so that it cannot be closed early; no variable reference or
    escape is evaluated inside. A leading newline (which CMake would drop) is kept by a second;
    CMake reads a CRLF inside as LF."""
    text = str(text)
    if "\0" in text:
        raise ValueError("a CMake argument cannot hold a NUL character")
    runs = [len(m.group(1)) for m in re.finditer(r"\](=*)", text)]
    eq = "=" * (max(runs, default=-1) + 1)
    lead = "\n" if text.startswith(("\n", "\r\n")) else ""
    return f"[{eq}[{lead}{text}]{eq}]"


def json_text(value, **kw) -> str:
    """JSON text of `value`, every non-ASCII and control character as a \\u escape."""
    return json.dumps(value, ensure_ascii=True, **kw)


def _visible(ch: str) -> bool:
    """Printable, and not a format character (bidi overrides, zero-width joiners)."""
    return ch.isprintable() and unicodedata.category(ch) != "Cf"


def terminal(text: str, keep_newlines: bool = False) -> str:
    """`text` safe to print on a terminal: escape sequences, other control characters, bidi
    and invisible characters shown as \\xNN / \\uNNNN, never sent. Newlines and tabs are kept
    only with `keep_newlines` (for messages whose lines are microcompile's own)."""
    out = []
    for ch in str(text):
        if _visible(ch) or (keep_newlines and ch in "\n\t"):
            out.append(ch)
        elif ord(ch) < 0x100:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return "".join(out)


def say(text: str) -> None:
    """Print one progress or report line on stdout through `terminal` (newlines kept): the
    default `progress` of every long step, whose lines quote file and layer names."""
    print(terminal(text, keep_newlines=True), flush=True)
