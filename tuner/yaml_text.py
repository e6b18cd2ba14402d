"""YAML as users write it in 2026: read with YAML 1.2's core schema, a key given twice refused.

PyYAML implements YAML 1.1, where ``Off``, ``on``, ``yes`` and ``NO`` are booleans and ``1e-3``
is a string: ``early_stopping_type: Off`` (SageMaker's value) read as ``False`` and was refused,
``values: [NO, SE]`` became ``[False, 'SE']`` on argv. ``load`` reads plain scalars as YAML 1.2
does (YAML 1.2.2, section 10.3.2): booleans are ``true``/``false`` (any of three cases), floats
include ``1e-3`` and ``1E5``; everything else is as ``yaml.safe_load``. A mapping that names a key
twice is refused with the key and its line (YAML 1.2 requires keys to be unique; PyYAML keeps
the last silently, which dropped a user's first ``max_jobs``).
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode

BOOL_TAG = "tag:yaml.org,2002:bool"
FLOAT_TAG = "tag:yaml.org,2002:float"
BOOL_1_2 = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
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


Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in (BOOL_TAG, FLOAT_TAG)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
Loader.add_implicit_resolver(BOOL_TAG, BOOL_1_2, list("tTfF"))
Loader.add_implicit_resolver(FLOAT_TAG, FLOAT_1_2, list("-+0123456789."))


def load(text: str) -> Any:
    """The YAML document in ``text`` (see the module contract); ``yaml.YAMLError`` if invalid."""
    return yaml.load(text, Loader=Loader)
