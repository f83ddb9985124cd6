"""escape.py, one property test per destination: random byte strings (every ASCII control
character, `\\ * / " ? %`, newlines, invalid UTF-8, bidi marks, payloads) go through the
escaping function, and the real consumer (gcc, its preprocessor, make, cmake, json, the
terminal rules) must read back exactly the text, or nothing at all, and never code."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
import unicodedata

import pytest

from support.names import PAYLOADS, random_name
from microcompile import escape

COUNT = 3000          # random strings per destination in the default run
SLOW_COUNT = 60000
CFLAGS = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-Wtrigraphs", "-Wcomment", "-pedantic"]


def _texts(seed: int, count: int) -> list[bytes]:
    rng = random.Random(seed)
    fixed = PAYLOADS + [bytes([c]) for c in range(256)] + [b"", b"??/", b"??/\n", b"*\\\n/", b"a/", b"/a"]
    return fixed + [random_name(rng, rng.randrange(1, 48)) for _ in range(count)]


def _strs(seed: int, count: int) -> list[str]:
    return [t.decode("utf-8", "replace") for t in _texts(seed, count)]


def _cc(tmp_path, source: str, *extra) -> subprocess.CompletedProcess:
    src = tmp_path / "t.c"
    src.write_text(source)
    return subprocess.run(["cc", *CFLAGS, *extra, str(src), "-o", str(tmp_path / "t")], capture_output=True, text=True)


# --- C string literals --------------------------------------------------------------------------

def _check_c_strings(tmp_path, texts: list[bytes]) -> None:
    decls = [f"static const char s{i}[] = {escape.c_string(t)};" for i, t in enumerate(texts)]
    table = ", ".join(f"{{s{i}, sizeof s{i} - 1}}" for i in range(len(texts)))
    source = ("#include <stdio.h>\n" + "\n".join(decls) + "\nstatic const struct { const char *p; unsigned long n; } "
              f"all[] = {{{table}}};\nint main(void) {{\n    unsigned long i, k;\n"
              "    for (i = 0; i < sizeof all / sizeof all[0]; i++) {\n"
              "        for (k = 0; k < all[i].n; k++) printf(\"%02x\", (unsigned char)all[i].p[k]);\n"
              "        printf(\"\\n\");\n    }\n    return 0;\n}\n")
    built = _cc(tmp_path, source)
    assert built.returncode == 0, built.stderr[:2000]
    lines = subprocess.run([str(tmp_path / "t")], capture_output=True, text=True, check=True).stdout.split("\n")
    for t, line in zip(texts, lines):
        assert bytes.fromhex(line) == t, (t, line)
    for t in texts:
        literal = escape.c_string(t)
        assert all(32 <= ord(c) < 127 for c in literal) and "??" not in literal


def test_c_string_reads_back_every_byte(tmp_path):
    _check_c_strings(tmp_path, _texts(1, COUNT))


def test_c_string_of_a_str_is_its_utf8():
    assert escape.c_string('a"b\\c\u00e9?') == '"a\\042b\\134c\\303\\251\\077"'
    assert escape.c_string("\udcff") == '"\\355\\263\\277"'   # a lone surrogate: never an exception


# --- comments ---------------------------------------------------------------------------------

def _check_comments(tmp_path, texts: list[str]) -> None:
    # Each comment in the contexts templates use, and pressed against code and other comments;
    # after the preprocessor, exactly the declarations must be left.
    lines = []
    for i, t in enumerate(texts):
        c = escape.c_comment(t)
        assert set(c) <= escape._COMMENT_SAFE | set(".()0123456789, characters"), c
        lines += [f"/* {c} */ int a{i};", f"/*{c}*/int b{i};", f" * {c}", f"int c{i}; // {c}"]
    source = "/*\n" + "\n".join(line for line in lines if line.startswith(" * ")) + "\n */\n" \
        + "\n".join(line for line in lines if not line.startswith(" * ")) + "\n"
    src = tmp_path / "c.c"
    src.write_text(source)
    pre = subprocess.run(["cc", "-E", "-P", *CFLAGS, str(src)], capture_output=True, text=True)
    assert pre.returncode == 0, pre.stderr[:2000]
    tokens = pre.stdout.split()
    expected = [tok for i in range(len(texts)) for tok in ("int", f"a{i};", "int", f"b{i};", "int", f"c{i};")]
    assert tokens == expected
    built = _cc(tmp_path, source + "int main(void) { return 0; }\n")
    assert built.returncode == 0, built.stderr[:2000]


def test_c_comment_never_leaves_the_comment(tmp_path):
    _check_comments(tmp_path, _strs(2, COUNT))


def test_c_comment_keeps_a_plain_name_and_cuts_a_long_one():
    assert escape.c_comment("model/conv2d/BiasAdd;relu:0 [1,2]") == "model/conv2d/BiasAdd;relu:0 [1,2]"
    assert escape.c_comment("model/conv2d/*") == "model/conv2d/_"
    assert escape.c_comment("*\\\n/ int x;") == "___/ int x;"
    long = escape.c_comment("x" * 5000)
    assert long == "x" * escape.COMMENT_NAME_MAX + "... (5,000 characters)"


def test_make_comment_has_no_dollar_or_backslash():
    for t in _strs(3, COUNT):
        c = escape.make_comment(t)
        assert "$" not in c and "\\" not in c and "\n" not in c and "#" not in c[:0]


# --- identifiers ------------------------------------------------------------------------------

def test_identifiers_are_valid_unreserved_and_distinct(tmp_path):
    table = escape.Identifiers(reserved={"mc_model"})
    texts = _strs(4, COUNT) + ["mc_model", "int", "_Bool", "__x", "_X", "9lives", "a/b", "a_b", "a b"]
    names = [table(t) for t in texts]
    assert len(set(names)) == len(set(texts))
    assert table("a/b") == names[texts.index("a/b")]          # the same text, the same name
    for n in names:
        assert re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", n), n
    built = _cc(tmp_path, "".join(f"int {n} = {i};\n" for i, n in enumerate(dict.fromkeys(names)))
                + "int main(void) { return 0; }\n")
    assert built.returncode == 0, built.stderr[:2000]


# --- Makefile recipes and shell words -------------------------------------------------------------

def test_make_shell_word_reaches_the_program_unchanged(tmp_path):
    words = [t for t in _strs(5, 400) if not set(t) & {"\n", "\r", "\0"}]
    recipe = "\n".join(f"\t@printf '%s|\\n' {escape.make_shell_word(w)}" for w in words)
    (tmp_path / "Makefile").write_text(f"all:\n{recipe}\n", encoding="utf-8")
    out = subprocess.run(["make", "-s", "-C", str(tmp_path)], capture_output=True, check=True).stdout
    assert out.decode("utf-8").split("|\n")[:-1] == words
    for bad in ("a\nb", "a\rb", "a\0b"):
        with pytest.raises(ValueError):
            escape.make_shell_word(bad)


# --- CMake ----------------------------------------------------------------------------------------

def _cmake() -> str:
    found = shutil.which("cmake", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    assert found, "cmake is a test dependency (pip install .[test])"
    return found


def test_cmake_bracket_is_read_back_verbatim(tmp_path):
    texts = [t for t in _strs(6, 400) if "\0" not in t and "\r" not in t]   # CMake reads files as lines
    script = "".join(f"file(WRITE \"${{CMAKE_CURRENT_LIST_DIR}}/o{i}\" {escape.cmake_bracket(t)})\n"
                     for i, t in enumerate(texts))
    (tmp_path / "s.cmake").write_text(script, encoding="utf-8")
    subprocess.run([_cmake(), "-P", str(tmp_path / "s.cmake")], capture_output=True, check=True)
    for i, t in enumerate(texts):
        assert (tmp_path / f"o{i}").read_bytes().decode("utf-8") == t
    assert escape.cmake_bracket("a]=]b]==") == "[===[a]=]b]==]===]"   # "]==" + "]==]" would close it


# --- JSON and the terminal -------------------------------------------------------------------------

def test_json_text_is_ascii_and_round_trips():
    texts = _strs(7, COUNT)
    doc = escape.json_text({"names": texts})
    assert doc.isascii() and not any(ord(c) < 32 for c in doc)
    assert json.loads(doc) == {"names": texts}


def test_terminal_shows_no_control_bidi_or_invisible_character():
    texts = _strs(8, COUNT) + ["".join(chr(c) for c in range(0, 0x3000))]
    for t in texts:
        shown = escape.terminal(t)
        assert all(c.isprintable() and unicodedata.category(c) != "Cf" for c in shown), repr(shown)
    assert escape.terminal("a\x1b[31mb\u202ec\nd") == "a\\x1b[31mb\\u202ec\\x0ad"
    assert escape.terminal("line 1\nline 2\t.", keep_newlines=True) == "line 1\nline 2\t."


@pytest.mark.slow
def test_many_more_strings(tmp_path):
    _check_c_strings(tmp_path, _texts(11, SLOW_COUNT))
    _check_comments(tmp_path, _strs(12, SLOW_COUNT))


def test_xml_text_is_well_formed_in_text_and_attributes():
    import xml.etree.ElementTree as ET

    for text in _strs(11, COUNT):
        esc = escape.xml_text(text)
        root = ET.fromstring(f'<a b="{esc}">{esc}</a>')        # raises on anything not well formed
        assert root.text == root.get("b") or (root.text is None and root.get("b") == "")
        assert all(ch.isprintable() for ch in root.get("b"))


def test_md_code_is_one_code_span_on_one_line():
    for text in _strs(12, COUNT):
        span = escape.md_code(text)
        assert span.count("`") == 2 and span.startswith("`") and span.endswith("`")
        assert "\n" not in span and "\r" not in span and "|" not in span
