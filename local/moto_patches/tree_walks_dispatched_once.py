"""The processor method each node of an update tree gets is found once per pair of classes.

Upstream (`DepthFirstTraverser.traverse_node_recursively` in
`moto.dynamodb.parsing.ast_nodes`): moto checks an update tree with about ten processors, each
walking the whole tree and, at every node, building its table of node classes and testing the node
against each with `isinstance` on abstract classes. Which method a node gets depends on the classes
of the two alone. The walk is otherwise moto's own: children first, each node replaced by what its
processor returns, `pre_processing_of_child` called as before.
"""

from __future__ import annotations

from typing import Any


def apply() -> None:
    from moto.dynamodb.parsing.ast_nodes import DepthFirstTraverser, Node  # type: ignore[attr-defined]

    is_node: dict[type, bool] = {}
    # (processor class, node class) -> the processor's function for it, None, or `ask` (not a
    # method of the processor: asked of its `process` at each node, as moto does)
    functions: dict[tuple[type, type], Any] = {}
    ask = object()

    def function_for(traverser: Any, node_type: type) -> Any:
        key = (type(traverser), node_type)
        if key not in functions:
            function = None
            if issubclass(node_type, traverser.nodes_to_be_processed()):
                method = next(f for kind, f in traverser._processing_map().items() if issubclass(node_type, kind))
                function = method.__func__ if getattr(method, "__self__", None) is traverser else ask
            functions[key] = function
        return functions[key]

    def traverse_node_recursively(self: Any, node: Any, child_id: int = -1) -> Any:
        node_type = type(node)
        if node_type not in is_node:
            is_node[node_type] = issubclass(node_type, Node)
        if not is_node[node_type]:
            return node
        parent_node = node.parent
        if node.children is not None:
            for index, child_node in enumerate(node.children):
                self.pre_processing_of_child(node, index)
                self.traverse_node_recursively(child_node, index)
        function = function_for(self, node_type)
        if function is not None:
            node = self.process(node) if function is ask else function(self, node)
            node.parent = parent_node
            if parent_node:
                parent_node.children[child_id] = node
        return node

    DepthFirstTraverser.traverse_node_recursively = traverse_node_recursively
