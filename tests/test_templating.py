"""templating.py: a template prints numbers, escaped text and generated code, and nothing
else; and it is the only way microcompile renders a template."""

from __future__ import annotations

import pathlib
import re

import pytest

import microcompile
from microcompile.templating import UnescapedValueError, environment, generated, language

PKG = pathlib.Path(microcompile.__file__).parent


@pytest.fixture
def render(tmp_path):
    def render(template: str, text: str, **values) -> str:
        (tmp_path / template).write_text(text)
        return environment(tmp_path).get_template(template).render(**values)
    return render


def test_a_plain_string_is_refused(render):
    with pytest.raises(UnescapedValueError, match="unescaped str 'conv1"):
        render("a.c.j2", "/* {{ name }} */", name="conv1*/ int x; /*")
    with pytest.raises(UnescapedValueError):       # a literal in the template is a plain string too
        render("b.c.j2", '{{ "x" }}')
    with pytest.raises(UnescapedValueError):       # a filter that returns a new plain str loses the mark
        render("c.c.j2", "{{ code | upper }}", code=generated("int x;"))


def test_filters_escape_for_their_destination(render):
    name = "a*\\\n/b\"?"
    assert render("a.c.j2", "/* {{ n | c_comment }} */ {{ n | c_string }} {{ k }} {{ code }}",
                  n=name, k=3, code=generated("int x;")) == '/* a___/b"_ */ "a*\\134\\012/b\\042\\077" 3 int x;'
    assert render("Makefile.j2", "# {{ n | make_comment }}\n\techo {{ n | make_shell_word }}", n="$(x) y") \
        == "# _(x) y\n\techo '$$(x) y'"
    assert render("CMakeLists.txt.j2", "set(N {{ n | cmake_bracket }})", n="a]]b") == "set(N [=[a]]b]=])"
    assert render("l.ld.j2", "/* {{ n | c_comment }} */", n="*/") == "/* __ */"


def test_text_of_another_language_is_refused(render):
    with pytest.raises(UnescapedValueError, match="writes for make"):
        render("a.c.j2", "{{ n | make_shell_word }}", n="x")
    with pytest.raises(UnescapedValueError, match="c text printed in a make template"):
        render("Makefile.j2", "{{ code }}", code=generated("int x;"))
    with pytest.raises(ValueError, match="no output language"):
        language("notes.txt.j2")


def test_every_template_is_rendered_through_this_environment():
    """No module builds its own jinja2 environment (which would print names unescaped)."""
    found = [f"{p.relative_to(PKG)}" for p in PKG.rglob("*.py") if p.name != "templating.py"
             and re.search(r"jinja2\.(Environment|Template)\b|from jinja2 import", p.read_text())]
    assert not found, f"modules rendering templates outside templating.py: {found}"
    templates = PKG.parent / "templates"
    for t in templates.rglob("*.j2"):
        language(t.name)    # every shipped template has a known destination
