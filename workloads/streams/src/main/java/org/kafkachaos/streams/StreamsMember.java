package org.kafkachaos.streams;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.Stores;
import org.kafkachaos.contract.ChaosStreams;

import java.util.Properties;

/**
 * The Kafka Streams member program (issue 55): one instance of a Streams application whose application.id is the
 * run's group. The topology keeps a count and a sum of seq per key in a persistent store with a changelog
 * ({@link Totals}) and writes each key's new totals to the output topic, naming the input record in headers.
 *
 * <p>Started by the harness as a command member (workloads/streams_member.py) with its MemberConfig in the
 * environment. {@code --apply-twice PARTITION:OFFSET} plants a bug: that input record is applied twice (a test's
 * double apply, which the state check must name). SIGTERM closes the instance (a graceful leave); a kill is a crash.
 */
public final class StreamsMember {
    private StreamsMember() {
    }

    public static void main(String[] args) throws InterruptedException {
        long[] twice = plantedDoubleApply(args);
        ChaosStreams chaos = ChaosStreams.fromEnvironment();
        String output = chaos.config().outputTopic();
        if (output == null) {
            throw new IllegalArgumentException("no output topic: the harness names it (output_topic)");
        }
        Properties props = chaos.properties();
        KafkaStreams streams = new KafkaStreams(topology(chaos, output, twice), props);
        System.exit(chaos.run(streams, props));
    }

    static Topology topology(ChaosStreams chaos, String output, long[] twice) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(Totals.STORE),
                Serdes.String(), Serdes.String()));
        builder.stream(chaos.input(), Consumed.with(Serdes.String(), Serdes.String()))
                .process(() -> new Totals(chaos, twice), Totals.STORE)
                .to(output, Produced.with(Serdes.String(), Serdes.String()));
        return builder.build();
    }

    private static long[] plantedDoubleApply(String[] args) {
        for (int i = 0; i < args.length; i++) {
            if ("--apply-twice".equals(args[i]) && i + 1 < args.length) {
                String[] at = args[i + 1].split(":");
                return new long[]{Integer.parseInt(at[0]), Long.parseLong(at[1])};
            }
        }
        if (args.length > 0) {
            throw new IllegalArgumentException("usage: StreamsMember [--apply-twice PARTITION:OFFSET]");
        }
        return null;
    }
}
