"""memory/banks.py: a plan split over RAM banks, as a pure function of the plan and the banks."""

import pytest

from microcompile.memory import BufferReq, MemoryPlan, Overlap, check_no_overlap
from microcompile.memory.banks import BankRoom, split_banks
from microcompile.memory.plan import best_offsets


def _plan(reqs, rules=()) -> MemoryPlan:
    end, offsets, name, tried = best_offsets(list(reqs), tuple(rules))
    return MemoryPlan(tuple(reqs), offsets, {}, end, max(b.last for b in reqs) + 1, tuple(rules), name, tried)


# x -> a -> b -> y, each 4 KiB live over two steps, with a conv's 1 KiB scratch at step 1.
CHAIN = [BufferReq("x", 4096, 0, 1), BufferReq("a", 4096, 1, 2), BufferReq("b", 4096, 2, 3),
         BufferReq("y", 4096, 3, 4), BufferReq("scratch:conv", 1024, 1, 1), BufferReq("tiny", 64, 0, 4)]


def _check(split: MemoryPlan, banks) -> None:
    """Every buffer in one bank, no two overlapping in a bank, each bank within its room."""
    for bank in banks:
        reqs = [b for b in split.buffers if split.banks.get(b.name, banks[0].name) == bank.name]
        rules = [o for o in split.overlaps if o.out in {r.name for r in reqs} and o.src in {r.name for r in reqs}]
        check_no_overlap(reqs, {r.name: split.offsets[r.name] for r in reqs}, rules)
        used = split.arena_bytes if bank is banks[0] else split.bank_bytes.get(bank.name, 0)
        assert used <= bank.room, (bank, used)


def test_split_keeps_pinned_in_primary_and_fits_each_bank():
    plan = _plan(CHAIN)
    assert plan.arena_bytes > 9 * 1024   # two 4 KiB tensors, the scratch and the tiny one live at once
    banks = [BankRoom("MAIN", 8192), BankRoom("OTHER", 8192)]
    split = split_banks(plan, banks, {"x", "y"})
    assert split is not None
    _check(split, banks)
    assert split.bank("x") == "" and split.bank("y") == ""      # the application's arena
    assert set(split.banks.values()) == {"OTHER"} and split.bank_bytes["OTHER"] > 0
    assert split.arena_bytes + split.bank_bytes["OTHER"] >= plan.lower_bound


def test_fast_bank_takes_scratch_and_small_buffers_first():
    banks = [BankRoom("MAIN", 16384), BankRoom("SRAM", 16384), BankRoom("DTCM", 2048, fast=True)]
    split = split_banks(_plan(CHAIN), banks, {"x", "y"})
    _check(split, banks)
    assert split.bank("scratch:conv") == "DTCM" and split.bank("tiny") == "DTCM"
    assert split.bank("a") != "DTCM" and split.bank("b") != "DTCM"    # 4 KiB: no room left there


def test_without_fast_preference_the_largest_go_first():
    banks = [BankRoom("MAIN", 16384), BankRoom("SRAM", 16384)]
    split = split_banks(_plan(CHAIN), banks, {"x", "y"})
    _check(split, banks)
    assert split.banks == {}                                      # the primary holds it all
    assert split.bank_bytes == {}


def test_too_small_together_is_none():
    # the 4 KiB tensors fill MAIN at every step, and OTHER cannot take the 1 KiB scratch
    assert split_banks(_plan(CHAIN), [BankRoom("MAIN", 8192), BankRoom("OTHER", 512)], {"x", "y"}) is None
    split = split_banks(_plan(CHAIN), [BankRoom("MAIN", 8192), BankRoom("OTHER", 2048)], {"x", "y"})
    assert split.banks == {"scratch:conv": "OTHER", "tiny": "OTHER"}
    # a pinned buffer that does not fit its bank
    assert split_banks(_plan(CHAIN), [BankRoom("MAIN", 2048), BankRoom("OTHER", 65536)], {"x"}) is None


def test_in_place_rule_across_banks_is_dropped_within_kept():
    reqs = [BufferReq("x", 4096, 0, 1), BufferReq("h", 4096, 1, 2), BufferReq("y", 4096, 2, 3)]
    rules = (Overlap("h", "x", 0), Overlap("y", "h", 0))
    plan = _plan(reqs, rules)
    assert plan.arena_bytes == 4096                               # all three in place
    split = split_banks(plan, [BankRoom("MAIN", 4096), BankRoom("OTHER", 4096)], {"x", "y"})
    assert split is not None and split.banks == {} and split.overlaps == rules
    # a fast bank takes h: both rules lose a buffer and are dropped; x and y, never live
    # together, still share their bytes
    split = split_banks(plan, [BankRoom("MAIN", 4096), BankRoom("DTCM", 4096, fast=True)], {"x", "y"})
    assert split.banks == {"h": "DTCM"} and split.overlaps == ()
    assert split.arena_bytes == 4096 and split.bank_bytes == {"DTCM": 4096}


@pytest.mark.parametrize("order", [0, 1])
def test_deterministic(order):
    reqs = CHAIN if order == 0 else CHAIN[::-1]
    banks = [BankRoom("MAIN", 8192), BankRoom("OTHER", 8192)]
    a, b = split_banks(_plan(reqs), banks, {"x", "y"}), split_banks(_plan(reqs), banks, {"x", "y"})
    assert a.offsets == b.offsets and a.banks == b.banks
