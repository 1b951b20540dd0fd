"""Which keys the state check must walk (analysis/checks/state.py), shown for every key at once in numpy.

A key needs no walk when its state rows are one whole chain that its final value explains, holding every offset
consumed of the key once: counts 1..n, one row each; each row building on the one before (its prev_offset that row's
offset, -1 for the first, and its sum that row's plus its own record's seq); the last row the final value. The walk
of such a key would return its rows, with no offset twice and none missing, so it reports nothing. Every other key
(a change applied twice, a fork of a zombie beside the new owner, an offset missing, a chain that does not explain
its final value) is a suspect, and only the walk judges it: this module decides where to look, never what is found.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

ON = ["partition", "key"]


@dataclass
class Suspects:
    rows: np.ndarray    # over the state rows: the row's key is a suspect
    final: np.ndarray   # over the final values
    keyed: np.ndarray   # over the consumed records with a key
    keys: int           # how many keys are suspects
    seq: np.ndarray     # over the state rows: its record's seq (0 where nobody consumed the record)
    seen: np.ndarray    # over the state rows: somebody consumed its record


def find(state_rows, final_values, keyed: pd.DataFrame) -> Suspects:
    """The suspects among the state rows and final values (pyarrow tables) and the consumed records with their key
    (a frame of partition, offset, seq, key: each consumed record once)."""
    rows = state_rows.select([*ON, "offset", "prev_offset", "count", "sum"]).to_pandas()
    final = final_values.select([*ON, "count", "last_offset", "sum"]).to_pandas()
    row_id, final_id, keyed_id = _key_ids(rows, final, keyed)
    seq, seen = _record_seqs(rows, keyed)
    order = np.lexsort((rows["count"].to_numpy(), row_id))
    chain = (rows[["offset", "prev_offset", "count", "sum"]].assign(id=row_id, seq=seq, seen=seen)
             .iloc[order].reset_index(drop=True))  # in (key, count) order
    bad = [chain["id"].to_numpy()[_broken_links(chain)], _unexplained_finals(chain, final, final_id),
           _missing_offsets(chain, keyed, keyed_id)]
    bad_ids = np.unique(np.concatenate(bad))
    return Suspects(np.isin(row_id, bad_ids), np.isin(final_id, bad_ids), np.isin(keyed_id, bad_ids), len(bad_ids),
                    seq, seen)


def _key_ids(rows: pd.DataFrame, final: pd.DataFrame, keyed: pd.DataFrame) -> tuple[np.ndarray, ...]:
    """One integer a (partition, key), the same in the three tables."""
    frames = (rows, final, keyed)
    codes, _ = pd.factorize(pd.concat([f["key"] for f in frames], ignore_index=True))
    partitions = np.concatenate([f["partition"].to_numpy(np.int64) for f in frames])
    ids = codes.astype(np.int64) * (int(partitions.max(initial=0)) + 1) + partitions
    ends = np.cumsum([len(f) for f in frames])
    return ids[:ends[0]], ids[ends[0]:ends[1]], ids[ends[1]:]


def _record_seqs(rows: pd.DataFrame, keyed: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each state row's record's seq (0 where nobody consumed it) and whether it was consumed."""
    got = rows[["partition", "offset"]].merge(keyed[["partition", "offset", "seq"]], on=["partition", "offset"],
                                              how="left")["seq"]
    return got.fillna(0).to_numpy(np.int64), got.notna().to_numpy()


def _broken_links(chain: pd.DataFrame) -> np.ndarray:
    """Over the rows in (key, count) order: the row is not the next link of its key's one chain."""
    ids, offset, seq = chain["id"].to_numpy(), chain["offset"].to_numpy(), chain["seq"].to_numpy()
    at = np.arange(len(ids))
    first = np.ones(len(ids), bool)
    first[1:] = ids[1:] != ids[:-1]
    start = np.maximum.accumulate(np.where(first, at, 0))
    built_on = np.where(first, -1, np.roll(offset, 1))
    summed = np.cumsum(seq)
    sum_in_key = summed - summed[start] + seq[start]
    twice = chain.duplicated(["id", "offset"], keep=False).to_numpy()
    return (~chain["seen"].to_numpy() | (chain["count"].to_numpy() != at - start + 1)
            | (chain["prev_offset"].to_numpy() != built_on) | (chain["sum"].to_numpy() != sum_in_key) | twice)


def _unexplained_finals(chain: pd.DataFrame, final: pd.DataFrame, final_id: np.ndarray) -> np.ndarray:
    """Keys whose final value is not their last row's (count, offset, sum), or that have only one of the two."""
    ends = chain.drop_duplicates("id", keep="last")[["id", "count", "offset", "sum"]].rename(
        columns={"offset": "last_offset"})
    values = pd.DataFrame({"id": final_id, **{c: final[c].to_numpy() for c in ("count", "last_offset", "sum")}})
    both = values.merge(ends, on="id", how="outer", suffixes=("", "_row"), indicator=True)
    unexplained = (both["_merge"] != "both") | np.any(
        [both[c] != both[f"{c}_row"] for c in ("count", "last_offset", "sum")], axis=0)
    return both.loc[unexplained, "id"].to_numpy()


def _missing_offsets(chain: pd.DataFrame, keyed: pd.DataFrame, keyed_id: np.ndarray) -> np.ndarray:
    """Keys with a consumed offset no state row of theirs applied."""
    expected = pd.DataFrame({"id": keyed_id, "offset": keyed["offset"].to_numpy()})
    found = expected.merge(chain[["id", "offset"]].drop_duplicates(), on=["id", "offset"], how="left", indicator=True)
    return found.loc[found["_merge"] == "left_only", "id"].to_numpy()
