package io.braidstream.peer;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.WindowStore;

/**
 * One workload of {@code braid bench peer} on Kafka Streams, the same
 * topology as Braid's side of it (bench/peer.go), on byte-array keys and
 * values as the seeded records are:
 *
 * <ul>
 *   <li>{@code pipe}: filter (value not null) and mapValues (identity), as
 *       bench.BraidPipe;
 *   <li>{@code count}: groupByKey().count() into store "counts", written as
 *       8-byte big-endian longs, as bench.BraidCount;
 *   <li>{@code window}: tumbling 10 s windows with 5 s grace, count,
 *       suppress(untilWindowCloses) (emit final), written with the
 *       time-windowed key serde (key, then the window's 8-byte start) as
 *       bench.BraidWindowedCount;
 *   <li>{@code join}: an inner stream-stream join of the two input topics
 *       within 5 s before and after, 1 h grace, passing the left value on,
 *       as bench.BraidJoin.
 * </ul>
 *
 * <p>Everything not given on the command line is Kafka Streams' default
 * (RocksDB stores). It prints JSON lines on stdout, each with the wall
 * clock in milliseconds: {@code started}, {@code running} (the state
 * RUNNING), {@code first} (the first input record fetched, from the
 * consumers' per-topic records-consumed-total metric), with --stop-after-records N {@code done} when it
 * processed N records and closed (which commits), and {@code closed} with
 * the records processed;
 * with --warm-up-records N, first {@code warm} after a warm-up pass of the
 * same topology as application ID-warm-up (output topic OUT-warm-up) over
 * the same input processed N records in this JVM; an {@code error} line and
 * exit status 1 if the application fails. With --restore-stores N it
 * restores instead (see restore). Otherwise it runs until SIGTERM; the
 * Go side decides when the input is done from the group's committed
 * offsets. The failover of {@code braid bench peer} adds --session-timeout-ms,
 * --standbys (num.standby.replicas) and --report-tasks true, which prints
 * {@code tasks} events (see reportTasks); it ends with SIGKILL.
 *
 * <pre>
 * Bench --workload pipe|count|window|join --bootstrap H:P --application-id ID
 *       --state-dir D --input T[,T2] --output T [--guarantee at_least_once|exactly_once_v2]
 *       [--commit-interval-ms N] [--cache-max-bytes N] [--threads N] [--warm-up-records N]
 *       [--stop-after-records N] [--restore-stores N] [--restore-warm-up true|false]
 *       [--session-timeout-ms N --standbys N --report-tasks true]
 * </pre>
 */
public final class Bench {
    private Bench() {}

    public static void main(String[] argv) throws Exception {
        Map<String, String> args = parse(argv);
        String workload = need(args, "workload");
        String[] inputs = need(args, "input").split(",");
        Topology topology = topology(workload, inputs, need(args, "output"));
        int restoreStores = Integer.parseInt(args.getOrDefault("restore-stores", "0"));
        if (restoreStores > 0) {
            restore(args, workload, inputs, restoreStores);
            return;
        }

        long warmUp = Long.parseLong(args.getOrDefault("warm-up-records", "0"));
        if (warmUp > 0) {
            // The warm-up pass: the same topology as another application
            // (its own group, state dir and output topic) over the same
            // input, in this JVM, until it processed warmUp records; then
            // the measured application starts in the JVM it warmed.
            Topology warm = topology(workload, inputs, need(args, "output") + "-warm-up");
            Properties wp = properties(args, need(args, "application-id") + "-warm-up", need(args, "state-dir") + "/warm-up");
            KafkaStreams ws = new KafkaStreams(warm, wp);
            ws.start();
            while (processed(ws) < warmUp) {
                if (ws.state() == KafkaStreams.State.ERROR || ws.state() == KafkaStreams.State.NOT_RUNNING) {
                    System.out.println("{\"event\":\"error\",\"at_ms\":" + System.currentTimeMillis()
                            + ",\"message\":\"the warm-up pass failed\"}");
                    System.exit(1);
                }
                Thread.sleep(5);
            }
            long n = (long) processed(ws);
            closeLeaving(ws);
            event("warm", n);
        }

        KafkaStreams streams = new KafkaStreams(topology, properties(args, need(args, "application-id"), need(args, "state-dir")));
        CountDownLatch stopped = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.RUNNING) {
                event("running", -1);
            }
            if (now == KafkaStreams.State.ERROR) {
                stopped.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            System.out.println("{\"event\":\"error\",\"at_ms\":" + System.currentTimeMillis()
                    + ",\"message\":" + quote(String.valueOf(e)) + "}");
            System.out.flush();
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            long n = (long) processed(streams);
            closeLeaving(streams);
            event("closed", n);
            stopped.countDown();
        }));
        if (Boolean.parseBoolean(args.getOrDefault("report-tasks", "false"))) {
            reportTasks(streams);
        }
        streams.start();
        event("started", -1);
        // The first input record fetched: the consumers' per-topic
        // records-consumed-total, polled every 2 ms (the span it starts is
        // seconds long).
        while (stopped.getCount() > 0 && fetched(streams, inputs) == 0) {
            Thread.sleep(2);
        }
        if (stopped.getCount() > 0) {
            event("first", -1);
        }
        long stopAfter = Long.parseLong(args.getOrDefault("stop-after-records", "0"));
        if (stopAfter > 0) {
            // Done: closing commits at once, as Braid's worker does, rather
            // than at the next commit interval.
            while (stopped.getCount() > 0 && processed(streams) < stopAfter) {
                Thread.sleep(1);
            }
            if (stopped.getCount() > 0) {
                long n = (long) processed(streams);
                closeLeaving(streams);
                event("done", n);
            }
        }
        stopped.await();
        if (streams.state() == KafkaStreams.State.ERROR) {
            System.exit(1);
        }
    }

    /**
     * The restore (--restore-stores N): with --restore-warm-up true, an
     * unmeasured restore into DIR/warm-up first ({@code warm}); then
     * {@code restoring}, a restore into DIR/run, and {@code restored} with
     * the records restored once N stores' restores ended; then it closes.
     */
    static void restore(Map<String, String> args, String workload, String[] inputs, int stores) throws Exception {
        if (Boolean.parseBoolean(args.getOrDefault("restore-warm-up", "false"))) {
            event("warm", restoreOnce(args, workload, inputs, stores, need(args, "state-dir") + "/warm-up", false));
        }
        event("restoring", -1);
        restoreOnce(args, workload, inputs, stores, need(args, "state-dir") + "/run", true);
    }

    /**
     * Starts the application on stateDir, waits until stores stores ended
     * their restores (a StateRestoreListener's onRestoreEnd), prints
     * {@code restored} if measured, closes it and returns the records
     * restored.
     */
    static long restoreOnce(Map<String, String> args, String workload, String[] inputs, int stores, String stateDir,
            boolean measured) throws Exception {
        KafkaStreams streams = new KafkaStreams(topology(workload, inputs, need(args, "output")),
                properties(args, need(args, "application-id"), stateDir));
        AtomicLong restored = new AtomicLong();
        CountDownLatch ended = new CountDownLatch(stores);
        streams.setGlobalStateRestoreListener(new StateRestoreListener() {
            @Override
            public void onRestoreStart(TopicPartition tp, String store, long start, long end) {}

            @Override
            public void onBatchRestored(TopicPartition tp, String store, long batchEnd, long n) {}

            @Override
            public void onRestoreEnd(TopicPartition tp, String store, long total) {
                restored.addAndGet(total);
                ended.countDown();
            }
        });
        streams.start();
        while (!ended.await(1, TimeUnit.MILLISECONDS)) {
            if (streams.state() == KafkaStreams.State.ERROR || streams.state() == KafkaStreams.State.NOT_RUNNING) {
                System.out.println("{\"event\":\"error\",\"at_ms\":" + System.currentTimeMillis()
                        + ",\"message\":\"the restore failed\"}");
                System.exit(1);
            }
        }
        long n = restored.get();
        if (measured) {
            event("restored", n);
        }
        closeLeaving(streams);
        return n;
    }

    /**
     * Closes streams (committing), leaving the group as Braid's App.Close
     * does, so that the bench can delete the group right after.
     */
    static void closeLeaving(KafkaStreams streams) {
        streams.close(org.apache.kafka.streams.CloseOptions.timeout(Duration.ofSeconds(30))
                .withGroupMembershipOperation(
                        org.apache.kafka.streams.CloseOptions.GroupMembershipOperation.LEAVE_GROUP));
    }

    /** The configuration of application id, state dir and the arguments. */
    static Properties properties(Map<String, String> args, String applicationId, String stateDir) {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, need(args, "bootstrap"));
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, args.getOrDefault("guarantee", StreamsConfig.AT_LEAST_ONCE));
        if (args.containsKey("commit-interval-ms")) {
            p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, args.get("commit-interval-ms"));
        }
        if (args.containsKey("cache-max-bytes")) {
            p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, args.get("cache-max-bytes"));
        }
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, args.getOrDefault("threads", "1"));
        // The failover's: its consumers' session timeout, and standbys.
        if (Long.parseLong(args.getOrDefault("session-timeout-ms", "0")) > 0) {
            p.put(StreamsConfig.consumerPrefix("session.timeout.ms"), args.get("session-timeout-ms"));
        }
        if (Integer.parseInt(args.getOrDefault("standbys", "0")) > 0) {
            p.put(StreamsConfig.NUM_STANDBY_REPLICAS_CONFIG, args.get("standbys"));
        }
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.ByteArraySerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.ByteArraySerde.class);
        return p;
    }

    static Topology topology(String workload, String[] inputs, String output) {
        Serde<byte[]> bytes = Serdes.ByteArray();
        StreamsBuilder b = new StreamsBuilder();
        switch (workload) {
            case "pipe" -> b.stream(inputs[0], Consumed.with(bytes, bytes))
                    .filter((k, v) -> v != null)
                    .mapValues(v -> v)
                    .to(output, Produced.with(bytes, bytes));
            case "count" -> b.stream(inputs[0], Consumed.with(bytes, bytes))
                    .groupByKey(Grouped.with(bytes, bytes))
                    .count(Materialized.<byte[], Long, KeyValueStore<Bytes, byte[]>>as("counts")
                            .withKeySerde(bytes).withValueSerde(Serdes.Long()))
                    .toStream()
                    .to(output, Produced.with(bytes, Serdes.Long()));
            case "window" -> b.stream(inputs[0], Consumed.with(bytes, bytes))
                    .groupByKey(Grouped.with(bytes, bytes))
                    .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(5)))
                    .count(Materialized.<byte[], Long, WindowStore<Bytes, byte[]>>as("counts")
                            .withKeySerde(bytes).withValueSerde(Serdes.Long()))
                    .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
                    .toStream()
                    .to(output, Produced.with(
                            WindowedSerdes.timeWindowedSerdeFrom(byte[].class, Duration.ofSeconds(10).toMillis()),
                            Serdes.Long()));
            case "join" -> {
                if (inputs.length != 2) {
                    throw new IllegalArgumentException("--input: the join takes two topics, left,right");
                }
                KStream<byte[], byte[]> left = b.stream(inputs[0], Consumed.with(bytes, bytes));
                KStream<byte[], byte[]> right = b.stream(inputs[1], Consumed.with(bytes, bytes));
                left.join(right, (l, r) -> l,
                                JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(5), Duration.ofHours(1)),
                                StreamJoined.with(bytes, bytes, bytes).withStoreName("pairs"))
                        .to(output, Produced.with(bytes, bytes));
            }
            default -> throw new IllegalArgumentException(
                    "--workload: unknown workload \"" + workload + "\" (known: pipe, count, window, join)");
        }
        return b.build();
    }

    /**
     * The failover's (--report-tasks true): a daemon thread that prints
     * {@code tasks} with the partitions of the active and standby tasks of
     * this instance (named "app", as Braid's single App) whenever they
     * change while it is RUNNING, polled every 10 ms.
     */
    static void reportTasks(KafkaStreams streams) {
        Thread t = new Thread(() -> {
            String last = "";
            while (true) {
                if (streams.state() == KafkaStreams.State.RUNNING) {
                    java.util.TreeSet<Integer> active = new java.util.TreeSet<>();
                    java.util.TreeSet<Integer> standby = new java.util.TreeSet<>();
                    for (org.apache.kafka.streams.ThreadMetadata tm : streams.metadataForLocalThreads()) {
                        tm.activeTasks().forEach(task -> active.add(task.taskId().partition()));
                        tm.standbyTasks().forEach(task -> standby.add(task.taskId().partition()));
                    }
                    String now = "{\"app\":{\"active\":" + active.toString().replace(" ", "")
                            + ",\"standby\":" + standby.toString().replace(" ", "") + "}}";
                    if (!now.equals(last)) {
                        last = now;
                        System.out.println("{\"event\":\"tasks\",\"at_ms\":" + System.currentTimeMillis()
                                + ",\"tasks\":" + now + "}");
                        System.out.flush();
                    }
                }
                try {
                    Thread.sleep(10);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "report-tasks");
        t.setDaemon(true);
        t.start();
    }

    /** Records of the input topics the application's consumers fetched so far. */
    static double fetched(KafkaStreams streams, String[] inputs) {
        double n = 0;
        for (Map.Entry<MetricName, ? extends Metric> e : streams.metrics().entrySet()) {
            MetricName m = e.getKey();
            if (m.name().equals("records-consumed-total") && m.group().equals("consumer-fetch-manager-metrics")
                    && java.util.Arrays.asList(inputs).contains(m.tags().get("topic"))) {
                Object v = e.getValue().metricValue();
                if (v instanceof Number num) {
                    n += num.doubleValue();
                }
            }
        }
        return n;
    }

    /** Records processed by all stream threads so far. */
    static double processed(KafkaStreams streams) {
        double n = 0;
        for (Map.Entry<MetricName, ? extends Metric> e : streams.metrics().entrySet()) {
            MetricName m = e.getKey();
            if (m.name().equals("process-total") && m.group().equals("stream-thread-metrics")) {
                Object v = e.getValue().metricValue();
                if (v instanceof Number num) {
                    n += num.doubleValue();
                }
            }
        }
        return n;
    }

    /** Prints event name; processed, unless negative, as "processed". */
    static void event(String name, long processed) {
        eventLine(name, processed);
    }

    static void eventLine(String name, long processed) {
        System.out.println("{\"event\":\"" + name + "\",\"at_ms\":" + System.currentTimeMillis()
                + (processed >= 0 ? ",\"processed\":" + processed : "") + "}");
        System.out.flush();
    }

    static String quote(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                sb.append('\\').append(c);
            } else if (c < 0x20) {
                sb.append(String.format("\\u%04x", (int) c));
            } else {
                sb.append(c);
            }
        }
        return sb.append('"').toString();
    }

    static Map<String, String> parse(String[] argv) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i < argv.length; i++) {
            String a = argv[i];
            if (!a.startsWith("--") || i + 1 >= argv.length) {
                throw new IllegalArgumentException("argument " + (i + 1) + " (" + a + "): want --name value");
            }
            m.put(a.substring(2), argv[++i]);
        }
        return m;
    }

    static String need(Map<String, String> args, String name) {
        String v = args.get(name);
        if (v == null || v.isEmpty()) {
            throw new IllegalArgumentException("--" + name + " is required");
        }
        return v;
    }
}
