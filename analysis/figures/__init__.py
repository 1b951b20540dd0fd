"""Figures of a run: the cost of a rebalance, latency, the group's state band, the run's figures."""
