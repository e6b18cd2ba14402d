"""YAML as users write it in 2026: read with YAML 1.2's core schema, a key given twice refused.

PyYAML implements YAML 1.1, where ``Off``, ``on``, ``yes`` and ``NO`` are booleans and ``1e-3``
is a string: ``early_stopping_type: Off`` (SageMaker's value) read as ``False`` and was refused,
``values: [NO, SE]`` became ``[False, 'SE']`` on argv. ``load`` reads plain scalars as YAML 1.2
does (YAML 1.2.2, section 10.3.2): booleans are ``true``/``false`` (any of three cases), floats
include ``1e-3`` and ``1E5``, integers are decimal (``010`` is ten, not YAML 1.1's octal
eight), ``0o`` octal or ``0x`` hexadecimal, and ``1_000``, ``1:30`` and ``2024-01-01`` are
text (1.1: 1000, 90 and a date); everything else is as ``yaml.safe_load``. A mapping that
names a key twice is refused with the key and its line (YAML 1.2 requires keys to be unique;
PyYAML keeps the last silently, which dropped a user's first ``max_jobs``).
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode

BOOL_TAG = "tag:yaml.org,2002:bool"
FLOAT_TAG = "tag:yaml.org,2002:float"
INT_TAG = "tag:yaml.org,2002:int"
# YAML 1.1 resolvers YAML 1.2's core schema does not have: dates (``2024-01-01`` is text) and
# ``=`` (the "value" key); its integers are replaced by INT_1_2
DROPPED = {BOOL_TAG, FLOAT_TAG, INT_TAG, "tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:value"}
BOOL_1_2 = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
INT_1_2 = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
FLOAT_1_2 = re.compile(
    r"""^(?:[-+]?(?:(?:\.[0-9]+|[0-9]+\.[0-9]*)(?:[eE][-+]?[0-9]+)?|[0-9]+[eE][-+]?[0-9]+)
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
    re.VERBOSE,
)


class Loader(yaml.SafeLoader):
    """``yaml.SafeLoader`` with YAML 1.2's booleans and floats, and unique keys."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:  # an unhashable key: the safe constructor refuses it
                continue
            if duplicate:
                raise ConstructorError(
                    "while reading a mapping",
                    node.start_mark,
                    f"the key {key!r} is given twice (a key appears once in a mapping)",
                    key_node.start_mark,
                )
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        """YAML 1.2's integers: ``010`` is ten (1.1: eight), ``0o10`` eight, ``0x10`` sixteen;
        ``1_000`` and ``1:30`` (1.1: 1000 and 90) are not integers, so they stay text."""
        text = str(self.construct_scalar(node))
        if not INT_1_2.match(text):
            raise ConstructorError(
                None, None, f"{text!r} is not a YAML 1.2 integer", node.start_mark
            )
        if text.startswith("0o"):
            return int(text[2:], 8)
        return int(text, 16) if text.startswith("0x") else int(text, 10)


Loader.add_constructor(INT_TAG, Loader.construct_yaml_int)
Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in DROPPED]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
Loader.add_implicit_resolver(BOOL_TAG, BOOL_1_2, list("tTfF"))
Loader.add_implicit_resolver(INT_TAG, INT_1_2, list("-+0123456789"))
Loader.add_implicit_resolver(FLOAT_TAG, FLOAT_1_2, list("-+0123456789."))


MAX_EXPANDED_NODES = 1_000_000  # a document's nodes with every alias expanded, at most


def load(text: str) -> Any:
    """The YAML document in ``text`` (see the module contract); ``yaml.YAMLError`` if invalid,
    or if its aliases expand to more than ``MAX_EXPANDED_NODES`` nodes (nine levels of ten
    aliases each, a billion nodes, hung the reader instead of being refused)."""
    loader = Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        size = _expanded_size(node, {})
        if size > MAX_EXPANDED_NODES:
            raise yaml.YAMLError(
                f"the document expands to more than {MAX_EXPANDED_NODES:,} values through its "
                "aliases (*name): at most that many are read"
            )
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _expanded_size(node: yaml.Node, sizes: dict[int, int]) -> int:
    """How many nodes ``node`` stands for with its aliases expanded (each shared node counted
    once per use, computed once)."""
    if id(node) in sizes:
        return sizes[id(node)]
    sizes[id(node)] = 1  # a node reached again through itself (a recursive alias)
    children: list[yaml.Node] = []
    if isinstance(node, yaml.SequenceNode):
        children = list(node.value)
    elif isinstance(node, MappingNode):
        children = [part for pair in node.value for part in pair]
    total = 1
    for child in children:
        total += _expanded_size(child, sizes)
        if total > MAX_EXPANDED_NODES:
            break  # no need to count further
    sizes[id(node)] = total
    return total
