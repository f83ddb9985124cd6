"""Sink TRANSPOSEs through layout-agnostic ops and cancel inverse pairs.

Importers that wrap NHWC ops in layout transposes (the ONNX reader: NCHW model, NHWC
conv) leave chains like conv -> T(NCHW) -> relu -> T(NHWC) -> conv. This pass rewrites
them until no transpose is left that the model does not need:

1. T_q(T_p(x)) -> one transpose of x (perm p[q]); an identity transpose disappears.
2. A layout-agnostic node whose every runtime input is T_p(.) (same p) runs on the
   untransposed inputs instead, followed by one T_p per output: elementwise ops (their
   constant operands are permuted), and ops with axis attributes (concatenation,
   split_v, mean, pad, softmax over an unmoved last axis) with the axes remapped.
3. A transpose that only moves size-1 dims becomes a reshape (a view: no code).

Every rewrite moves a transpose strictly toward the outputs, so the loop terminates.
Requires nothing; the result computes bit-identical values (only data movement changes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import Graph, Node, Tensor, ops


def _layout(op: str) -> str | None:
    """The op's layout trait: "elementwise" (any permutation of all operands commutes with
    it), "axis" (axis attributes to remap) or None (layout-sensitive)."""
    return ops.get(op).layout


@dataclass(frozen=True)
class CancelTransposes:
    name: str = "cancel_transposes"

    def __call__(self, g: Graph) -> Graph:
        s = _State(g)
        while s.merge_once() or s.sink_once():
            pass
        s.views()
        return s.graph()


class _State:
    def __init__(self, g: Graph):
        self.g = g
        self.tensors = dict(g.tensors)
        self.nodes = list(g.nodes)
        self.outputs = list(g.outputs)
        self._k = 0

    def graph(self) -> Graph:
        self.sweep()
        used = set(self.outputs) | set(self.g.inputs) | {x for n in self.nodes for x in (*n.inputs, *n.outputs)}
        return self.g.replace(nodes=self.nodes, tensors={k: t for k, t in self.tensors.items() if k in used})

    def fresh(self, base: str) -> str:
        while True:
            self._k += 1
            name = f"{base}_t{self._k}"
            if name not in self.tensors and all(n.name != name for n in self.nodes):
                return name

    def index(self) -> None:
        """Who writes each value, for the pass about to scan the nodes (each pass returns at its
        first rewrite, so the index stays exact while it scans): a lookup per operand instead of
        a scan of every node, which made a long chain quadratic."""
        self._producers = {o: n for n in self.nodes for o in n.outputs}

    def producer(self, name: str) -> Node | None:
        return self._producers.get(name)

    def readers(self, name: str) -> list[Node]:
        return [n for n in self.nodes if name in n.inputs]

    # --- 1. merge and drop ---------------------------------------------------------------
    def sweep(self) -> None:
        """Drop the transposes nothing reads any more (merged or sunk ones), so that a value's
        reader list is exact. Other dead nodes are remove_dead's business."""
        live = set(self.outputs)
        kept = []
        for n in reversed(self.nodes):
            if n.op != "transpose" or any(o in live for o in n.outputs):
                kept.append(n)
                live.update(i for i in n.inputs if i)
        self.nodes = kept[::-1]

    def merge_once(self) -> bool:
        self.sweep()
        self.index()
        for k, n in enumerate(self.nodes):
            if n.op != "transpose":
                continue
            p = self.producer(n.inputs[0])
            if p is not None and p.op == "transpose":
                perm = tuple(p.attrs["perm"][q] for q in n.attrs["perm"])
                self.nodes[k] = n.replace(inputs=p.inputs, attrs=dict(n.attrs, perm=perm))
                return True
            if tuple(n.attrs["perm"]) == tuple(range(len(n.attrs["perm"]))):
                out, src = n.outputs[0], n.inputs[0]
                p = self.producer(src)
                if out in self.outputs and p is not None and src not in self.outputs and self.readers(src) == [n]:
                    # The producer writes the graph output directly.
                    del self.nodes[k]
                    self.nodes[self.nodes.index(p)] = p.replace(outputs=tuple(out if o == src else o
                                                                              for o in p.outputs))
                    return True
                if out in self.outputs:   # an input or shared value: a view keeps the output's name
                    self.nodes[k] = Node("reshape", n.name, n.inputs, n.outputs,
                                         {"shape": self.tensors[out].shape}, n.origin)
                    return True
                del self.nodes[k]
                self.nodes = [m.replace(inputs=tuple(src if i == out else i for i in m.inputs)) for m in self.nodes]
                return True
        return False

    # --- 2. sink -------------------------------------------------------------------------
    def sink_once(self) -> bool:
        self.index()
        for k, n in enumerate(self.nodes):
            if _layout(n.op) is None:
                continue
            perm = self._common_perm(n)
            if perm is None:
                continue
            rewritten = self._sink(n, perm)
            if rewritten is None:
                continue
            self.nodes[k:k + 1] = rewritten
            return True
        return False

    def _common_perm(self, n: Node):
        perm, runtime = None, 0
        for i in n.inputs:
            if not i or self.tensors[i].is_const:
                continue
            p = self.producer(i)
            if p is None or p.op != "transpose":
                return None
            if perm is not None and tuple(p.attrs["perm"]) != perm:
                return None
            perm, runtime = tuple(p.attrs["perm"]), runtime + 1
        return perm if runtime else None

    def _sink(self, n: Node, perm: tuple[int, ...]) -> list[Node] | None:
        rank = len(perm)
        inv = tuple(int(i) for i in np.argsort(perm))
        attrs = dict(n.attrs)
        out_perm = perm
        if n.op in ("concatenation", "split_v"):
            attrs["axis"] = perm[n.attrs["axis"] % rank]
        elif n.op in ("softmax", "log_softmax"):
            if perm[-1] != rank - 1:
                return None
        elif n.op in ("pad", "pad_v2"):
            attrs["pads"] = tuple(n.attrs["pads"][inv[d]] for d in range(rank))
        elif n.op in ("mean", "reduce_max"):
            axes = tuple(sorted(perm[a] for a in n.attrs["axes"]))
            attrs["axes"] = axes
            if not n.attrs.get("keep_dims", False):
                kept_x = [d for d in range(rank) if d not in axes]           # x-layout dims left, in order
                kept_y = [perm[i] for i in range(rank) if i not in n.attrs["axes"]]
                out_perm = tuple(kept_x.index(d) for d in kept_y)
        inputs = []
        for i in n.inputs:
            if not i:
                inputs.append(i)
                continue
            t = self.tensors[i]
            if t.is_const:
                if len(t.shape) > rank or (_layout(n.op) != "elementwise" and len(t.shape) != rank):
                    return None
                data = t.data.reshape((1,) * (rank - len(t.shape)) + tuple(t.shape)).transpose(inv)
                name = self.fresh(i)
                self.tensors[name] = Tensor(name, tuple(data.shape), t.dtype, t.quant,
                                            np.ascontiguousarray(data))
                inputs.append(name)
            else:
                inputs.append(self.producer(i).inputs[0])
        if _layout(n.op) == "elementwise" and any(len(self.tensors[i].shape) != rank for i in n.inputs if i and
                                        not self.tensors[i].is_const):
            return None
        new_outs, after = [], []
        for o in n.outputs:
            t = self.tensors[o]
            src_shape = [0] * len(out_perm)
            for j, p in enumerate(out_perm):
                src_shape[p] = t.shape[j]
            name = self.fresh(o)
            self.tensors[name] = t.replace(name=name, shape=tuple(src_shape))
            new_outs.append(name)
            after.append(Node("transpose", self.fresh(n.name), (name,), (o,), {"perm": tuple(out_perm)},
                              n.origin))
        return [n.replace(inputs=tuple(inputs), outputs=tuple(new_outs), attrs=attrs)] + after

    # --- 3. views ------------------------------------------------------------------------
    def views(self) -> None:
        for k, n in enumerate(self.nodes):
            if n.op != "transpose":
                continue
            shape = self.tensors[n.inputs[0]].shape
            moved = [p for p in n.attrs["perm"] if shape[p] != 1]
            if moved == sorted(moved):
                self.nodes[k] = Node("reshape", n.name, n.inputs, n.outputs,
                                     {"shape": self.tensors[n.outputs[0]].shape}, n.origin)
