"""Per-node launcher: starts the node's ranks and watches them."""
