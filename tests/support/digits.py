"""The demo's digits MLP (examples/digits/make_model.py): data, training and the graph."""

from .examples import load

_script = load("examples/digits/make_model.py")
build_graph = _script.build_graph
load_digits_split = _script.load_digits_split
predict = _script.predict
train = _script.train
