"""The documentation: README.md is a front page, docs/ builds with `mkdocs build --strict` (a
broken link or anchor fails it), every page is in the nav, links work on GitHub too and point
only at what a clone holds, and scripts/get-models, which the docs send users to, is sound."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys

import pytest

from tests.conftest import REPO

DOCS = REPO / "docs"
README_MAX_LINES = 250
SIX_MODELS = ["kws_ref_model", "kws_ref_model_float32", "pretrainedResnet_quant", "pretrainedResnet",
              "ad01_int8", "ad01_fp32"]


def mkdocs_build(config_dir, site_dir) -> subprocess.CompletedProcess:
    """`mkdocs build --strict` of the mkdocs.yml in config_dir, into site_dir."""
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site_dir)],
                       cwd=config_dir, capture_output=True, text=True, env=env, timeout=300)
    assert "No module named mkdocs" not in p.stderr, "mkdocs is missing: pip install '.[docs]' (or '.[test]')"
    return p


def doc_files() -> list:
    return [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]


def prose(text: str) -> str:
    """The text without fenced code blocks and inline code, where link syntax is not a link."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def links(text: str) -> list[str]:
    """The targets of the Markdown links ([text](target)) and HTML hrefs in text."""
    body = prose(text)
    return (re.findall(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", body)
            + re.findall(r"href=[\"']([^\"']+)", body))


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: formatting dropped, lower case, punctuation removed
    (letters, digits, '_', '-' and spaces kept), spaces made hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[^\w\- ]", "", text.replace("`", "").strip().lower())
    return text.replace(" ", "-")


def github_anchors(path) -> set[str]:
    """Every heading anchor of a Markdown file as GitHub renders it (repeats get -1, -2, ...)."""
    seen: dict[str, int] = {}
    anchors = set()
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)
    for line in text.splitlines():
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = github_slug(m.group(1))
        n = seen.get(slug, 0)
        anchors.add(slug if n == 0 else f"{slug}-{n}")
        seen[slug] = n + 1
    return anchors


def nav_pages(nav) -> list[str]:
    """The page files a mkdocs nav lists, in order."""
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [p for item in nav for p in nav_pages(item)]
    if isinstance(nav, dict):
        return [p for v in nav.values() for p in nav_pages(v)]
    return []


def test_mkdocs_build_strict_passes(tmp_path):
    p = mkdocs_build(REPO, tmp_path / "site")
    assert p.returncode == 0, p.stdout + p.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    # The API page really rendered the package (mkdocstrings ran, the ::: line is gone).
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    assert ":::" not in api and "microcompile" in api


@pytest.mark.parametrize("broken, said", [
    ("[the report](no-such-page.md)", "no-such-page.md"),
    ("[errors](errors.md#no-such-heading)", "#no-such-heading"),
])
def test_a_broken_link_fails_the_build(tmp_path, broken, said):
    """The strict build is a real guard: the same docs with one bad link or anchor fail."""
    shutil.copytree(DOCS, tmp_path / "docs")
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    (tmp_path / "microcompile").symlink_to(REPO / "microcompile")   # for mkdocstrings
    page = tmp_path / "docs" / "cli.md"
    page.write_text(page.read_text() + f"\nSee {broken}.\n")
    p = mkdocs_build(tmp_path, tmp_path / "site")
    said_by_mkdocs = p.stdout + p.stderr
    assert p.returncode != 0, said_by_mkdocs
    assert re.search(rf"WARNING .*'cli.md' contains a link .*{re.escape(said)}", said_by_mkdocs), said_by_mkdocs


def test_readme_is_a_front_page():
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move text into docs/"


def test_no_link_leaves_what_a_clone_holds():
    """../shared (BENCHMARK.md, DESIGN.md, the models) is not in a user's clone."""
    bad = [(f.relative_to(REPO), t) for f in doc_files() for t in links(f.read_text())
           if "../shared" in t or "shared/BENCHMARK" in t or "shared/DESIGN" in t]
    assert not bad, bad


def test_every_docs_page_is_in_the_nav():
    import yaml   # PyYAML comes with mkdocs (the docs extra, which the test extra includes)
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    listed = nav_pages(config["nav"])
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert sorted(set(listed)) == pages, (set(pages) - set(listed), set(listed) - set(pages))
    assert len(listed) == len(set(listed)), "a page is listed twice"
    assert config["theme"]["name"] == "material" and config.get("strict") is True


def test_relative_links_work_on_github():
    """README.md is not part of the mkdocs build, so its links are checked here; the anchors of
    every page must also be GitHub's (mkdocs checks its own slugs, which differ on punctuation)."""
    problems = []
    for f in doc_files():
        for target in links(f.read_text()):
            if re.match(r"[a-z]+:", target):        # https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            dest = (f.parent / path).resolve() if path else f
            if not dest.exists():
                problems.append(f"{f.relative_to(REPO)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in github_anchors(dest):
                problems.append(f"{f.relative_to(REPO)}: {target} (no such heading on GitHub)")
    assert not problems, "\n".join(problems)


def test_readme_links_into_every_docs_page():
    targets = {t.partition("#")[0] for t in links((REPO / "README.md").read_text())}
    pages = {f"docs/{p.relative_to(DOCS)}" for p in DOCS.rglob("*.md")}
    assert not pages - targets, f"pages the README does not link: {sorted(pages - targets)}"


def test_github_slug():
    assert github_slug("Tuning kernels on the device (`tune`, `--records`)") == \
        "tuning-kernels-on-the-device-tune---records"
    assert github_slug("The peer: TFLM and CMSIS-NN") == "the-peer-tflm-and-cmsis-nn"


# --- scripts/get-models ------------------------------------------------------------------------

GET_MODELS = REPO / "scripts" / "get-models"


def model_entries() -> list[tuple[str, str]]:
    """(file name, path in mlcommons/tiny) of each line of the script's models=( ... ) list."""
    text = GET_MODELS.read_text()
    block = re.search(r"^models=\((.*?)^\)", text, flags=re.S | re.M)
    assert block, "scripts/get-models has no models=( ... ) list"
    return [tuple(line.strip().strip('"').split()) for line in block.group(1).splitlines()
            if line.strip().startswith('"')]


def test_get_models_is_an_executable_bash_script_naming_the_six_models():
    assert GET_MODELS.is_file() and os.access(GET_MODELS, os.X_OK)
    assert GET_MODELS.stat().st_mode & stat.S_IXOTH
    p = subprocess.run(["bash", "-n", str(GET_MODELS)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    entries = model_entries()
    assert sorted(name for name, _ in entries) == sorted(f"{m}.tflite" for m in SIX_MODELS)
    for name, path in entries:
        assert path.startswith("benchmark/training/") and path.endswith(f"/trained_models/{name}"), path
    assert "https://raw.githubusercontent.com/mlcommons/tiny/$ref" in GET_MODELS.read_text()


def fake_curl(bin_dir, log):
    """A curl that copies file:// URLs and logs its arguments (the suite runs offline, and CI
    machines need not have curl)."""
    script = bin_dir / "curl"
    script.write_text(f"""#!/usr/bin/env bash
echo "$*" >> {log}
out=; url=
while [ $# -gt 0 ]; do
  case "$1" in -o) out=$2; shift 2 ;; --retry|--retry-delay|--connect-timeout) shift 2 ;; *) url=$1; shift ;; esac
done
src=${{url#file://}}
[ -f "$src" ] || {{ echo "curl: (37) Couldn't open file $src" >&2; exit 37; }}
cp "$src" "$out"
""")
    script.chmod(0o755)


def test_get_models_keeps_only_tflite_files(tmp_path):
    """Every model lands under its name when the download is a TFLite file; an HTML page or a
    missing file is refused with exit 1 and leaves nothing behind; a second run fetches only
    what is missing."""
    src, bin_dir, out, log = tmp_path / "tiny", tmp_path / "bin", tmp_path / "models", tmp_path / "curl.log"
    bin_dir.mkdir()
    fake_curl(bin_dir, log)
    entries = model_entries()
    for i, (name, path) in enumerate(entries):
        f = src / path
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(b"\x1c\x00\x00\x00TFL3" + bytes([i]) * 32)
    html = src / entries[0][1]
    html.write_bytes(b"<!DOCTYPE html><html>404</html>")
    (src / entries[1][1]).unlink()
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", MLPERF_TINY_BASE=f"file://{src}")

    p = subprocess.run([str(GET_MODELS), str(out)], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 1, p.stdout + p.stderr
    assert f"{entries[0][1]} is not a TFLite model" in p.stderr
    assert f"could not download {entries[1][0]}" in p.stderr
    assert sorted(f.name for f in out.iterdir()) == sorted(name for name, _ in entries[2:])
    calls = log.read_text().splitlines()
    assert len(calls) == 6 and all("-fL" in c and "--retry 3" in c for c in calls), calls

    html.write_bytes(b"\x1c\x00\x00\x00TFL3")
    (src / entries[1][1]).write_bytes(b"\x1c\x00\x00\x00TFL3")
    p = subprocess.run([str(GET_MODELS), str(out)], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "6 models in" in p.stdout and len(log.read_text().splitlines()) == 8   # only the two missing
    assert sorted(f.name for f in out.iterdir()) == sorted(name for name, _ in entries)


# --- the command line as documented -------------------------------------------------------------

def cli_help(*args) -> str:
    p = subprocess.run([sys.executable, "-m", "microcompile", *args, "--help"], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.fixture(scope="module")
def cli_options() -> dict[str, set[str]]:
    """command -> the options its --help lists (long forms, and -o)."""
    usage = cli_help().split("positional arguments")[0]
    commands = re.search(r"\{([a-z,-]+)\}", usage).group(1).split(",")
    options = {}
    for command in commands:
        # the option lines: "  -o PROJECT_DIR, --project-dir PROJECT_DIR   where ..."
        flags = " ".join(re.findall(r"^  (-.*?)(?:\s{2,}|$)", cli_help(command), flags=re.M))
        options[command] = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*|-o)\b", flags)) - {"--help"}
    return options


def cli_page_sections() -> dict[str, str]:
    """'## command' section of docs/cli.md -> its text."""
    parts = re.split(r"^## (\S+)\s*$", (DOCS / "cli.md").read_text(), flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def test_cli_page_lists_every_command_and_option(cli_options):
    """docs/cli.md promises every command and option: its options tables and --help agree."""
    sections = cli_page_sections()
    assert not set(cli_options) - set(sections), f"commands without a section: {set(cli_options) - set(sections)}"
    for command, options in cli_options.items():
        rows = [re.split(r"(?<!\\)\|", ln)[1] for ln in sections[command].splitlines() if ln.startswith("| `-")]
        documented = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*|-o)\b", " ".join(rows)))
        assert documented == options, (command, "missing:", options - documented, "no such option:",
                                       documented - options)


def test_documented_command_lines_use_real_options(cli_options):
    """Every `microcompile COMMAND ...` line in a code block of the README or docs/ uses only
    options COMMAND has."""
    wrong = []
    for f in doc_files():
        for block in re.findall(r"^```[^\n]*\n(.*?)^```", f.read_text(), flags=re.S | re.M):
            for line in block.replace("\\\n", " ").splitlines():
                m = re.search(r"\bmicrocompile (\w+)\b(.*)", line)
                if not m or m.group(1) not in cli_options:
                    continue
                used = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*|-o)\b", m.group(2).split("#")[0]))
                if used - cli_options[m.group(1)]:
                    wrong.append(f"{f.relative_to(REPO)}: {line.strip()}: {sorted(used - cli_options[m.group(1)])}")
    assert not wrong, "\n".join(wrong)
