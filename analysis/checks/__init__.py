"""The checks: the framework (framework.py: Facts, Check, REGISTRY, @check), what several checks share (context.py),
and one module a check or a close family of checks. Importing this package registers every check, in the order the
report lists them."""
from analysis.checks import (duplicate, loss, duplicate_write, order, commit_ahead, over_budget, stall,  # noqa: F401
                             split_ownership, member_fatal, liveness, unapplied_assignment, state, eos,
                             eos_reads)
from analysis.checks.framework import REGISTRY, checks_needing, invalid_types

__all__ = ["REGISTRY", "checks_needing", "invalid_types"]
