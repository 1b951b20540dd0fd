"""The state check walks only its suspects (analysis/checks/state_suspects.py): a key left out must be one whose walk
finds nothing. Random histories of a few keys, each a whole chain bent at random (a change applied twice, a fork, an
offset skipped, a changelog value that is not the last change, a record nobody consumed, no changelog value, a key
never applied, a change naming a value it did not build on or not adding its record), are held against the walk
itself (checks/state._chain): every key the rule leaves out walks back to exactly its rows, none twice and none
missing, and every bent key is a suspect."""
import random

import pandas as pd
import pyarrow as pa
import pytest

from analysis.checks import state_suspects
from analysis.checks.state import BrokenChain, _chain
from analysis.rundir.compact import schema

BENDS = ("whole", "whole", "twice", "fork", "skip", "stale_final", "unseen", "no_final", "never_applied", "bad_link", "bad_sum")


def history(seed: int):
    """(state rows, final values, consumed records with keys, each key's bend): keys on two partitions, each key's
    records at their own offsets (seq = offset * 7 + 1)."""
    rnd = random.Random(seed)
    rows, finals, keyed, bends = [], [], [], {}
    next_offset = {0: 0, 1: 0}
    for k in range(12):
        partition, key, bend = k % 2, f"k{k}", rnd.choice(BENDS)
        offsets = [next_offset[partition] + i * 3 for i in range(rnd.randint(2, 5))]
        next_offset[partition] = offsets[-1] + 1
        applied = list(offsets)
        if bend == "twice":
            applied.insert(rnd.randrange(1, len(applied) + 1), applied[rnd.randrange(len(applied))])
        if bend == "skip":
            applied.remove(rnd.choice(offsets))
        chain, prev, total = [], -1, 0
        for count, offset in enumerate(applied, 1):
            total += offset * 7 + 1
            chain.append({"ts_ms": 1000 + count, "member": "a", "topic": "t", "partition": partition, "key": key,
                          "offset": offset, "prev_offset": prev, "count": count, "sum": total, "generation": 1})
            prev = offset
        if bend == "fork":  # a zombie applied the same change as the new owner
            chain.append({**chain[-1], "member": "b", "ts_ms": chain[-1]["ts_ms"] + 5})
        if bend == "bad_link":  # a change that names a value it did not build on
            chain[-1]["prev_offset"] = chain[-1]["offset"] + 1
        if bend == "bad_sum":  # a change that did not add its record's seq
            chain[-1]["sum"] += 1
        if bend == "never_applied":
            chain = []
        rows += chain
        last = chain[-2] if bend == "stale_final" else chain[-1] if chain else None
        if last is not None and bend != "no_final":
            finals.append({"partition": partition, "key": key, "count": last["count"], "sum": last["sum"],
                           "last_offset": last["offset"], "member": last["member"], "ts_ms": last["ts_ms"]})
        consumed = offsets[1:] if bend == "unseen" else offsets
        keyed += [{"topic": "t", "partition": partition, "offset": o, "seq": o * 7 + 1, "key": key} for o in consumed]
        bends[(partition, key)] = bend
    return (pa.Table.from_pylist(rows, schema=schema("state")), pa.Table.from_pylist(finals, schema=schema("final_state")),
            pd.DataFrame(keyed), bends)


def walk_finds_nothing(key: tuple, rows: list[dict], final: dict | None, keyed: pd.DataFrame) -> bool:
    partition, name = key
    mine = [r for r in rows if (r["partition"], r["key"]) == key]
    by_step: dict = {}
    for r in mine:
        by_step.setdefault((partition, name, r["offset"], r["count"], r["sum"]), []).append(r)
    seq_at = {(p, o): s for p, o, s in zip(keyed["partition"], keyed["offset"], keyed["seq"])}
    try:
        chain = _chain(final, by_step, seq_at) if final else []
    except BrokenChain:
        return False
    offsets = [r["offset"] for r in chain]
    expected = set(keyed.loc[(keyed["partition"] == partition) & (keyed["key"] == name), "offset"])
    return len(chain) == len(mine) and len(set(offsets)) == len(offsets) and expected <= set(offsets)


@pytest.mark.parametrize("seed", range(40))
def test_a_key_left_out_walks_to_nothing_and_every_bent_key_is_a_suspect(seed):
    rows, finals, keyed, bends = history(seed)
    found = state_suspects.find(rows, finals, keyed)
    suspect_keys = {(r["partition"], r["key"]) for r in rows.filter(found.rows).to_pylist()} | set(
        zip(keyed.loc[found.keyed, "partition"], keyed.loc[found.keyed, "key"]))
    all_rows, final_of = rows.to_pylist(), {(f["partition"], f["key"]): f for f in finals.to_pylist()}
    for key, bend in bends.items():
        if key not in suspect_keys:
            assert walk_finds_nothing(key, all_rows, final_of.get(key), keyed), (key, bend)
        if bend != "whole":
            assert key in suspect_keys, (key, bend)
        else:
            assert key not in suspect_keys, key
    assert found.keys == len(suspect_keys)
    assert {(f["partition"], f["key"]) for f in finals.filter(found.final).to_pylist()} <= suspect_keys
