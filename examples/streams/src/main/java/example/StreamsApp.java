package example;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.kafkachaos.contract.ChaosStreams;

import java.util.Properties;

/**
 * Your Kafka Streams program under kafka-chaos: it numbers each key's records (a persistent store with a changelog)
 * and writes each input value, tagged with its number, to the output topic given as its first argument.
 *
 * <p>What kafka-chaos needs of it, through the contract library's ChaosStreams: the run's settings
 * ({@code chaos.properties()}: application.id the group, the bootstrap servers, client.id the member, the state
 * directory, the protocol and the scenario's `streams` block), each task's open and close from the processor, the
 * input record named in each output record's headers, and {@code chaos.run} (the listeners for restores and standbys,
 * `started`, a graceful close on SIGTERM). Everything else is the program's own.
 */
public final class StreamsApp {
    static final String STORE = "numbered";

    private StreamsApp() {
    }

    public static void main(String[] args) throws InterruptedException {
        if (args.length != 1) {
            throw new IllegalArgumentException("usage: StreamsApp OUTPUT_TOPIC");
        }
        ChaosStreams chaos = ChaosStreams.fromEnvironment();
        StreamsBuilder builder = new StreamsBuilder();
        builder.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(STORE),
                Serdes.String(), Serdes.Long()));
        builder.stream(chaos.input(), Consumed.with(Serdes.String(), Serdes.String()))
                .process(() -> new Numbering(chaos), STORE)
                .to(args[0], Produced.with(Serdes.String(), Serdes.String()));
        Properties props = chaos.properties();
        System.exit(chaos.run(new KafkaStreams(builder.build(), props), props));
    }

    /** Each key's records numbered 1, 2, ...: the value goes out as "value#n". */
    static final class Numbering implements Processor<String, String, String, String> {
        private final ChaosStreams chaos;
        private ProcessorContext<String, String> context;
        private KeyValueStore<String, Long> numbers;

        Numbering(ChaosStreams chaos) {
            this.chaos = chaos;
        }

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.numbers = context.getStateStore(STORE);
            chaos.taskOpened(context.taskId());
        }

        @Override
        public void process(Record<String, String> record) {
            RecordMetadata at = context.recordMetadata().orElseThrow();
            Long last = numbers.get(record.key());
            long n = last == null ? 1 : last + 1;
            numbers.put(record.key(), n);
            context.forward(new Record<>(record.key(), record.value() + "#" + n, record.timestamp(),
                    chaos.inputHeaders(at, record.value())));
        }

        @Override
        public void close() {
            chaos.taskClosed(context.taskId());
        }
    }
}
