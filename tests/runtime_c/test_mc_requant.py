"""runtime_c/include/mc_requant.h against mc_fixedpoint.h's reference forms, in C on the
host: every fast form must equal mc_mul_by_qm (gemmlowp double rounding) on its domain,
for edge values (ties, INT32 extremes, zero) and a million random (x, mult, shift)."""

from __future__ import annotations

import subprocess

from microcompile.resources import resource_dir

PROGRAM = r"""
#include <stdio.h>
#include "mc_fixedpoint.h"
#include "mc_requant.h"

static uint32_t state = 12345u;
static uint32_t rnd(void) { state = state * 1664525u + 1013904223u; return state ^ (state >> 15); }

static int check(int32_t x, int32_t m, int32_t s)
{
    const int32_t want = mc_mul_by_qm(x, m, s);
    int bad = mc_mul_by_qm_pos(x, m, s) != want;
    if (s <= 0)
        bad |= mc_mul_by_qm_pos_right(x, m, -s) != want;
    if (s <= -1 && x < (1 << 30) && x > -(1 << 30))
        bad |= mc_mul_by_qm_pos_rshift(x, m, -s) != want;
    if (bad)
        printf("mismatch x=%ld m=%ld s=%ld\n", (long)x, (long)m, (long)s);
    return bad;
}

int main(void)
{
    static const int32_t xs[] = {0, 1, -1, 2, -2, 3, -3, 127, -128, (1 << 29) - 1, -(1 << 29), (1 << 30) - 1,
                                 -(1 << 30) + 1, INT32_MAX, INT32_MIN, INT32_MIN + 1};
    static const int32_t ms[] = {0, 1 << 30, (1 << 30) + 1, INT32_MAX, 1518500250};
    int bad = 0;
    for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++)
        for (unsigned j = 0; j < sizeof ms / sizeof ms[0]; j++)
            for (int32_t s = -31; s <= 0; s++)
                bad += check(xs[i], ms[j], s);
    for (long k = 0; k < 1000000; k++) {
        const int32_t m = (int32_t)((1u << 30) | (rnd() & 0x3fffffffu));
        const int32_t s = -(int32_t)(rnd() % 32u) + (k % 10 == 0 ? 8 : 0);
        const int32_t x = (k & 1) ? (int32_t)rnd() : (int32_t)rnd() >> (rnd() % 31u);
        /* a left shift must not overflow, as in every real kernel */
        if (s > 0 && (x > (INT32_MAX >> s) || x < (INT32_MIN >> s)))
            continue;
        /* exact ties of the final rounding: x * m a multiple of 2^(31 - s - 1) */
        bad += check(x, m, s);
        bad += check((int32_t)(rnd() % 4096u) - 2048, 1 << 30, -(int32_t)(rnd() % 12u));
    }
    return bad != 0;
}
"""


def test_fast_requant_equals_double_rounding(tmp_path):
    (tmp_path / "t.c").write_text(PROGRAM)
    inc = resource_dir("runtime_c") / "include"
    subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-I", str(inc), "t.c", "-o", "t"],
                   cwd=tmp_path, check=True)
    r = subprocess.run([str(tmp_path / "t")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[:2000]


def test_smmulr_form_of_the_high_multiply():
    """mc_requant_dsp.h computes mc_srdhm_pos(x, m) = floor((x*m + 2^30) / 2^31) as SMMULR(2x, m)
    = floor((2x*m + 2^31) / 2^32) (ARM ARM: SMMULR adds 0x80000000 to the 64-bit product and
    keeps the high word) for |x| < 2^30, m >= 0; the QEMU model tests run it for real."""
    import random

    rng = random.Random(7)
    values = [0, 1, -1, (1 << 30) - 1, -(1 << 30) + 1] + [rng.randrange(-(1 << 30) + 1, 1 << 30) for _ in range(20000)]
    mults = [0, 1 << 30, (1 << 31) - 1] + [rng.randrange(0, 1 << 31) for _ in range(200)]
    for k, x in enumerate(values):
        m = mults[k % len(mults)]
        assert -(1 << 31) <= 2 * x < (1 << 31)
        assert (2 * x * m + (1 << 31)) >> 32 == (x * m + (1 << 30)) >> 31, (x, m)


EVEN_PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include "mc_fixedpoint.h"

int main(int argc, char **argv)
{
    for (int a = 1; a + 2 < argc; a += 3) {
        const int32_t x = (int32_t)atol(argv[a]), m = (int32_t)atol(argv[a + 1]), s = (int32_t)atol(argv[a + 2]);
        printf("%ld\n", (long)mc_mul_by_qm_single_round_even(x, m, s));
    }
    return 0;
}
"""


def test_single_round_even_is_onnx_rounding(tmp_path):
    """mc_mul_by_qm_single_round_even (C) and its Python twin equal the exact value
    x * m * 2^(s-31) rounded half to even (Python's round of a Fraction), ties included."""
    from fractions import Fraction

    import numpy as np

    from microcompile.ir import fixedpoint as fp

    rng = np.random.default_rng(3)
    triples = []
    for _ in range(400):
        s = int(rng.integers(-20, 2))
        m = int(rng.integers(1 << 30, 1 << 31))
        triples.append((int(rng.integers(-(1 << 24), 1 << 24)), m, s))
    for s in (-31, -30, -16, -1, 0, 1, 2, 30):    # both halves of the C (total >= 32 and below), extremes
        for x in (-(1 << 31), (1 << 31) - 1, -(1 << 30), (1 << 30) + 1, -3, 5):
            triples += [(x, m, s) for m in (1 << 30, (1 << 31) - 1, 1518500250)
                        if abs(x * m * 2 ** s) < 2 ** 62]    # within the int32 result's reach
    for k in range(-12, 13):        # exact ties: m = 2^30 makes x * 2^(s-1) a half for odd x at s = 0
        triples += [(k, 1 << 30, 0), (k, 1 << 30, -1), (2 * k + 1, 1 << 30, -1), (k, 3 << 28, -2)]
    (tmp_path / "t.c").write_text(EVEN_PROGRAM)
    inc = resource_dir("runtime_c") / "include"
    subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-I", str(inc), "t.c", "-o", "t"],
                   cwd=tmp_path, check=True)
    out = subprocess.run([str(tmp_path / "t"), *[str(v) for t in triples for v in t]], capture_output=True,
                         text=True, check=True).stdout.split()
    ties = 0
    for (x, m, s), c in zip(triples, out):
        exact = Fraction(x * m, 2 ** (31 - s))
        ties += exact.denominator == 2
        want = round(exact)              # half to even
        assert int(c) == want, (x, m, s, c, want)
        assert int(fp.multiply_by_quantized_multiplier_single_round_even(x, m, s)) == want, (x, m, s)
    assert ties >= 12, "the plan must hold exact ties"
