"""Names from a model never become code: the property test over both readers.

Every tensor (and, for ONNX, node and graph) name of a model is replaced by random bytes
(hostile_names: every ASCII control character, `\\ * / " ? %`, newlines, NUL, invalid UTF-8,
bidi and zero-width marks, and whole payloads such as `*\\<newline>/ int x; /*`). Then:

- the model compiles to C and to a whole project (self-test and agent firmware) without
  an error, and its reference outputs equal those of the same model with plain names;
- after the C preprocessor (`cc -E`, which drops comments and splices lines) and with string
  literals taken out, every generated .c file is token for token the one of the model with
  plain names (numbers aside: arena offsets may differ): no byte of a name is anywhere but in
  a comment or a string literal;
- `inspect` prints no control, bidi or invisible character;
- a sample is built with -Wall -Wextra -Werror and run: on the host board for each reader,
  and on the Cortex-M4 twin under QEMU, and its outputs match.

2,000 names per reader in the default run (NAMES_PER_READER); `slow` runs many more.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent

from support.cli_run import REPO, run_cli, run_cli_inprocess  # noqa: E402
from support.multi_op_models import _Model, quantize_graph  # noqa: E402
from support.names import NAME_BYTES, hostile_names, patch, placeholder  # noqa: E402

from microcompile import project  # noqa: E402
from microcompile.compiler import compile_model  # noqa: E402
from microcompile.frontend.tflite.writer import write_tflite  # noqa: E402
from microcompile.ir import Graph, verify  # noqa: E402
from microcompile.reference import interp  # noqa: E402
from microcompile.target import load_board  # noqa: E402

NAMES_PER_READER = 2000
SLOW_NAMES_PER_READER = 30000
CHAIN_OPS = 40                 # ops per chain model: about 2 names each
HOST = load_board("host")


# --- the models, with placeholder names ---------------------------------------------------------

def _chain_tflite(seed: int, int8: bool, ops: int = CHAIN_OPS) -> Graph:
    """A chain of cheap ops (conv, depthwise, fc, add/mul by constants, activations, reshape,
    pool, concat, softmax): many tensors, so many names, for little compile time."""
    rng = random.Random(seed)
    m = _Model(f"chain{seed}", seed)
    x = m.input("x", (1, 4, 4, 3))
    x = m.conv(x, 4, 3, "c0", act="NONE" if int8 else "RELU")
    for k in range(ops - 6):
        # (No RELU in int8: a map it zeroes gets a near-zero scale from quantize_graph's ranges.)
        kind = rng.choice(["add", "mul", "tanh", "logistic", "dw", "conv1", "concat"] + ([] if int8 else ["relu"]))
        if kind in ("add", "mul") and int8:      # (quantize_graph leaves constant operands float)
            x = m.op("add", (x, m.op("tanh", (m.conv(x, m.tensors[x].shape[3], 1, f"n{k}c"),), f"n{k}t")), f"n{k}")
        elif kind in ("add", "mul"):
            c = m.const(f"k{k}", np.float32(rng.uniform(0.5, 1.5)) * np.ones((1, 1, 1, m.tensors[x].shape[3]),
                                                                           np.float32))
            x = m.op(kind, (x, c), f"n{k}")
        elif kind == "dw":
            x = m.depthwise(x, 3, f"n{k}", act="NONE" if int8 else "RELU6")
        elif kind == "conv1":
            x = m.conv(x, 4, 1, f"n{k}")
        elif kind == "concat":
            a = m.conv(x, 2, 1, f"n{k}a")
            x = m.op("concatenation", (a, m.conv(x, 2, 1, f"n{k}b")), f"n{k}", axis=3)
        else:
            x = m.op(kind, (x,), f"n{k}")
    p = m.op("reshape", (m.avgpool(x, 2, "pool"),), "flat", shape=(1, 16))
    g = m.graph([m.op("softmax", (m.fc(p, 5, "fc"),), "probs", beta=1.0)])
    return quantize_graph(g, g.name + "_int8") if int8 else g


def _rename(g: Graph, length: int = NAME_BYTES) -> tuple[Graph, list[str]]:
    """`g` with every tensor named placeholder(i, length); the placeholders in order."""
    new = {name: placeholder(i, length) for i, name in enumerate(g.tensors)}
    tensors = {new[k]: t.replace(name=new[k]) for k, t in g.tensors.items()}
    nodes = tuple(n.replace(inputs=tuple(new.get(i, i) for i in n.inputs), outputs=tuple(new[o] for o in n.outputs))
                  for n in g.nodes)
    return verify(Graph(g.name, tensors, nodes, tuple(new[i] for i in g.inputs),
                        tuple(new[o] for o in g.outputs))), list(new.values())


def _tflite_model(seed: int, int8: bool, length: int = NAME_BYTES, ops: int = CHAIN_OPS) -> tuple[bytes, list[str]]:
    g, names = _rename(_chain_tflite(seed, int8, ops), length)
    return write_tflite(g), names


def _onnx_model(seed: int, length: int = NAME_BYTES, ops: int = CHAIN_OPS) -> tuple[bytes, list[str]]:
    """A float ONNX chain (Conv, Relu, Add, Mul, Sigmoid, Tanh, MaxPool, Flatten, Gemm, Softmax)
    with placeholder node, value, initializer and graph names."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    pick = random.Random(seed)
    k = iter(range(10**6))
    nodes, inits = [], []

    def name() -> str:
        return placeholder(next(k), length)

    def init(arr) -> str:
        n = name()
        inits.append(numpy_helper.from_array(np.asarray(arr, np.float32), n))
        return n

    x = name()
    graph_in = helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 3, 6, 6])
    cur, ch = x, 3
    for i in range(ops // 2):
        kind = pick.choice(["Conv", "Relu", "Add", "Mul", "Sigmoid", "Tanh"])
        out = name()
        if kind == "Conv":
            w, b = init(rng.normal(0, 0.5, (4, ch, 3, 3))), init(rng.normal(0, 0.1, 4))
            nodes.append(helper.make_node("Conv", [cur, w, b], [out], name=name(), pads=[1, 1, 1, 1]))
            ch = 4
        elif kind in ("Add", "Mul"):
            nodes.append(helper.make_node(kind, [cur, init(rng.uniform(0.5, 1.5, (1, ch, 1, 1)))], [out], name=name()))
        else:
            nodes.append(helper.make_node(kind, [cur], [out], name=name()))
        cur = out
    pooled, flat, logits, probs = name(), name(), name(), name()
    nodes += [helper.make_node("MaxPool", [cur], [pooled], name=name(), kernel_shape=[2, 2], strides=[2, 2]),
              helper.make_node("Flatten", [pooled], [flat], name=name()),
              helper.make_node("Gemm", [flat, init(rng.normal(0, 0.3, (5, ch * 9))), init(rng.normal(0, 0.1, 5))],
                               [logits], name=name(), transB=1),
              helper.make_node("Softmax", [logits], [probs], name=name())]
    graph_name = name()
    g = helper.make_graph(nodes, graph_name, [graph_in], [helper.make_tensor_value_info(probs, TensorProto.FLOAT,
                                                                                         [1, 5])], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    return model.SerializeToString(), [placeholder(i, length) for i in range(next(k))]


# --- the checks -----------------------------------------------------------------------------------

_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'')
_TOKEN = re.compile(r"[A-Za-z_]\w*|\d[\w.]*|\S")


def _code_tokens(project_dir: Path) -> dict[str, list[str]]:
    """Each generated .c file of a project after the preprocessor, string literals taken out,
    as tokens."""
    incs = [f"-I{project_dir / d}" for d in (".", "model", "runtime/include", "runtime/agent", "runtime/kernels")]
    incs += [f"-I{d}" for d in (project_dir / "board").rglob("*") if d.is_dir()]
    out = {}
    for rel in ("model/model.c", "model/model_weights.c", "main.c", "test_input.c"):
        if not (project_dir / rel).is_file():
            continue
        pre = subprocess.run(["cc", "-E", "-P", "-std=c99", "-Wall", "-Wextra", "-Werror", "-Wcomment",
                              "-Wtrigraphs", *incs, str(project_dir / rel)], capture_output=True, text=True)
        assert pre.returncode == 0, f"{rel}: {pre.stderr[:3000]}"
        # Numbers are compared as "0": the memory planner breaks ties by name, so arena offsets
        # may differ; a name that got out would still add or change a token.
        out[rel] = ["0" if t[0].isdigit() else t for t in _TOKEN.findall(_STRING.sub('""', pre.stdout))]
    return out


def _compile(model: Path, tmp: Path, tag: str, agent: bool, board=HOST) -> tuple[dict, dict]:
    """Compile `model` for `board` (the host's by default) and generate its project; its code
    tokens and its reference outputs for a fixed input."""
    art = tmp / f"art-{tag}"
    compiled = compile_model(model, board, art)
    g = compiled.graph
    feed = {n: np.random.default_rng(0).uniform(-1, 1, g.tensors[n].shape).astype(g.tensors[n].dtype)
            if g.tensors[n].dtype == "float32" else
            np.random.default_rng(0).integers(-128, 128, g.tensors[n].shape).astype(np.int8) for n in g.inputs}
    outs = interp.run(g, feed)
    proj = tmp / f"proj-{tag}"
    project.generate(art, board, proj, None if agent else [feed[n] for n in g.inputs],
                     project.BuildOptions(agent=agent, emulate=board is not HOST))
    return _code_tokens(proj), [outs[o] for o in g.outputs]


def _check_model(data: bytes, placeholders: list[str], suffix: str, seed: int, tmp: Path, agent: bool) -> int:
    """Compile the model with plain and with hostile names and compare; returns names used."""
    hostile = hostile_names(random.Random(seed), len(placeholders))
    plain, evil = tmp / f"plain{suffix}", tmp / f"evil{suffix}"
    plain.write_bytes(data)
    evil.write_bytes(patch(data, dict(zip(placeholders, hostile))))
    plain_code, plain_out = _compile(plain, tmp, "plain", agent)
    evil_code, evil_out = _compile(evil, tmp, "evil", agent)
    assert evil_code == plain_code, "hostile names changed the code outside comments and string literals"
    for a, b in zip(plain_out, evil_out):
        np.testing.assert_array_equal(a, b)
    shown = run_cli_inprocess("inspect", evil)
    assert shown.returncode == 0, shown.stderr
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]",
                         shown.stdout + shown.stderr)
    return len(placeholders)


def _run_reader(make, suffix: str, total: int, tmp_path_factory) -> None:
    done, seed = 0, 0
    while done < total:
        data, placeholders = make(seed)
        tmp = tmp_path_factory.mktemp(f"names{suffix[1:]}{seed}")
        done += _check_model(data, placeholders, suffix, 1000 + seed, tmp, agent=seed % 3 == 2)
        seed += 1


def test_tflite_names_never_become_code(tmp_path_factory):
    _run_reader(lambda s: _tflite_model(s, int8=s % 2 == 1), ".tflite", NAMES_PER_READER, tmp_path_factory)


def test_onnx_names_never_become_code(tmp_path_factory):
    _run_reader(_onnx_model, ".onnx", NAMES_PER_READER, tmp_path_factory)


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".tflite", ".onnx"])
def test_many_more_names(suffix, tmp_path_factory):
    make = (lambda s: _tflite_model(100 + s, int8=s % 2 == 1)) if suffix == ".tflite" else \
        (lambda s: _onnx_model(100 + s))
    _run_reader(make, suffix, SLOW_NAMES_PER_READER, tmp_path_factory)


def _staged(model: Path, tmp: Path, tag: str) -> tuple[dict, str]:
    """`model` compiled for the M4 twin with its first chain of layers as a patch stage (named
    by its layers' own names) and weights copied to RAM: the project's code tokens and the
    memory report."""
    from microcompile.compiler.compile import compile_graph, read_model
    from microcompile.compiler.options import CompileOptions
    from microcompile.report.memory import format_memory
    from microcompile.transform import pipeline
    from microcompile.transform.patch_stage import StageSpec, chains

    board = load_board("mps2-an386")
    g = pipeline.run(read_model(model))
    chain = next(c for c in chains(g) if len(c) >= 2)
    spec = StageSpec(chain[0].name, chain[-1].name, g.tensors[chain[-1].outputs[0]].shape[1])
    art = tmp / f"art-{tag}"
    compiled = compile_graph(g, board, art, CompileOptions(patch=spec, weights_in_ram=2048))
    assert sum(n.op == "patch_stage" for n in compiled.graph.nodes) == 1 and compiled.ram_weights.banks
    proj = tmp / f"proj-{tag}"
    project.generate(art, board, proj, None, project.BuildOptions(agent=True, emulate=True))
    return _code_tokens(proj), format_memory(compiled)


def test_names_in_a_patch_stage_and_weights_in_ram_never_become_code(tmp_path):
    """The stage's layer names (its node, the kernel comment, inspect --memory's stage line) and
    the copied weights' comments: the same code as with plain names, nothing raw on the terminal."""
    for seed in range(3):
        # ONNX: the layers are named by the model's node names (TFLite's are ours, conv_2d_3)
        data, placeholders = _onnx_model(20 + seed)
        plain, evil = tmp_path / f"plain{seed}.onnx", tmp_path / f"evil{seed}.onnx"
        plain.write_bytes(data)
        evil.write_bytes(patch(data, dict(zip(placeholders, hostile_names(random.Random(seed), len(placeholders))))))
        plain_code, _ = _staged(plain, tmp_path, f"plain{seed}")
        evil_code, report = _staged(evil, tmp_path, f"evil{seed}")
        assert evil_code == plain_code, "hostile names changed the code outside comments and string literals"
        assert "patch stage (--patch" in report and "weights copied to RAM" in report
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]", report)


def test_names_never_become_code_through_the_helium_kernels(tmp_path):
    """int8 chains compiled for the Cortex-M55, whose whole-layer conv and depthwise kernels and
    vector ADD carry the layers' constants and comments of their own: the same code tokens with
    hostile names as with plain ones."""
    board = load_board("mps3-an547")
    kernels = set()
    for seed in range(4):
        data, placeholders = _tflite_model(seed, int8=True)
        plain, evil = tmp_path / f"plain{seed}.tflite", tmp_path / f"evil{seed}.tflite"
        plain.write_bytes(data)
        evil.write_bytes(patch(data, dict(zip(placeholders, hostile_names(random.Random(seed), len(placeholders))))))
        plain_code, _ = _compile(plain, tmp_path, f"m55-plain{seed}", False, board)
        evil_code, _ = _compile(evil, tmp_path, f"m55-evil{seed}", False, board)
        assert evil_code == plain_code, "hostile names changed the code outside comments and string literals"
        model_c = (tmp_path / f"proj-m55-evil{seed}" / "model" / "model.c").read_text()
        kernels |= {k for k in ("mc_conv_rq_mve_s8", "mc_depthwise_layer_mve_s8", "mc_add_tables_mve_s8")
                    if f"{k}(" in model_c}
    assert kernels, "no chain reached the Helium whole-layer kernels"


def test_names_in_a_tuned_patch_choice_round_trip_and_reach_the_terminal_escaped(tmp_path):
    """A tuning record's patch choice holds the stage's layer names exactly (a name may hold ':' or
    '@', which the --patch spelling cannot carry): compiled with it, the hostile model takes the
    same stage; what `--records` and `tune` print of it carries no control, bidi or invisible
    character."""
    from types import SimpleNamespace

    from microcompile.autotune import patch_search
    from microcompile.autotune.records import Outcome, Selection, environment, tuned_summary
    from microcompile.compiler.compile import optimized, read_model
    from microcompile.compiler.options import CompileOptions
    from microcompile.compiler.patches import patch_key, patch_trace
    from microcompile.transform.patch_stage import StageSpec, chains

    board = load_board("mps2-an386")
    bad = r"[\x00-\x08\x0b-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]"
    for seed in range(3):
        data, placeholders = _onnx_model(30 + seed)
        evil = tmp_path / f"evil{seed}.onnx"
        # --patch's separators first in every name (its last two bytes dropped, keeping it distinct)
        names = [b":@" + n[:-2] for n in hostile_names(random.Random(seed), len(placeholders))]
        evil.write_bytes(patch(data, dict(zip(placeholders, names))))
        g = optimized(read_model(evil))
        chain = next(c for c in chains(g) if len(c) >= 2)
        assert ":" in chain[0].name and "@" in chain[-1].name
        spec = StageSpec(chain[0].name, chain[-1].name, g.tensors[chain[-1].outputs[0]].shape[1])
        compiled = compile_model(evil, board, tmp_path / f"art{seed}",
                                 CompileOptions(tuned={patch_key(g): patch_trace(spec)}))
        stage = next(n for n in compiled.graph.nodes if n.op == "patch_stage")
        body = stage.attrs["body"]
        assert (body.nodes[0].name, body.nodes[-1].name) == (chain[0].name, chain[-1].name)
        assert compiled.patch.mode.endswith("(tuned)")
        assert not re.search(bad, tuned_summary(compiled, Selection()))

        said, written = [], []
        measurer = SimpleNamespace(default=SimpleNamespace(source=evil, options=CompileOptions()),
                                   whole=lambda options: (Outcome("ok", count=100, unit="instructions"), 1000))
        workload = patch_search.PatchWorkload(patch_key(g))
        original = patch_search.choices
        patch_search.choices = lambda source, options: (workload, ["off", spec])
        try:
            got = patch_search.search(measurer, SimpleNamespace(write=written.append), environment(board), "m", [],
                                      said.append)
        finally:
            patch_search.choices = original
        assert got == "off" and len(written) == 2 and len(said) >= 4
        assert not re.search(bad, "\n".join(said))


# --- built and run ---------------------------------------------------------------------------------

def _file_name(rng: random.Random) -> str:
    """A hostile file stem (the model's name for a TFLite file): any byte but NUL and '/'."""
    stem = bytes(b for b in hostile_names(rng, 1)[0] if b not in (0, ord("/"))) or b"x"
    return os.fsdecode(stem)


@pytest.mark.parametrize("case", ["tflite_float", "tflite_int8", "onnx"])
def test_hostile_names_build_with_werror_and_match_on_the_host(case, tmp_path):
    rng = random.Random(hash(case) & 0xFFFF)
    data, placeholders = _onnx_model(7) if case == "onnx" else _tflite_model(7, int8=case == "tflite_int8")
    suffix = ".onnx" if case == "onnx" else ".tflite"
    model = tmp_path / (_file_name(rng) + suffix)
    model.write_bytes(patch(data, dict(zip(placeholders, hostile_names(rng, len(placeholders))))))
    models = [model]
    if case != "tflite_int8":   # quantize keeps the names: its .tflite is deployed too
        shape = (1, 3, 6, 6) if case == "onnx" else (1, 4, 4, 3)
        np.save(tmp_path / "calib.npy", np.random.default_rng(0).uniform(-1, 1, (8, *shape[1:])).astype(np.float32))
        q = run_cli("quantize", model, "--calibration", tmp_path / "calib.npy", "-o", tmp_path / "q.tflite",
                    timeout=300)
        assert q.returncode == 0, q.stdout + q.stderr
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", q.stdout + q.stderr)
        models.append(tmp_path / "q.tflite")
    for k, (m, agent) in enumerate((m, a) for m in models for a in ((), ("--agent",))):
        p = run_cli("deploy", m, "--board", "host", *agent, "-o", tmp_path / f"p{k}", timeout=300)
        assert p.returncode == 0, p.stdout + p.stderr
        assert "outputs match reference: yes" in p.stdout
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", p.stdout + p.stderr)


@pytest.mark.qemu
def test_hostile_names_build_and_match_on_the_cortex_m4_twin(tmp_path):
    rng = random.Random(11)
    data, placeholders = _tflite_model(8, int8=True)
    model = tmp_path / (_file_name(rng) + ".tflite")
    model.write_bytes(patch(data, dict(zip(placeholders, hostile_names(rng, len(placeholders))))))
    p = run_cli("deploy", model, "--board", "mps2-an386", "--emulate", "-o", tmp_path / "p", timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "outputs match reference: yes" in p.stdout


# --- the cases seen: each failed before names were escaped ---------------------------------------

_CONSTRUCTOR = (b"*\\\n/ __attribute__((constructor)) static void mc_pwn(void) { extern int system(const char *); "
                b"system(\"touch INJECTED\"); } /*")
SEEN = {
    "constructor": _CONSTRUCTOR,                                      # ran system() during deploy --board host
    "error": b"*\\\n/\n#error injected\n/*",                           # #error fired
    "include": b"*\\\n/\n#include \"/etc/hostname\"\n/*",              # printed a file into the build log
    "global": b"*\\\n/ int mc_injected_global = 42; /*",              # landed in model.o
    "tf_name": b"model/conv2d/*",                                     # -Werror=comment: make failed
    "bidi": "layer\u202e\u2066zero\u200bwidth".encode(),               # -Werror=bidi-chars: make failed
    "terminal": b"\x1b[2J\x1b[31mred\x1b]0;title\x07",                  # inspect printed the escapes raw
}


@pytest.mark.parametrize("where", ["tflite tensor", "onnx tensor", "onnx node"])
@pytest.mark.parametrize("payload", sorted(SEEN))
def test_a_name_seen_in_the_wild_stays_a_name(where, payload, tmp_path):
    name = SEEN[payload]
    # (short chains: one name is under test, and each case is a whole `deploy` in a new process)
    if where.startswith("tflite"):
        data, placeholders = _tflite_model(3, int8=False, length=len(name), ops=12)
        target = placeholders[5]                   # an activation between two layers
    else:
        import onnx
        data, _ = _onnx_model(3, length=len(name), ops=8)
        second = onnx.load_model_from_string(data).graph.node[1]
        target = second.output[0] if where == "onnx tensor" else second.name
    model = tmp_path / f"m.{where.split()[0]}"
    model.write_bytes(patch(data, {target: name}))
    # Run in tmp_path, where the injected `touch INJECTED` would leave its file.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    p = run_cli("deploy", model, "--board", "host", "-o", tmp_path / "p", cwd=tmp_path, env=env, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "outputs match reference: yes" in p.stdout
    assert not (tmp_path / "INJECTED").exists() and not (tmp_path / "p" / "INJECTED").exists()
    syms = subprocess.run(["nm", tmp_path / "p" / "build" / "host" / "model" / "model.o"], capture_output=True,
                          text=True, check=True).stdout
    assert "mc_injected" not in syms and "mc_pwn" not in syms
    hostname = Path("/etc/hostname").read_text().strip() if Path("/etc/hostname").is_file() else None
    if hostname:
        assert hostname not in p.stdout + p.stderr
    shown = run_cli_inprocess("inspect", model, "--memory")     # the memory table lists tensors by name
    assert shown.returncode == 0, shown.stderr
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f\u200b\u202e\u2066]", shown.stdout + shown.stderr)



def test_onnx_names_that_are_not_utf8_and_collide_are_refused(tmp_path):
    """Two value names that differ only in invalid UTF-8 read alike (U+FFFD): refused, since
    ONNX values are found by name (a silently merged pair would wire the wrong tensor)."""
    data, placeholders = _onnx_model(5)
    import onnx
    g = onnx.load_model_from_string(data).graph
    a, b = g.node[0].output[0], g.node[1].output[0]
    model = tmp_path / "m.onnx"
    model.write_bytes(patch(data, {a: b"\xff" * NAME_BYTES, b: b"\xfe" * NAME_BYTES}))
    p = run_cli_inprocess("inspect", model)
    assert p.returncode == 2
    assert "value names that are not valid UTF-8 and become equal" in p.stderr
