package org.kafkachaos.streams;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.state.KeyValueStore;
import org.kafkachaos.contract.ChaosStreams;
import org.kafkachaos.contract.Json;

import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * Each key's count and sum of seq (the number a record's value ends with, after its last ':'), and the offset of the
 * last input record applied: the value workloads/state.py writes to a changelog ({"count", "sum", "last_offset",
 * "member", "ts_ms"}), so the harness reads this store's changelog as it reads a stateful member's. Each record writes
 * the key's new totals to the output topic with prev_offset (the value it built on) and the input record's place and
 * identity in headers (ChaosStreams.inputHeaders): the harness makes consumed rows and state rows of them.
 */
final class Totals implements Processor<String, String, String, String> {
    static final String STORE = "totals";
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private final ChaosStreams chaos;
    private final long[] twice;  // the planted double apply: {partition, offset}, or null
    private ProcessorContext<String, String> context;
    private KeyValueStore<String, String> store;

    Totals(ChaosStreams chaos, long[] twice) {
        this.chaos = chaos;
        this.twice = twice;
    }

    @Override
    public void init(ProcessorContext<String, String> context) {
        this.context = context;
        this.store = context.getStateStore(STORE);
        chaos.taskOpened(context.taskId());
    }

    @Override
    public void process(Record<String, String> record) {
        RecordMetadata at = context.recordMetadata().orElseThrow();
        apply(record, at);
        if (twice != null && twice[0] == at.partition() && twice[1] == at.offset()) {
            apply(record, at);
        }
    }

    private void apply(Record<String, String> record, RecordMetadata at) {
        long count = 0;
        long sum = 0;
        long prev = -1;
        String old = store.get(record.key());
        if (old != null) {
            JsonNode v = read(old);
            count = v.path("count").asLong();
            sum = v.path("sum").asLong();
            prev = v.path("last_offset").asLong();
        }
        long now = System.currentTimeMillis();
        String member = chaos.config().member();
        count += 1;
        sum += seq(record.value());
        store.put(record.key(), Json.write(Json.obj("count", count, "sum", sum, "last_offset", at.offset(),
                "member", member, "ts_ms", now)));
        String value = Json.write(Json.obj("count", count, "sum", sum, "last_offset", at.offset(), "prev_offset", prev,
                "member", member, "ts_ms", now));
        context.forward(new Record<>(record.key(), value, record.timestamp(), chaos.inputHeaders(at, record.value())));
    }

    @Override
    public void close() {
        chaos.taskClosed(context.taskId());
    }

    static long seq(String value) {
        return Long.parseLong(value.substring(value.lastIndexOf(':') + 1));
    }

    private static JsonNode read(String value) {
        try {
            return MAPPER.readTree(value);
        } catch (IOException e) {
            throw new UncheckedIOException("a totals value that is not JSON: " + value, e);
        }
    }

}
