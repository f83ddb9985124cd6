"""Identical kernels are emitted once.

arm-none-eabi-gcc 12.2 (Debian's, the one CI installs) at -O2 miscompiles two identical static
functions whose addresses are both taken: its identical-code folding turns the second into an
empty function (`bx lr`), so a model with two identical kernels (two attention blocks' K
transposes at the same arena offsets, found in the keyword transformer) computed a wrong answer
on every Cortex-M twin while the host was right (two copies of one transpose loop, static,
both in a function table, are enough to see it in `arm-none-eabi-objdump -d`). The code
generator now emits each distinct kernel body once and lets the kernel table name it again;
tests/quantization/test_transformer_ptq.py runs the model that showed it on the M4 twin."""

from __future__ import annotations

from microcompile.codegen.model_emitter import _body_key


def test_the_body_key_ignores_names_and_comments_but_not_data():
    a = ("/* k1 */\nstatic const p_t mc_k1_sm_params0 = {.rows = 200};\n"
         "static void mc_k1_sm(uint8_t *arena)\n{\n    f(mc_k1_w, &mc_k1_sm_params0);\n}\n")
    b = a.replace("k1", "k7").replace("/* k7 */", "/* another layer */")
    assert _body_key(a, "mc_k1_sm") == _body_key(b.replace("mc_k7_w", "mc_k1_w"), "mc_k7_sm")
    assert _body_key(a, "mc_k1_sm") != _body_key(b, "mc_k7_sm")                 # other weights
    assert _body_key(a, "mc_k1_sm") != _body_key(a.replace("200", "100"), "mc_k1_sm")   # other params
