"""Benchmark scripts: each prints its figures and writes them under benchmarks/results/ (BENCHMARKS.md)."""
import statistics


def spread(values, digits: int = 2, unit: str = "") -> str:
    """A figure as BENCHMARKS.md gives it: the median, then the minimum and maximum."""
    return f"{statistics.median(values):.{digits}f}{unit} ({min(values):.{digits}f}-{max(values):.{digits}f})"
