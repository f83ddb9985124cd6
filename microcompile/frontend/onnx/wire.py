"""A few fields of an ONNX file read straight from the protobuf wire format.

For the one file protobuf itself refuses to decode although it is well formed: a model
whose subgraphs (If/Loop/Scan bodies) nest deeper than protobuf's limit of 100 messages.
To name the op in the message, `node_with_subgraph` walks the top-level graph's nodes and
their attributes, one level each: it never descends into a subgraph, so its work is linear
in the file's size, whatever the nesting.
"""

from __future__ import annotations

# onnx.proto field numbers.
_MODEL_GRAPH, _GRAPH_NODE = 7, 1
_NODE_NAME, _NODE_OP_TYPE, _NODE_ATTRIBUTE = 3, 4, 5
_ATTRIBUTE_G, _ATTRIBUTE_GRAPHS = 6, 11
_LENGTH_DELIMITED = 2


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


def _fields(data: bytes, start: int, end: int):
    """(field number, (start, end) of the payload) of every length-delimited field of the
    message in data[start:end]; other fields are skipped. ValueError/IndexError when cut."""
    pos = start
    while pos < end:
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, pos = _varint(data, pos)
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        elif wire == _LENGTH_DELIMITED:
            n, pos = _varint(data, pos)
            if pos + n > end:
                raise ValueError("field past the end of its message")
            yield number, (pos, pos + n)
            pos += n
        else:
            raise ValueError(f"wire type {wire}")
    if pos != end:
        raise ValueError("message cut inside a field")


def node_with_subgraph(data: bytes) -> tuple[str, str] | None:
    """(op type, node name) of the first top-level node that has a graph attribute, or None
    (also when the bytes are not a readable ModelProto)."""
    try:
        for number, (gs, ge) in _fields(data, 0, len(data)):
            if number != _MODEL_GRAPH:
                continue
            for number, (ns, ne) in _fields(data, gs, ge):
                if number != _GRAPH_NODE:
                    continue
                op_type = name = ""
                has_graph = False
                for number, (fs, fe) in _fields(data, ns, ne):
                    if number == _NODE_OP_TYPE:
                        op_type = data[fs:fe].decode("utf-8", "replace")
                    elif number == _NODE_NAME:
                        name = data[fs:fe].decode("utf-8", "replace")
                    elif number == _NODE_ATTRIBUTE:
                        has_graph |= any(n in (_ATTRIBUTE_G, _ATTRIBUTE_GRAPHS) for n, _ in _fields(data, fs, fe))
                if has_graph:
                    return op_type, name
    except (ValueError, IndexError):
        return None
    return None
