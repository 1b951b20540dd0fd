"""Rows of a run directory's logs, JSONL or Parquet (a run leaves produced/ and consumed/ as Parquet)."""
import json
from pathlib import Path

import pyarrow.parquet as pq


def rows(folder: Path, name: str = "*") -> list[dict]:
    out = []
    for path in sorted(folder.glob(f"{name}.jsonl")):
        out += [json.loads(line) for line in path.read_text().splitlines() if line]
    for path in sorted(folder.glob(f"{name}.parquet")):
        out += pq.read_table(path).to_pylist()
    return out
