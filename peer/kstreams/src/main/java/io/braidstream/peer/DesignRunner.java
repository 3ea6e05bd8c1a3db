package io.braidstream.peer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import java.io.BufferedReader;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KGroupedTable;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Predicate;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindowedKStream;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindowedKStream;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.ValueJoiner;
import org.apache.kafka.streams.kstream.ValueJoinerWithKey;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.processor.TimestampExtractor;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.test.TestRecord;

/**
 * DesignRunner builds a Braid design (its JSON form, designer/) with Kafka
 * Streams' DSL and runs it in TopologyTestDriver, for Braid's differential
 * tests (peer/difftest). Arguments are triples: a design file, an input
 * file and an output file; one JVM runs them all.
 *
 * Input lines are {"topic", "key", "value", "timestamp"}, key and value
 * the record's bytes as UTF-8 strings (null for null). After each input
 * record the runner reads every sink topic (in name order) and writes
 * each new record as {"topic", "key", "value", "timestamp"}, key and
 * value base64 (null for null). TopologyTestDriver commits after every
 * record, so record caches hold nothing across records.
 *
 * Supported: source-stream and source-table (string/json serdes, a
 * timestamp expression; a table's store named or not), filter and
 * map-values (of a stream or a table, a table's with or without a store),
 * filter-not, branch (as one filter per branch), map, flat-map,
 * flat-map-values,
 * select-key, peek, merge, group-by-key, group-by (of a stream, or of a
 * table with a value expression),
 * windowed-by (tumbling, hopping, sliding or session, grace, emit
 * on-window-update or on-window-close: suppress untilWindowCloses, of
 * sessions emitStrategy onWindowClose), count,
 * reduce, aggregate (not of sessions; no merger; a subtractor of a
 * grouped table's; caching on or off), to-stream, stream-join (inner,
 * left, outer; window or before and after, grace), stream-table-join
 * (inner, left), table-join (inner, left, outer; a store or not; a joiner
 * that does not read key) and sink
 * (string, json, int64, windowed, windowed-json serdes);
 * expressions as Expr says. Anything else is refused with a message naming
 * the node (exit status 2).
 */
public final class DesignRunner {
    static final ObjectMapper JSON = new ObjectMapper();

    /** Refused is a design outside the supported set. */
    static final class Refused extends RuntimeException {
        Refused(String msg) {
            super(msg);
        }
    }

    /** Out is the output of a node: the DSL object and its serdes. */
    static final class Out {
        Object dsl;
        String key;
        String value;
        long windowSize = -1;
        boolean emitFinal;
        long grace;
        /** session: keys are session-windowed. */
        boolean session;
        /** ports are a branch node's outputs by port name. */
        Map<String, Out> ports;
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 0 || args.length % 3 != 0) {
            System.err.println("usage: DesignRunner design.json input.jsonl output.jsonl [...]");
            System.exit(2);
        }
        for (int i = 0; i < args.length; i += 3) {
            try {
                run(Path.of(args[i]), Path.of(args[i + 1]), Path.of(args[i + 2]));
            } catch (Refused e) {
                System.err.println("design " + args[i] + ": " + e.getMessage());
                System.exit(2);
            }
        }
    }

    static void run(Path designFile, Path inputFile, Path outputFile) throws Exception {
        JsonNode design = JSON.readTree(designFile.toFile());
        StreamsBuilder b = new StreamsBuilder();
        List<String> sinks = new ArrayList<>();
        build(b, design, sinks);
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, "test-driver");
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "test-driver:0");
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.ByteArraySerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.ByteArraySerde.class);
        p.put(StreamsConfig.STATE_DIR_CONFIG, Files.createTempDirectory("braid-peer-").toString());
        // emitStrategy(onWindowClose) emits at most once a second of wall
        // clock, which TopologyTestDriver's does not advance: every record.
        p.put(StreamsConfig.InternalConfig.EMIT_INTERVAL_MS_KSTREAMS_WINDOWED_AGGREGATION, 0L);
        java.util.Collections.sort(sinks);
        try (TopologyTestDriver d = new TopologyTestDriver(b.build(), p);
                BufferedReader in = Files.newBufferedReader(inputFile);
                PrintWriter out = new PrintWriter(Files.newBufferedWriter(outputFile))) {
            Map<String, TestInputTopic<byte[], byte[]>> inputs = new HashMap<>();
            Map<String, TestOutputTopic<byte[], byte[]>> outputs = new LinkedHashMap<>();
            for (String s : sinks) {
                outputs.put(s, d.createOutputTopic(s, Serdes.ByteArray().deserializer(), Serdes.ByteArray().deserializer()));
            }
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isBlank()) {
                    continue;
                }
                JsonNode r = JSON.readTree(line);
                String topic = r.get("topic").asText();
                TestInputTopic<byte[], byte[]> t = inputs.computeIfAbsent(topic,
                        n -> d.createInputTopic(n, Serdes.ByteArray().serializer(), Serdes.ByteArray().serializer()));
                t.pipeInput(utf8(r.get("key")), utf8(r.get("value")), r.get("timestamp").asLong());
                for (Map.Entry<String, TestOutputTopic<byte[], byte[]>> e : outputs.entrySet()) {
                    for (TestRecord<byte[], byte[]> o : e.getValue().readRecordsToList()) {
                        ObjectNode j = JSON.createObjectNode();
                        j.put("topic", e.getKey());
                        j.set("key", b64(o.key()));
                        j.set("value", b64(o.value()));
                        j.put("timestamp", o.timestamp());
                        out.println(JSON.writeValueAsString(j));
                    }
                }
            }
        }
    }

    static byte[] utf8(JsonNode n) {
        return n == null || n.isNull() ? null : n.asText().getBytes(StandardCharsets.UTF_8);
    }

    static JsonNode b64(byte[] b) {
        return b == null ? NullNode.instance : TextNode.valueOf(Base64.getEncoder().encodeToString(b));
    }

    /** build adds the design's nodes to b in Braid's order and lists the sink topics. */
    static void build(StreamsBuilder b, JsonNode design, List<String> sinks) {
        Map<String, JsonNode> nodes = new LinkedHashMap<>();
        for (JsonNode n : design.path("nodes")) {
            nodes.put(n.get("id").asText(), n);
        }
        Map<String, List<String>> inputs = new HashMap<>();
        Map<String, List<String>> ports = new HashMap<>();
        Map<String, List<String>> toPorts = new HashMap<>();
        for (JsonNode e : design.path("edges")) {
            inputs.computeIfAbsent(e.get("to").asText(), k -> new ArrayList<>()).add(e.get("from").asText());
            ports.computeIfAbsent(e.get("to").asText(), k -> new ArrayList<>()).add(e.path("fromPort").asText("out"));
            toPorts.computeIfAbsent(e.get("to").asText(), k -> new ArrayList<>()).add(e.path("toPort").asText("in"));
        }
        Map<String, Out> done = new HashMap<>();
        while (done.size() < nodes.size()) {
            boolean progressed = false;
            for (JsonNode n : nodes.values()) {
                String id = n.get("id").asText();
                List<String> ins = inputs.getOrDefault(id, List.of());
                if (done.containsKey(id) || !ins.stream().allMatch(done::containsKey)) {
                    continue;
                }
                List<Out> in = new ArrayList<>();
                Map<String, Out> byPort = new HashMap<>();
                for (int i = 0; i < ins.size(); i++) {
                    Out o = done.get(ins.get(i));
                    if (o != null && o.ports != null) {
                        o = o.ports.get(ports.get(id).get(i));
                    }
                    in.add(o);
                    byPort.put(toPorts.get(id).get(i), o);
                }
                done.put(id, node(b, n, in, byPort, sinks));
                progressed = true;
                break;
            }
            if (!progressed) {
                throw new Refused("the design has a cycle or an edge from a missing node");
            }
        }
    }

    static String param(JsonNode n, String name, String dflt) {
        JsonNode v = n.path("params").get(name);
        return v == null || v.isNull() || v.asText().isEmpty() ? dflt : v.asText();
    }

    static Expr expr(JsonNode n, String name) {
        String src = param(n, name, null);
        if (src == null) {
            throw new Refused("node " + n.get("id").asText() + " (" + n.get("kind").asText() + "): parameter " + name + " is not set");
        }
        try {
            return Expr.parse(src);
        } catch (IllegalArgumentException e) {
            throw new Refused("node " + n.get("id").asText() + " (" + n.get("kind").asText() + "), parameter " + name + ": " + e.getMessage());
        }
    }

    static Map<String, JsonNode> env(Object k, Object v) {
        Map<String, JsonNode> m = new HashMap<>();
        m.put("key", node(k));
        m.put("value", node(v));
        return m;
    }

    static JsonNode node(Object o) {
        if (o == null) {
            return NullNode.instance;
        }
        if (o instanceof JsonNode) {
            return (JsonNode) o;
        }
        if (o instanceof Long) {
            return LongNode.valueOf((Long) o);
        }
        throw new IllegalStateException("no expression value for " + o.getClass().getSimpleName());
    }

    /** orNull turns an expression's nil into Java's null, a null key or value. */
    static Object orNull(JsonNode v) {
        return v == null || v.isNull() ? null : v;
    }

    static Out like(Out in, Object dsl) {
        Out o = new Out();
        o.dsl = dsl;
        o.key = in.key;
        o.value = in.value;
        o.windowSize = in.windowSize;
        o.emitFinal = in.emitFinal;
        o.grace = in.grace;
        o.session = in.session;
        return o;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static Out node(StreamsBuilder b, JsonNode n, List<Out> in, Map<String, Out> byPort, List<String> sinks) {
        String id = n.get("id").asText(), kind = n.get("kind").asText();
        Out first = in.isEmpty() ? null : in.get(0);
        switch (kind) {
            case "source-stream": {
                Out o = new Out();
                o.key = param(n, "keySerde", "string");
                o.value = param(n, "valueSerde", "json");
                Consumed c = Consumed.with(serde(id, o.key), serde(id, o.value));
                if (param(n, "timestamp", null) != null) {
                    c = c.withTimestampExtractor(timestamps(id, expr(n, "timestamp")));
                }
                o.dsl = b.stream(param(n, "topic", null), c);
                return o;
            }
            case "source-table": {
                Out o = new Out();
                o.key = param(n, "keySerde", "string");
                o.value = param(n, "valueSerde", "json");
                Consumed c = Consumed.with(serde(id, o.key), serde(id, o.value));
                if (param(n, "timestamp", null) != null) {
                    c = c.withTimestampExtractor(timestamps(id, expr(n, "timestamp")));
                }
                // Unnamed, Kafka Streams' table source keeps no store of its
                // own (docs/differences.md, "Unmaterialized tables keep a
                // store"); named, it does, as Braid's always.
                String store = param(n, "store", null);
                Materialized m = (store == null ? Materialized.<Object, Object, KeyValueStore<Bytes, byte[]>>with(serde(id, o.key), serde(id, o.value))
                        : Materialized.<Object, Object, KeyValueStore<Bytes, byte[]>>as(store).withKeySerde(serde(id, o.key)).withValueSerde(serde(id, o.value)));
                if (param(n, "caching", "on").equals("off")) {
                    m = m.withCachingDisabled();
                }
                o.dsl = b.table(param(n, "topic", null), c, m);
                return o;
            }
            case "filter":
                if (first != null && first.dsl instanceof KTable) {
                    Expr e = expr(n, "predicate");
                    Predicate pred = (k, v) -> e.test(env(k, v));
                    Materialized m = derived(n, first);
                    KTable t = (KTable) first.dsl;
                    return like(first, m == null ? t.filter(pred) : t.filter(pred, m));
                }
                // fall through: a stream
            case "filter-not": {
                requireStream(id, kind, first);
                Expr e = expr(n, "predicate");
                boolean not = kind.equals("filter-not");
                return like(first, ((KStream) first.dsl).filter((k, v) -> e.test(env(k, v)) != not));
            }
            case "map": {
                requireStream(id, kind, first);
                Expr ke = expr(n, "key"), ve = expr(n, "value");
                return like(first, ((KStream) first.dsl).map((k, v) -> {
                    Map<String, JsonNode> env = env(k, v);
                    return KeyValue.pair(orNull(ke.eval(env)), orNull(ve.eval(env)));
                }));
            }
            case "map-values": {
                Expr ve = expr(n, "value");
                if (first != null && first.dsl instanceof KTable) {
                    org.apache.kafka.streams.kstream.ValueMapperWithKey f = (k, v) -> orNull(ve.eval(env(k, v)));
                    Materialized m = derived(n, first);
                    KTable t = (KTable) first.dsl;
                    return like(first, m == null ? t.mapValues(f) : t.mapValues(f, m));
                }
                requireStream(id, kind, first);
                return like(first, ((KStream) first.dsl).mapValues((k, v) -> orNull(ve.eval(env(k, v)))));
            }
            case "flat-map": {
                requireStream(id, kind, first);
                Expr e = expr(n, "records");
                return like(first, ((KStream) first.dsl).flatMap((k, v) -> {
                    List<KeyValue<Object, Object>> out = new ArrayList<>();
                    for (JsonNode item : list(id, e.eval(env(k, v)))) {
                        if (!item.isObject() || !item.has("key") || !item.has("value")) {
                            throw new IllegalStateException("node " + id + ": element " + item + " is not a {key, value} object");
                        }
                        out.add(KeyValue.pair(orNull(Expr.normalize(item.get("key"))), orNull(Expr.normalize(item.get("value")))));
                    }
                    return out;
                }));
            }
            case "flat-map-values": {
                requireStream(id, kind, first);
                Expr e = expr(n, "values");
                // As Braid's: the expression sees the value only.
                return like(first, ((KStream) first.dsl).flatMapValues(v -> {
                    Map<String, JsonNode> env = new HashMap<>();
                    env.put("value", node(v));
                    List<Object> out = new ArrayList<>();
                    for (JsonNode item : list(id, e.eval(env))) {
                        out.add(orNull(Expr.normalize(item)));
                    }
                    return out;
                }));
            }
            case "select-key": {
                requireStream(id, kind, first);
                Expr ke = expr(n, "key");
                return like(first, ((KStream) first.dsl).selectKey((k, v) -> orNull(ke.eval(env(k, v)))));
            }
            case "branch": {
                requireStream(id, kind, first);
                // Each record goes to the first branch whose predicate
                // holds; the default branch (no predicate) takes the rest.
                List<String> names = new ArrayList<>();
                List<Expr> preds = new ArrayList<>();
                for (JsonNode br : n.path("params").path("branches")) {
                    names.add(br.get("name").asText());
                    String p = br.path("predicate").asText("");
                    try {
                        preds.add(p.isEmpty() ? null : Expr.parse(p));
                    } catch (IllegalArgumentException e) {
                        throw new Refused("node " + id + " (branch), branch " + br.get("name").asText() + ": " + e.getMessage());
                    }
                }
                Out o = new Out();
                o.ports = new HashMap<>();
                for (int i = 0; i < names.size(); i++) {
                    int me = i;
                    Predicate sel = (k, v) -> {
                        Map<String, JsonNode> env = env(k, v);
                        for (int j = 0; j < preds.size(); j++) {
                            if (preds.get(j) == null || preds.get(j).test(env)) {
                                return j == me;
                            }
                        }
                        return false;
                    };
                    o.ports.put(names.get(i), like(first, ((KStream) first.dsl).filter(sel)));
                }
                return o;
            }
            case "peek":
                requireStream(id, kind, first);
                return first;
            case "merge": {
                KStream s = (KStream) first.dsl;
                for (Out o : in.subList(1, in.size())) {
                    s = s.merge((KStream) o.dsl);
                }
                return like(first, s);
            }
            case "group-by-key":
            case "group-by": {
                if (!(kind.equals("group-by") && first != null && first.dsl instanceof KTable)) {
                    requireStream(id, kind, first);
                }
                Out o = like(first, null);
                o.key = param(n, "keySerde", first.key);
                o.value = param(n, "valueSerde", first.value);
                Grouped g = Grouped.with(serde(id, o.key), serde(id, o.value));
                if (kind.equals("group-by") && first.dsl instanceof KTable) {
                    Expr ke = expr(n, "key");
                    Expr ve = param(n, "value", null) == null ? null : expr(n, "value");
                    o.dsl = ((KTable) first.dsl).groupBy((k, v) -> {
                        Map<String, JsonNode> env = env(k, v);
                        return KeyValue.pair(orNull(ke.eval(env)), ve == null ? v : orNull(ve.eval(env)));
                    }, g);
                } else if (kind.equals("group-by-key")) {
                    o.dsl = ((KStream) first.dsl).groupByKey(g);
                } else {
                    if (param(n, "value", null) != null) {
                        throw new Refused("node " + id + " (group-by): a value expression applies to tables only");
                    }
                    Expr ke = expr(n, "key");
                    o.dsl = ((KStream) first.dsl).groupBy((k, v) -> orNull(ke.eval(env(k, v))), g);
                }
                return o;
            }
            case "windowed-by": {
                if (first == null || !(first.dsl instanceof KGroupedStream)) {
                    throw new Refused("node " + id + " (windowed-by): its input is not a grouped stream");
                }
                String type = param(n, "type", "tumbling");
                Out o = like(first, null);
                o.grace = millis(id, param(n, "grace", "0s"));
                o.emitFinal = param(n, "emit", "on-window-update").equals("on-window-close");
                if (type.equals("session")) {
                    o.session = true;
                    o.windowSize = 0;
                    SessionWindowedKStream sw = ((KGroupedStream) first.dsl).windowedBy(SessionWindows.ofInactivityGapAndGrace(
                            Duration.ofMillis(millis(id, param(n, "gap", null))), Duration.ofMillis(o.grace)));
                    // Sessions emit final results by emitStrategy(onWindowClose), as
                    // Braid's on-window-close does, not by suppress(untilWindowCloses),
                    // which emits a session when stream time reaches its end plus gap
                    // plus grace, one millisecond before it closes, and orders sessions
                    // ending together by key rather than by start.
                    o.dsl = o.emitFinal ? sw.emitStrategy(EmitStrategy.onWindowClose()) : sw;
                    return o;
                }
                o.windowSize = millis(id, param(n, "size", null));
                if (type.equals("sliding")) {
                    o.dsl = ((KGroupedStream) first.dsl).windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(
                            Duration.ofMillis(o.windowSize), Duration.ofMillis(o.grace)));
                    return o;
                }
                TimeWindows w = TimeWindows.ofSizeAndGrace(Duration.ofMillis(o.windowSize), Duration.ofMillis(o.grace));
                if (type.equals("hopping")) {
                    w = w.advanceBy(Duration.ofMillis(millis(id, param(n, "advance", null))));
                }
                o.dsl = ((KGroupedStream) first.dsl).windowedBy(w);
                return o;
            }
            case "count":
            case "reduce":
            case "aggregate": {
                if (first == null) {
                    throw new Refused("node " + id + " (" + kind + "): no input");
                }
                Out o = like(first, null);
                o.value = param(n, "valueSerde", kind.equals("count") ? "int64" : kind.equals("aggregate") ? "json" : first.value);
                Serde ks = serde(id, first.key), vs = serde(id, o.value);
                KTable t;
                if (first.dsl instanceof KGroupedStream) {
                    KGroupedStream g = (KGroupedStream) first.dsl;
                    Materialized m = Materialized.<Object, Object, KeyValueStore<Bytes, byte[]>>with(ks, vs);
                    if (param(n, "caching", "on").equals("off")) {
                        m = m.withCachingDisabled();
                    }
                    t = kind.equals("count") ? g.count(m) : kind.equals("reduce") ? g.reduce(reducer(n), m)
                            : g.aggregate(initializer(n), aggregator(n), m);
                } else if (first.dsl instanceof KGroupedTable) {
                    KGroupedTable g = (KGroupedTable) first.dsl;
                    Materialized m = Materialized.<Object, Object, KeyValueStore<Bytes, byte[]>>with(ks, vs);
                    if (param(n, "caching", "on").equals("off")) {
                        m = m.withCachingDisabled();
                    }
                    if (!kind.equals("count") && param(n, "subtractor", null) == null) {
                        throw new Refused("node " + id + " (" + kind + "): an aggregation of a table needs a subtractor");
                    }
                    t = kind.equals("count") ? g.count(m)
                            : kind.equals("reduce") ? g.reduce(tableReducer(n, "reducer"), tableReducer(n, "subtractor"), m)
                            : g.aggregate(initializer(n), tableAggregator(n, "aggregator"), tableAggregator(n, "subtractor"), m);
                } else if (first.dsl instanceof TimeWindowedKStream) {
                    TimeWindowedKStream w = (TimeWindowedKStream) first.dsl;
                    Materialized m = Materialized.<Object, Object, WindowStore<Bytes, byte[]>>with(ks, vs);
                    if (param(n, "caching", "on").equals("off")) {
                        m = m.withCachingDisabled();
                    }
                    t = kind.equals("count") ? w.count(m) : kind.equals("reduce") ? w.reduce(reducer(n), m)
                            : w.aggregate(initializer(n), aggregator(n), m);
                    if (first.emitFinal) {
                        t = t.suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()));
                    }
                } else if (first.dsl instanceof SessionWindowedKStream) {
                    SessionWindowedKStream w = (SessionWindowedKStream) first.dsl;
                    Materialized m = Materialized.<Object, Object, SessionStore<Bytes, byte[]>>with(ks, vs);
                    if (param(n, "caching", "on").equals("off")) {
                        m = m.withCachingDisabled();
                    }
                    if (kind.equals("aggregate")) {
                        throw new Refused("node " + id + " (aggregate): session windows need a merger, not supported by the peer");
                    }
                    t = kind.equals("count") ? w.count(m) : w.reduce(reducer(n), m);
                } else {
                    throw new Refused("node " + id + " (" + kind + "): its input is not grouped");
                }
                o.dsl = t;
                return o;
            }
            case "to-stream":
                if (first == null || !(first.dsl instanceof KTable)) {
                    throw new Refused("node " + id + " (to-stream): its input is not a table");
                }
                return like(first, ((KTable) first.dsl).toStream());
            case "stream-table-join": {
                Out s = byPort.get("stream"), t = byPort.get("table");
                requireStream(id, kind, s);
                if (t == null || !(t.dsl instanceof KTable)) {
                    throw new Refused("node " + id + " (stream-table-join): its table input is not a table");
                }
                Joined jd = Joined.with(serde(id, s.key), serde(id, s.value), serde(id, t.value));
                ValueJoinerWithKey j = joiner(n);
                KStream js = join(n).equals("left") ? ((KStream) s.dsl).leftJoin((KTable) t.dsl, j, jd)
                        : ((KStream) s.dsl).join((KTable) t.dsl, j, jd);
                Out o = like(s, js);
                o.value = "json";
                return o;
            }
            case "stream-join": {
                Out l = byPort.get("left"), r = byPort.get("right");
                requireStream(id, kind, l);
                requireStream(id, kind, r);
                String window = param(n, "window", null), before = param(n, "before", null), after = param(n, "after", null);
                Duration grace = Duration.ofMillis(millis(id, param(n, "grace", "0s")));
                JoinWindows w = JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(window == null ? 0 : millis(id, window)), grace);
                if (before != null) {
                    w = w.before(Duration.ofMillis(millis(id, before)));
                }
                if (after != null) {
                    w = w.after(Duration.ofMillis(millis(id, after)));
                }
                StreamJoined sj = StreamJoined.with(serde(id, l.key), serde(id, l.value), serde(id, r.value));
                ValueJoinerWithKey j = joiner(n);
                KStream ls = (KStream) l.dsl, rs = (KStream) r.dsl;
                KStream js;
                switch (join(n)) {
                    case "left":
                        js = ls.leftJoin(rs, j, w, sj);
                        break;
                    case "outer":
                        js = ls.outerJoin(rs, j, w, sj);
                        break;
                    default:
                        js = ls.join(rs, j, w, sj);
                }
                Out o = like(l, js);
                o.value = "json";
                return o;
            }
            case "table-join": {
                Out l = byPort.get("left"), r = byPort.get("right");
                if (l == null || r == null || !(l.dsl instanceof KTable) || !(r.dsl instanceof KTable)) {
                    throw new Refused("node " + id + " (table-join): its inputs are not two tables");
                }
                Expr e = joinerExpr(n);
                if (e.reads("key")) {
                    throw new Refused("node " + id + " (table-join): a joiner that reads key is not supported by the peer (Kafka Streams' table joins take a ValueJoiner)");
                }
                ValueJoiner j = (a, c) -> {
                    Map<String, JsonNode> env = new HashMap<>();
                    env.put("left", node(a));
                    env.put("right", node(c));
                    return e.eval(env);
                };
                String store = param(n, "store", null);
                Materialized m = store == null ? null : Materialized.<Object, Object, KeyValueStore<Bytes, byte[]>>as(store)
                        .withKeySerde(serde(id, l.key)).withValueSerde(serde(id, "json"));
                KTable lt = (KTable) l.dsl, rt = (KTable) r.dsl;
                KTable t;
                switch (join(n)) {
                    case "left":
                        t = m == null ? lt.leftJoin(rt, j) : lt.leftJoin(rt, j, m);
                        break;
                    case "outer":
                        t = m == null ? lt.outerJoin(rt, j) : lt.outerJoin(rt, j, m);
                        break;
                    default:
                        t = m == null ? lt.join(rt, j) : lt.join(rt, j, m);
                }
                Out o = like(l, t);
                o.value = "json";
                return o;
            }
            case "sink": {
                requireStream(id, kind, first);
                String topic = param(n, "topic", null);
                String kp = param(n, "keySerde", null);
                Serde ks;
                if (first.windowSize >= 0 && "windowed-json".equals(kp)) {
                    ks = windowedJSON();
                } else if (first.windowSize >= 0) {
                    if (kp != null && !kp.equals("windowed")) {
                        throw new Refused("node " + id + " (sink): key serde " + kp + " of windowed keys is not supported by the peer");
                    }
                    ks = first.session ? new WindowedSerdes.SessionWindowedSerde(serde(id, first.key))
                            : new WindowedSerdes.TimeWindowedSerde(serde(id, first.key), first.windowSize);
                } else {
                    ks = serde(id, kp == null ? first.key : kp);
                }
                ((KStream) first.dsl).to(topic, Produced.with(ks, serde(id, param(n, "valueSerde", first.value))));
                sinks.add(topic);
                return null;
            }
            default:
                throw new Refused("node " + id + " (" + kind + "): kind not supported by the peer");
        }
    }

    static void requireStream(String id, String kind, Out in) {
        if (in == null || !(in.dsl instanceof KStream)) {
            throw new Refused("node " + id + " (" + kind + "): its input is not a stream");
        }
    }

    /** list is the elements of a flat-map's list, or an error naming node id. */
    static List<JsonNode> list(String id, JsonNode v) {
        if (!v.isArray()) {
            throw new IllegalStateException("node " + id + ": gave " + v + ", want a list");
        }
        List<JsonNode> out = new ArrayList<>();
        v.forEach(out::add);
        return out;
    }

    /** join is a join node's type: inner, left or outer. */
    static String join(JsonNode n) {
        return param(n, "type", "inner");
    }

    /** joiner is a join node's joiner: its expression of key, left and right. */
    @SuppressWarnings("rawtypes")
    static ValueJoinerWithKey joiner(JsonNode n) {
        Expr e = joinerExpr(n);
        return (k, l, r) -> {
            Map<String, JsonNode> env = new HashMap<>();
            env.put("key", node(k));
            env.put("left", node(l));
            env.put("right", node(r));
            return e.eval(env);
        };
    }

    /** joinerExpr is a join node's joiner expression, Braid's default if unset. */
    static Expr joinerExpr(JsonNode n) {
        if (param(n, "joiner", null) == null) {
            return Expr.parse("{left: left, right: right}");
        }
        return expr(n, "joiner");
    }

    /** timestamps is a source's timestamp extractor of expression e. */
    static TimestampExtractor timestamps(String id, Expr e) {
        return (r, partitionTime) -> {
            JsonNode t = e.eval(env(r.key(), r.value()));
            if (!t.isNumber()) {
                throw new IllegalStateException("node " + id + ": timestamp " + t + " is not a number");
            }
            return (long) t.doubleValue();
        };
    }

    /**
     * derived is the Materialized of a table filter or map-values: a store
     * (caching on, as Braid's) when the node's store parameter names one,
     * else null: not materialized.
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static Materialized derived(JsonNode n, Out in) {
        String store = param(n, "store", null);
        String id = n.get("id").asText();
        if (store == null) {
            return null;
        }
        return Materialized.<Object, Object, KeyValueStore<Bytes, byte[]>>as(store)
                .withKeySerde(serde(id, in.key)).withValueSerde(serde(id, in.value));
    }

    /** tableReducer is a grouped table's adder or subtractor, expression param of n. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static org.apache.kafka.streams.kstream.Reducer tableReducer(JsonNode n, String param) {
        Expr e = expr(n, param);
        return (agg, v) -> {
            Map<String, JsonNode> env = new HashMap<>();
            env.put("aggregate", node(agg));
            env.put("value", node(v));
            return e.eval(env);
        };
    }

    /** tableAggregator is a grouped table's adder or subtractor, expression param of n. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static org.apache.kafka.streams.kstream.Aggregator tableAggregator(JsonNode n, String param) {
        Expr e = expr(n, param);
        return (k, v, agg) -> {
            Map<String, JsonNode> env = env(k, v);
            env.put("aggregate", node(agg));
            return e.eval(env);
        };
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static org.apache.kafka.streams.kstream.Reducer reducer(JsonNode n) {
        Expr e = expr(n, "reducer");
        if (param(n, "subtractor", null) != null) {
            throw new Refused("node " + n.get("id").asText() + " (reduce): a subtractor applies to tables, which the peer does not support");
        }
        return (agg, v) -> {
            Map<String, JsonNode> env = new HashMap<>();
            env.put("aggregate", node(agg));
            env.put("value", node(v));
            return e.eval(env);
        };
    }

    static org.apache.kafka.streams.kstream.Initializer<Object> initializer(JsonNode n) {
        Expr e = expr(n, "initializer");
        return () -> e.eval(new HashMap<>());
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static org.apache.kafka.streams.kstream.Aggregator aggregator(JsonNode n) {
        Expr e = expr(n, "aggregator");
        for (String p : new String[] {"subtractor", "merger"}) {
            if (param(n, p, null) != null) {
                throw new Refused("node " + n.get("id").asText() + " (aggregate): a " + p + " is not supported by the peer");
            }
        }
        return (k, v, agg) -> {
            Map<String, JsonNode> env = env(k, v);
            env.put("aggregate", node(agg));
            return e.eval(env);
        };
    }

    /** millis parses a Go duration of whole units: 500ms, 10s, 1m, 2h. */
    static long millis(String id, String d) {
        if (d == null) {
            throw new Refused("node " + id + ": a duration (size, gap, advance or window) is not set");
        }
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(\\d+)(ms|s|m|h)").matcher(d);
        if (!m.matches()) {
            throw new Refused("node " + id + ": duration " + d + " is not supported by the peer (one whole unit: ms, s, m, h)");
        }
        long v = Long.parseLong(m.group(1));
        switch (m.group(2)) {
            case "ms": return v;
            case "s": return v * 1000;
            case "m": return v * 60_000;
            default: return v * 3_600_000;
        }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static Serde serde(String id, String name) {
        switch (name) {
            case "string":
                return Serdes.serdeFrom(
                        (Serializer) (t, o) -> o == null ? null : text(o).getBytes(StandardCharsets.UTF_8),
                        (Deserializer) (t, bs) -> bs == null ? null : TextNode.valueOf(new String(bs, StandardCharsets.UTF_8)));
            case "json":
                return Serdes.serdeFrom(
                        (Serializer) (t, o) -> {
                            try {
                                return o == null ? null : JSON.writeValueAsBytes(node(o));
                            } catch (Exception e) {
                                throw new IllegalStateException(e);
                            }
                        },
                        (Deserializer) (t, bs) -> {
                            try {
                                return bs == null ? null : JSON.readTree(bs);
                            } catch (Exception e) {
                                throw new IllegalStateException(e);
                            }
                        });
            case "int64":
                return Serdes.serdeFrom(
                        (Serializer) (t, o) -> o == null ? null : ByteBuffer.allocate(8).putLong(node(o).longValue()).array(),
                        (Deserializer) (t, bs) -> bs == null ? null : Long.valueOf(ByteBuffer.wrap(bs).getLong()));
            default:
                throw new Refused("node " + id + ": serde " + name + " is not supported by the peer (string, json, int64)");
        }
    }

    /** windowedJSON is Braid's windowed-json serde: {"key", "start", "end"}, for writing. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static Serde windowedJSON() {
        return Serdes.serdeFrom(
                (Serializer) (t, o) -> {
                    if (o == null) {
                        return null;
                    }
                    Windowed<Object> w = (Windowed<Object>) o;
                    ObjectNode j = JSON.createObjectNode();
                    j.set("key", node(w.key()));
                    j.put("start", w.window().start());
                    j.put("end", w.window().end());
                    return j.toString().getBytes(StandardCharsets.UTF_8);
                },
                (Deserializer) (t, bs) -> {
                    throw new IllegalStateException("the peer only writes windowed-json");
                });
    }

    static String text(Object o) {
        JsonNode n = node(o);
        if (!n.isTextual()) {
            throw new IllegalStateException("the string serde takes strings, not " + n);
        }
        return n.textValue();
    }
}
