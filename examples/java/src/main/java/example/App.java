package example;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.kafkachaos.contract.ChaosConsumer;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * examples/python/app.py in Java: an application of yours as a group member under kafka-chaos (library mode). It
 * reads its topics in batches, works 200 ms on each batch, and commits what it worked on after each batch and when
 * partitions are taken from it. kafka-chaos's lines: the consumer comes from {@link ChaosConsumer}, and
 * {@code processed(record)} says a record's work is done. Outside a run:
 * {@code java -jar app.jar --bootstrap-servers HOST:PORT --topic T --group G}.
 *
 * <p>Planted bugs: {@code --bug commit-first} commits the position after each poll and works on those records after the
 * next poll; {@code --bug seek-past} seeks each partition it is given to its committed offset + 1.
 */
public final class App implements ConsumerRebalanceListener {
    static final long WORK_PER_BATCH_MS = 200;

    private final ChaosConsumer consumer;
    private final String bug;
    private final String output;
    private final String member;
    private final KafkaProducer<byte[], byte[]> producer;
    private final Map<TopicPartition, OffsetAndMetadata> done = new LinkedHashMap<>();
    private volatile boolean stopping;

    App(Map<String, String> args) {
        this.bug = args.get("--bug");
        this.output = args.get("--output");
        this.member = ChaosConsumer.member("example-app");
        Properties own = new Properties();
        own.put("bootstrap.servers", args.getOrDefault("--bootstrap-servers", "localhost:9092"));
        own.put("group.id", args.getOrDefault("--group", "example-app"));
        own.put("enable.auto.commit", "false");
        own.put("auto.offset.reset", "earliest");
        this.consumer = ChaosConsumer.create(own);
        List<String> fallback = List.of(args.getOrDefault("--topic", "example"));
        this.consumer.subscribe(ChaosConsumer.topics(fallback), this);
        if (output != null) {
            Properties p = new Properties();
            p.put("bootstrap.servers", own.get("bootstrap.servers"));
            p.put("key.serializer", ByteArraySerializer.class.getName());
            p.put("value.serializer", ByteArraySerializer.class.getName());
            this.producer = new KafkaProducer<>(ChaosConsumer.producerSettings(p));
        } else {
            this.producer = null;
        }
    }

    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
        partitions.forEach(done::remove);  // work done in an earlier ownership is the committed offset's to say
        if ("seek-past".equals(bug)) {
            Map<TopicPartition, OffsetAndMetadata> committed = consumer.kafka().committed(new java.util.HashSet<>(partitions));
            committed.forEach((tp, o) -> {
                if (o != null) {
                    consumer.kafka().seek(tp, o.offset() + 1);
                }
            });
        }
    }

    /** Partitions lost (the group went on without this member): too late to commit; another member has them. */
    @Override
    public void onPartitionsLost(Collection<TopicPartition> partitions) {
        partitions.forEach(done::remove);
    }

    /** Commit what was worked on in the partitions taken away, before another member starts on them. */
    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
        commit(partitions);
    }

    void work(List<ConsumerRecord<byte[], byte[]>> batch) throws InterruptedException {
        if (batch.isEmpty()) {
            return;
        }
        Thread.sleep(WORK_PER_BATCH_MS);
        for (ConsumerRecord<byte[], byte[]> r : batch) {
            if (producer != null) {
                ProducerRecord<byte[], byte[]> out = new ProducerRecord<>(output, r.key(), r.value());
                out.headers().add("in-topic", r.topic().getBytes(StandardCharsets.UTF_8))
                        .add("in-partition", String.valueOf(r.partition()).getBytes(StandardCharsets.UTF_8))
                        .add("in-offset", String.valueOf(r.offset()).getBytes(StandardCharsets.UTF_8))
                        .add("in-member", member.getBytes(StandardCharsets.UTF_8));
                producer.send(out);
            }
            consumer.processed(r);
            done.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
        }
        if (producer != null) {
            producer.flush();  // never commit what was not written
        }
    }

    void commit(Collection<TopicPartition> only) {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        done.forEach((tp, o) -> {
            if (only == null || only.contains(tp)) {
                offsets.put(tp, o);
            }
        });
        if (offsets.isEmpty()) {
            return;
        }
        try {
            consumer.commitSync(offsets);
            offsets.keySet().forEach(done::remove);
        } catch (KafkaException e) {  // a rebalance under way: the next commit carries these offsets again
            System.out.println("commit failed: " + e);
        }
    }

    void run() throws InterruptedException {
        List<ConsumerRecord<byte[], byte[]>> held = new ArrayList<>();
        while (!stopping) {
            ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofSeconds(1));
            List<ConsumerRecord<byte[], byte[]>> batch = new ArrayList<>();
            records.forEach(batch::add);
            if ("commit-first".equals(bug)) {
                if (!batch.isEmpty()) {  // the position committed: past records not yet worked on, held until the next batch
                    consumer.commitSync();
                    work(held);
                    held = batch;
                }
            } else {
                work(batch);
                commit(null);
            }
        }
        consumer.close();
        if (producer != null) {
            producer.close();
        }
    }

    static Map<String, String> arguments(String[] args) {
        Map<String, String> out = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            out.put(args[i], args[i + 1]);
        }
        return out;
    }

    public static void main(String[] args) throws InterruptedException {
        App app = new App(arguments(args));
        Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {  // SIGTERM (member_leave): close, leave the group
            app.stopping = true;
            try {
                main.join(30_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }));
        app.run();
    }
}
