package kafkachaos.bench;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * A measurement, not the analysis (benchmarks/radix_fold.py, docs/benchmarks-history.md, fourteenth increment): the
 * consumed side of records.aggregate folded in each scan task by a radix-partitioned hash table, as DuckDB folds, so
 * that a task's random row order stays inside tables that fit the caches. Rows arrive in chunks of 64k; each chunk is
 * scattered by the top 8 bits of its key's hash into 256 parts; each part is folded into its own open-addressing
 * table (a slot: the 5 key longs, then n, mask, kmin, kmax, gmax, nmask0-3, nsum). Each task returns its partial
 * groups, which Spark merges (sum, bit_or, min, max) after its shuffle. Input: records.consumed_keyed's columns,
 * every one a non-null BIGINT (the synthetic run has no NULL; the analysis's runs may).
 */
public final class RadixFold implements FlatMapFunction<Iterator<InternalRow>, InternalRow> {
  static final String[] COLUMNS = {"k", "th", "mh", "b", "nb", "n", "mask", "kmin", "kmax", "gmax",
                                   "nmask0", "nmask1", "nmask2", "nmask3", "nsum"};
  static final int IN = 9, KEY = 5, SLOT = COLUMNS.length, BITS = 8, PARTS = 1 << BITS, CHUNK = 1 << 16;

  /** The partial groups of every scan task of {@code keyed}, as a DataFrame. */
  public static org.apache.spark.sql.Dataset<Row> partial(Dataset<Row> keyed) {
    StructType schema = new StructType();
    for (String c : COLUMNS) schema = schema.add(c, DataTypes.LongType, false);
    return keyed.sparkSession().internalCreateDataFrame(
        keyed.queryExecution().toRdd().toJavaRDD().mapPartitions(new RadixFold()).rdd(), schema, false);
  }

  @Override
  public Iterator<InternalRow> call(Iterator<InternalRow> rows) {
    Folder folder = new Folder();
    while (rows.hasNext()) folder.add(rows.next());
    folder.flush();
    List<InternalRow> out = new ArrayList<>();
    for (Table t : folder.tables) {
      for (int s = 0; s <= t.mask; s++) {
        if (!t.used[s]) continue;
        GenericInternalRow g = new GenericInternalRow(SLOT);
        for (int c = 0; c < SLOT; c++) g.setLong(c, t.slots[s * SLOT + c]);
        out.add(g);
      }
    }
    return out.iterator();
  }

  static long mix(long h) {
    h ^= h >>> 33; h *= 0xff51afd7ed558ccdL; h ^= h >>> 33; h *= 0xc4ceb9fe1a85ec53L;
    return h ^ (h >>> 33);
  }

  static long hash(long[] a, int o) {
    return mix(a[o] * 31 + a[o + 1]) ^ mix(a[o + 2] * 31 + a[o + 3] * 17 + a[o + 4]);
  }

  static final class Folder {
    final Table[] tables = new Table[PARTS];
    final long[] chunk = new long[CHUNK * IN];
    final long[] hashes = new long[CHUNK];
    final int[] starts = new int[PARTS + 1];
    final int[] order = new int[CHUNK];
    int m;

    Folder() { for (int i = 0; i < PARTS; i++) tables[i] = new Table(); }

    void add(InternalRow r) {
      int o = m * IN;
      for (int c = 0; c < IN; c++) chunk[o + c] = r.getLong(c);
      if (++m == CHUNK) flush();
    }

    void flush() {
      Arrays.fill(starts, 0);
      for (int i = 0; i < m; i++) {
        hashes[i] = hash(chunk, i * IN);
        starts[(int) (hashes[i] >>> (64 - BITS)) + 1]++;
      }
      for (int p = 0; p < PARTS; p++) starts[p + 1] += starts[p];
      int[] next = starts.clone();
      for (int i = 0; i < m; i++) order[next[(int) (hashes[i] >>> (64 - BITS))]++] = i;
      for (int p = 0; p < PARTS; p++)
        for (int j = starts[p]; j < starts[p + 1]; j++) tables[p].fold(chunk, order[j] * IN, hashes[order[j]]);
      m = 0;
    }
  }

  static final class Table {
    long[] slots = new long[64 * SLOT];
    boolean[] used = new boolean[64];
    int size, mask = 63;

    void fold(long[] row, int o, long h) {
      if (2 * size >= mask) grow();
      int s = (int) h & mask;
      while (used[s]) {
        int b = s * SLOT;
        if (slots[b] == row[o] && slots[b + 1] == row[o + 1] && slots[b + 2] == row[o + 2]
            && slots[b + 3] == row[o + 3] && slots[b + 4] == row[o + 4]) {
          update(b, row, o);
          return;
        }
        s = (s + 1) & mask;
      }
      used[s] = true;
      size++;
      int b = s * SLOT;
      System.arraycopy(row, o, slots, b, KEY);
      Arrays.fill(slots, b + KEY, b + SLOT, 0L);
      slots[b + 7] = Long.MAX_VALUE;
      slots[b + 8] = Long.MIN_VALUE;
      slots[b + 9] = Long.MIN_VALUE;
      update(b, row, o);
    }

    /** records.aggregate's consumed aggregates, one row (offset, ts, generation, n at o + 5 .. o + 8). */
    void update(int b, long[] row, int o) {
      long offset = row[o + 5], ts = row[o + 6], generation = row[o + 7], n = row[o + 8];
      long low = offset & 63, at = (ts << 6) | low;
      slots[b + 5]++;
      slots[b + 6] |= 1L << low;
      slots[b + 7] = Math.min(slots[b + 7], at);
      slots[b + 8] = Math.max(slots[b + 8], at);
      slots[b + 9] = Math.max(slots[b + 9], generation);
      slots[b + 10 + (int) ((n >> 6) & 3)] |= 1L << (n & 63);
      slots[b + 14] += (n & 255) * low;
    }

    void grow() {
      long[] old = slots;
      boolean[] oldUsed = used;
      int capacity = 2 * (mask + 1);
      slots = new long[capacity * SLOT];
      used = new boolean[capacity];
      mask = capacity - 1;
      for (int s = 0; s < oldUsed.length; s++) {
        if (!oldUsed[s]) continue;
        int d = (int) hash(old, s * SLOT) & mask;
        while (used[d]) d = (d + 1) & mask;
        used[d] = true;
        System.arraycopy(old, s * SLOT, slots, d * SLOT, SLOT);
      }
    }
  }
}
