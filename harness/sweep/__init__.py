"""The cost of a rebalance: a sweep file's grid of group sizes, styles, triggers and clients, each cell a run (`kafka-chaos sweep`)."""
