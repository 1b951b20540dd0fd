"""Every fault kind, by name: each module of this package that defines a Fault subclass with a
`kind` registers it on import, so a new kind is one class in one module and nothing else."""
from __future__ import annotations

import importlib
import pkgutil

import faults
from faults.base import Fault


def fault_kinds() -> dict[str, type[Fault]]:
    for module in pkgutil.iter_modules(faults.__path__):
        importlib.import_module(f"faults.{module.name}")
    return dict(sorted(Fault.registry.items()))
