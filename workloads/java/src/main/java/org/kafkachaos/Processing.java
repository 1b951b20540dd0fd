package org.kafkachaos;

import org.kafkachaos.contract.MemberConfig;
import java.util.Random;

/**
 * The application's work per batch (workloads/member.py Processing): a fixed or exponentially distributed delay per
 * record and per batch, drawn from the member's own seeded generator (java.util.Random: the same draws run after
 * run, not Python's), so that a member can be made slower than max.poll.interval.ms allows.
 */
final class Processing {
    private final double perRecordMs;
    private final double perBatchMs;
    private final boolean exponential;
    private final Random rng;

    Processing(MemberConfig.Processing spec, long memberSeed) {
        this.perRecordMs = spec.perRecordMs();
        this.perBatchMs = spec.perBatchMs();
        this.exponential = "exponential".equals(spec.distribution());
        this.rng = new Random(spec.seed() ^ memberSeed);
    }

    /** How long the batch of `records` takes, in milliseconds. */
    long delayMs(int records) {
        double mean = perBatchMs + perRecordMs * records;
        if (mean <= 0) {
            return 0;
        }
        double ms = exponential ? -Math.log(1.0 - rng.nextDouble()) * mean : mean;  // random.expovariate(1 / mean)
        return Math.round(ms);
    }
}
