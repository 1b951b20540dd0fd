"""The derived queries of records.py, on the driver with numpy, for an aggregate collected as Arrow.

The scan shrinks the input ~64x (one group per 64-offset block, per member and ownership period), so for
any run whose aggregate fits in the driver's memory (the default threshold: inputs below 4 GB) it is
cheaper to collect the groups once than to run a dozen small Spark jobs, each paying scheduling and
code generation. Every function here returns exactly what the Spark query of the same name in
records.py returns (the tests run both engines on the same runs and compare).
"""
from __future__ import annotations

import numpy as np

from .records import CONSUMED, PRODUCED

BIG = np.iinfo(np.int64).max
SMALL = np.iinfo(np.int64).min


def popcount(a: np.ndarray) -> np.ndarray:
    return np.bitwise_count(a.view(np.uint64)).astype(np.int64)


def _starts(*keys) -> np.ndarray:
    """Start indexes of runs of equal keys in sorted arrays."""
    n = len(keys[0])
    if n == 0:
        return np.zeros(0, np.int64)
    change = np.zeros(n, bool)
    change[0] = True
    for k in keys:
        change[1:] |= k[1:] != k[:-1]
    return np.nonzero(change)[0]


def _range_mask(lo: np.ndarray, hi: np.ndarray, b: np.ndarray) -> np.ndarray:
    base = b * 64
    low = np.clip(lo - base, 0, 64)
    high = np.clip(hi - base, -1, 63)
    empty = (hi < base) | (lo > base + 63) | (high < low)
    ones = np.uint64(0xFFFFFFFFFFFFFFFF)
    with np.errstate(over="ignore"):
        left = np.where(low >= 64, np.uint64(0), ones << np.minimum(low, 63).astype(np.uint64))
        right = ones >> (63 - np.maximum(high, 0)).astype(np.uint64)
    m = (left & right).view(np.int64)
    return np.where(empty, 0, m)


def _codes(column) -> tuple[list[str], np.ndarray]:
    """Sorted distinct strings of an Arrow column and each row's index into them (-1 for null)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    enc = column.combine_chunks().dictionary_encode() if column.num_chunks else pa.array([], pa.string()).dictionary_encode()
    values = enc.dictionary.to_pylist()
    order = sorted(range(len(values)), key=lambda i: values[i])
    remap = np.empty(len(values) + 1, np.int64)
    remap[np.array(order, dtype=np.int64)] = np.arange(len(values))
    remap[len(values)] = -1
    idx = np.asarray(pc.fill_null(enc.indices, len(values)).to_numpy(zero_copy_only=False), dtype=np.int64)
    return [values[i] for i in order], remap[idx]


def _lowbit(m: np.ndarray) -> np.ndarray:
    u = m.view(np.uint64)
    with np.errstate(over="ignore"):
        return np.bitwise_count((u & (~u + np.uint64(1))) - np.uint64(1)).astype(np.int64)


def _highbit(m: np.ndarray) -> np.ndarray:
    x = m.view(np.uint64).copy()
    for k in (1, 2, 4, 8, 16, 32):
        x |= x >> np.uint64(k)
    return np.bitwise_count(x).astype(np.int64) - 1


class Groups:
    """The collected aggregate (pyarrow.Table with the columns of records.aggregate), with each consumed
    group's epoch resolved to its ownership period (see records.with_epoch)."""

    def __init__(self, table, epoch_map=None, members_with_events=(), epoch_is_period=False):
        self.n_rows = table.num_rows
        col = lambda name, fill: np.asarray(table.column(name).fill_null(fill).to_numpy(zero_copy_only=False))  # noqa: E731
        self.side = col("side", -1).astype(np.int64)
        self.n = col("n", 0).astype(np.int64)
        self.mask = col("mask", 0).astype(np.int64)
        self.kmin, self.kmax = col("kmin", 0).astype(np.int64), col("kmax", 0).astype(np.int64)
        self.tmin, self.tmax = self.kmin >> 6, self.kmax >> 6
        self.b = col("b", 0).astype(np.int64)
        self.omin = self.b * 64 + _lowbit(self.mask)
        self.omax = self.b * 64 + _highbit(self.mask)
        self.partition = col("partition", 0).astype(np.int64)
        epoch = col("epoch", 0).astype(np.int64)
        self.gmax = col("gmax", -1).astype(np.int64)   # -1: unknown
        self.gmin = self.gmax.copy()
        self.topics, self.tcode = _codes(table.column("topic"))
        self.members, self.mcode = _codes(table.column("member"))
        self.period = self._periods(epoch, epoch_map, set(members_with_events), epoch_is_period)
        self._merge_epochs()

    def _merge_epochs(self) -> None:
        """Several epochs can fall inside one ownership period: merge their groups into one per period."""
        cons = np.nonzero(self.side == CONSUMED)[0]
        rest = np.nonzero(self.side != CONSUMED)[0]
        if len(cons) == 0:
            return
        order = cons[np.lexsort((self.period[cons], self.b[cons], self.partition[cons], self.tcode[cons], self.mcode[cons]))]
        st = _starts(self.mcode[order], self.tcode[order], self.partition[order], self.b[order], self.period[order])
        if len(st) == len(order):
            return
        take = np.concatenate([order[st], rest])
        merged = {
            "n": np.add.reduceat(self.n[order], st), "mask": np.bitwise_or.reduceat(self.mask[order], st),
            "kmin": np.minimum.reduceat(self.kmin[order], st), "kmax": np.maximum.reduceat(self.kmax[order], st),
            "gmin": np.minimum.reduceat(np.where(self.gmin[order] < 0, BIG, self.gmin[order]), st),
            "gmax": np.maximum.reduceat(self.gmax[order], st),
        }
        merged["gmin"] = np.where(merged["gmin"] == BIG, -1, merged["gmin"])
        for name in ("side", "n", "mask", "kmin", "kmax", "b", "partition", "period", "gmin", "gmax", "tcode", "mcode"):
            arr = getattr(self, name)
            head = merged[name] if name in merged else arr[order[st]]
            setattr(self, name, np.concatenate([head, arr[rest]]))
        del take
        self.n_rows = len(self.side)
        self.tmin, self.tmax = self.kmin >> 6, self.kmax >> 6
        self.omin = self.b * 64 + _lowbit(self.mask)
        self.omax = self.b * 64 + _highbit(self.mask)

    def _periods(self, epoch, epoch_map, with_events, epoch_is_period) -> np.ndarray:
        from .records import NO_EVENTS_PERIOD, OUTSIDE_PERIOD
        period = np.full(self.n_rows, -3, np.int64)
        cons = np.nonzero(self.side == CONSUMED)[0]
        if epoch_is_period:
            period[cons] = epoch[cons]
            return period
        ranges = {}
        for member, topic, partition, lo, hi, pid in epoch_map or []:
            ranges.setdefault((member, topic, partition), []).append((lo, hi, pid))
        if len(cons) == 0:
            return period
        # one int64 per (member, topic, partition, epoch): dense ranks of each part, mixed radix
        parts = [self.mcode[cons] + 1, self.tcode[cons] + 1, self.partition[cons], epoch[cons]]
        key = np.zeros(len(cons), np.int64)
        decode = []
        for part in parts:
            u, r = np.unique(part, return_inverse=True)
            key = key * len(u) + r.reshape(-1)
            decode.append(u)
        uniq_key, inv = np.unique(key, return_inverse=True)
        combos = []
        for k in uniq_key.tolist():
            vals = []
            for u in reversed(decode):
                vals.append(int(u[k % len(u)]))
                k //= len(u)
            m1, t1, p, e = reversed(vals)
            combos.append((m1 - 1, t1 - 1, p, e))
        values = np.empty(len(combos), np.int64)
        for i, (m, t, p, e) in enumerate(combos):
            member = self.members[m] if m >= 0 else None
            value = OUTSIDE_PERIOD if member in with_events else NO_EVENTS_PERIOD
            for lo, hi, pid in ranges.get((member, self.topics[t] if t >= 0 else None, p), ()):
                if lo <= e <= hi:
                    value = pid
                    break
            values[i] = value
        period[cons] = values[inv.reshape(-1)]
        return period

    # ------------------------------------------------------------------------------------- totals
    def totals(self) -> dict:
        out = {}
        for s in np.unique(self.side):
            sel = self.side == s
            out[int(s)] = (int(self.n[sel].sum()), int(sel.sum()),
                           int(self.tmin[sel].min()) if s <= PRODUCED else None,
                           int(self.tmax[sel].max()) if s <= PRODUCED else None)
        return out

    # ------------------------------------------------------------------------------------- blocks
    def build_blocks(self) -> None:
        sel = np.nonzero(self.side <= PRODUCED)[0]
        order = sel[np.lexsort((self.b[sel], self.partition[sel], self.tcode[sel]))]
        t, p, b = self.tcode[order], self.partition[order], self.b[order]
        st = _starts(t, p, b)
        self._block_rows = order
        self._block_starts = st
        isc = self.side[order] == CONSUMED
        isp = ~isc
        n, mask = self.n[order], self.mask[order]
        zero = np.int64(0)
        red_sum = lambda v: np.add.reduceat(v, st) if len(st) else np.zeros(0, np.int64)  # noqa: E731
        red_or = lambda v: np.bitwise_or.reduceat(v, st) if len(st) else np.zeros(0, np.int64)  # noqa: E731
        red_min = lambda v: np.minimum.reduceat(v, st) if len(st) else np.zeros(0, np.int64)  # noqa: E731
        red_max = lambda v: np.maximum.reduceat(v, st) if len(st) else np.zeros(0, np.int64)  # noqa: E731
        B = {"t": t[st], "partition": p[st], "b": b[st]}
        B["cn"] = red_sum(np.where(isc, n, zero))
        B["cmask"] = red_or(np.where(isc, mask, zero))
        B["internal"] = red_sum(np.where(isc, n - popcount(mask), zero))
        B["pmask"] = red_or(np.where(isp, mask, zero))
        B["pn"] = red_sum(np.where(isp, n, zero))
        B["ctmin"] = red_min(np.where(isc, self.tmin[order], BIG))
        B["ctmax"] = red_max(np.where(isc, self.tmax[order], SMALL))
        B["ptmin"] = red_min(np.where(isp, self.tmin[order], BIG))
        B["ptmax"] = red_max(np.where(isp, self.tmax[order], SMALL))
        B["comax"] = red_max(np.where(isc, self.omax[order], SMALL))
        B["distinct_c"] = popcount(B["cmask"])
        B["extra"] = B["cn"] - B["distinct_c"]
        B["lostmask"] = B["pmask"] & ~B["cmask"]
        B["lost"] = popcount(B["lostmask"])
        B["unacked"] = popcount(B["cmask"] & ~B["pmask"])
        B["prepeat"] = B["pn"] - popcount(B["pmask"])
        B["known"] = B["pmask"] | B["cmask"]
        self.B = B
        # block index of every consumed/produced group row
        block_of = np.full(self.n_rows, -1, np.int64)
        counts = np.diff(np.concatenate([st, [len(order)]]))
        block_of[order] = np.repeat(np.arange(len(st)), counts)
        self.block_of = block_of

    def _block_index(self, t, p, b) -> np.ndarray:
        """Index into B for keys (arrays), -1 when absent."""
        if not hasattr(self, "_bindex"):
            B = self.B
            self._bindex = {k: i for i, k in enumerate(zip(B["t"].tolist(), B["partition"].tolist(), B["b"].tolist()))}
        return np.array([self._bindex.get(k, -1) for k in zip(list(t), list(p), list(b))], dtype=np.int64)

    def _none(self, v, sentinel):
        return None if v == sentinel else v

    # ------------------------------------------------------------------------------------ queries
    def partition_stats(self) -> list[dict]:
        B = self.B
        st = _starts(B["t"], B["partition"])
        if len(st) == 0:
            return []
        s = lambda v: np.add.reduceat(v, st)  # noqa: E731
        out = []
        ptmin = np.minimum.reduceat(B["ptmin"], st); ptmax = np.maximum.reduceat(B["ptmax"], st)
        ctmin = np.minimum.reduceat(B["ctmin"], st); ctmax = np.maximum.reduceat(B["ctmax"], st)
        comax = np.maximum.reduceat(B["comax"], st)
        cols = {"produced": s(B["pn"]), "consumed_rows": s(B["cn"]), "consumed_distinct": s(B["distinct_c"]),
                "extra": s(B["extra"]), "lost": s(B["lost"]), "unacked": s(B["unacked"]),
                "produced_repeats": s(B["prepeat"]), "internal": s(B["internal"]),
                "dup_blocks": s((B["extra"] > 0).astype(np.int64)), "lost_blocks": s((B["lost"] > 0).astype(np.int64))}
        for i, j in enumerate(st):
            row = {"topic": self.topics[B["t"][j]], "partition": int(B["partition"][j])}
            row.update({k: int(v[i]) for k, v in cols.items()})
            row.update({"max_consumed_offset": self._none(int(comax[i]), SMALL), "ptmin": self._none(int(ptmin[i]), BIG),
                        "ptmax": self._none(int(ptmax[i]), SMALL), "ctmin": self._none(int(ctmin[i]), BIG),
                        "ctmax": self._none(int(ctmax[i]), SMALL)})
            out.append(row)
        return out

    def dirty_blocks(self) -> list[dict]:
        B = self.B
        idx = np.nonzero((B["extra"] > 0) | (B["lost"] > 0) | (B["unacked"] > 0))[0]
        out = []
        for i in idx:
            out.append({"topic": self.topics[B["t"][i]], "partition": int(B["partition"][i]), "b": int(B["b"][i]),
                        "cn": int(B["cn"][i]), "cmask": int(B["cmask"][i]), "pmask": int(B["pmask"][i]),
                        "lostmask": int(B["lostmask"][i]), "extra": int(B["extra"][i]), "lost": int(B["lost"][i]),
                        "internal": int(B["internal"][i]), "unacked": int(B["unacked"][i]),
                        "ctmin": self._none(int(B["ctmin"][i]), BIG),
                        "ctmax": self._none(int(B["ctmax"][i]), SMALL), "ptmin": self._none(int(B["ptmin"][i]), BIG),
                        "ptmax": self._none(int(B["ptmax"][i]), SMALL)})
        return out

    def duplicate_groups(self) -> list[dict]:
        dup_block = self.B["extra"] > 0
        rows = np.nonzero((self.side == CONSUMED) & (self.block_of >= 0))[0]
        rows = rows[dup_block[self.block_of[rows]]]
        return [self._group(i) for i in rows]

    def _group(self, i) -> dict:
        return {"topic": self.topics[self.tcode[i]], "partition": int(self.partition[i]), "b": int(self.b[i]),
                "member": self.members[self.mcode[i]], "period": int(self.period[i]), "n": int(self.n[i]),
                "mask": int(self.mask[i]), "tmin": int(self.tmin[i]), "tmax": int(self.tmax[i]),
                "gmin": None if self.gmin[i] < 0 else int(self.gmin[i]), "gmax": None if self.gmax[i] < 0 else int(self.gmax[i])}

    def _consumed_sorted(self, only_periods=False):
        sel = self.side == CONSUMED
        if only_periods:
            sel &= self.period >= 0
        rows = np.nonzero(sel)[0]
        order = rows[np.lexsort((self.b[rows], self.period[rows], self.partition[rows], self.tcode[rows], self.mcode[rows]))]
        st = _starts(self.mcode[order], self.tcode[order], self.partition[order], self.period[order])
        return order, st

    def period_summaries(self) -> list[dict]:
        order, st = self._consumed_sorted()
        if len(order) == 0:
            return []
        ends = np.concatenate([st[1:], [len(order)]])
        out = []
        n, mask = self.n[order], self.mask[order]
        pc = popcount(mask)
        for a, z in zip(st, ends):
            seg = order[a:z]
            kmin_i = seg[np.argmin(self.kmin[seg])]
            kmax_i = seg[np.argmax(self.kmax[seg])]
            gmins = [int(self.gmin[i]) for i in seg if self.gmin[i] >= 0]
            gmaxs = [int(self.gmax[i]) for i in seg if self.gmax[i] >= 0]
            i0 = seg[0]
            out.append({"member": self.members[self.mcode[i0]], "topic": self.topics[self.tcode[i0]],
                        "partition": int(self.partition[i0]), "period": int(self.period[i0]),
                        "n": int(n[a:z].sum()), "distinct": int(pc[a:z].sum()),
                        "omin": int(self.omin[seg].min()), "omax": int(self.omax[seg].max()),
                        "tmin": int(self.tmin[seg].min()), "tmax": int(self.tmax[seg].max()),
                        "first": int(self.b[kmin_i] * 64 + (self.kmin[kmin_i] & 63)),
                        "last": int(self.b[kmax_i] * 64 + (self.kmax[kmax_i] & 63)),
                        "gmin": min(gmins) if gmins else None, "gmax": max(gmaxs) if gmaxs else None})
        return out

    def ownership_flags(self) -> list[dict]:
        order, st = self._consumed_sorted(only_periods=True)
        if len(order) == 0:
            return []
        first = np.zeros(len(order), bool)
        first[st] = True
        prev = np.concatenate([[0], np.arange(len(order) - 1)])
        b, omin, omax = self.b[order], self.omin[order], self.omax[order]
        tmin, tmax, n, mask = self.tmin[order], self.tmax[order], self.n[order], self.mask[order]
        prev_b = np.where(first, SMALL, b[prev])
        prev_omax = np.where(first, SMALL, omax[prev])
        prev_tmax = np.where(first, SMALL, tmax[prev])
        blk = self.block_of[order]
        known = np.where(blk >= 0, self.B["known"][np.maximum(blk, 0)], 0)
        repeat = n > popcount(mask)
        order_in = ((self.kmin[order] & 63) != (omin & 63)) | ((self.kmax[order] & 63) != (omax & 63))
        order_across = ~first & (prev_tmax > tmin)
        missing = known & ~mask & _range_mask(omin, omax, b)
        gap = ~first & (omin > prev_omax + 1)
        hit = np.nonzero(repeat | order_in | order_across | (missing != 0) | gap)[0]
        out = []
        for k in hit:
            i = order[k]
            out.append({"member": self.members[self.mcode[i]], "topic": self.topics[self.tcode[i]],
                        "partition": int(self.partition[i]), "period": int(self.period[i]), "b": int(b[k]),
                        "prev_b": None if first[k] else int(prev_b[k]), "n": int(n[k]), "mask": int(mask[k]),
                        "tmin": int(tmin[k]), "tmax": int(tmax[k]), "omin": int(omin[k]), "omax": int(omax[k]),
                        "prev_omax": None if first[k] else int(prev_omax[k]),
                        "prev_tmax": None if first[k] else int(prev_tmax[k]),
                        "repeat": bool(repeat[k]), "order_in": bool(order_in[k]), "order_across": bool(order_across[k]),
                        "missing": int(missing[k]), "gap": bool(gap[k])})
        return out

    def gap_bits(self, gaps: list[dict]) -> list[dict]:
        B = self.B
        out = []
        code = {t: i for i, t in enumerate(self.topics)}
        for gid, r in enumerate(gaps):
            lo, hi = r["prev_omax"] + 1, r["omin"] - 1
            t = code.get(r["topic"], -1)
            sel = np.nonzero((B["t"] == t) & (B["partition"] == r["partition"]) & (B["b"] >= lo >> 6) & (B["b"] <= hi >> 6))[0]
            if len(sel) == 0:
                continue
            bits = B["known"][sel] & _range_mask(np.full(len(sel), lo), np.full(len(sel), hi), B["b"][sel])
            for j, v in zip(sel, bits):
                if v != 0:
                    out.append({"gid": gid, "b": int(B["b"][j]), "bits": int(v)})
        return out

    def known(self, keys) -> list[dict]:
        code = {t: i for i, t in enumerate(self.topics)}
        keys = sorted(set(keys))
        if not keys:
            return []
        idx = self._block_index(np.array([code.get(k[0], -1) for k in keys]), np.array([k[1] for k in keys]),
                                np.array([k[2] for k in keys]))
        return [{"topic": k[0], "partition": k[1], "b": k[2], "known": int(self.B["known"][i])}
                for k, i in zip(keys, idx) if i >= 0]

    def rate(self, t0: int, bin_ms: int) -> list[dict]:
        sel = self.side == CONSUMED
        if not sel.any():
            return []
        bins = np.floor_divide(self.tmin[sel] - t0, bin_ms)
        u, inv = np.unique(bins, return_inverse=True)
        sums = np.bincount(inv, weights=self.n[sel]).astype(np.int64)
        return [{"bin": int(a), "n": int(c)} for a, c in zip(u, sums)]
