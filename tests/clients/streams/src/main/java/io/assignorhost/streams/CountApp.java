package io.assignorhost.streams;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * A Kafka Streams application with state: it counts the words of an input topic (values),
 * per word, in a state store behind a repartition, and writes every new count to an output
 * topic (word -> count, a long). So it has Kafka Streams' two kinds of internal topics, which
 * it creates itself at start (through whatever it bootstraps from): the repartition topic
 * {@code <application>-by-word-repartition} and the store's changelog
 * {@code <application>-counts-changelog}.
 *
 * <p>The record cache is off, so each input record makes exactly one output record, the
 * word's count after it: with {@code exactly_once_v2}, the committed output of a word is
 * 1, 2, ..., its number of inputs, once each, whatever restarts happen.
 *
 * <p>Flags: {@code --bootstrap}, {@code --application-id}, {@code --input}, {@code --output},
 * {@code --guarantee} ({@code at_least_once} or {@code exactly_once_v2}), {@code --state-dir},
 * {@code --name} (its client id and its lines' name), and optionally {@code --group-protocol}
 * ({@code classic}, the default, or {@code streams}), {@code --sasl MECHANISM:USER} (a
 * login, the password in {@code AGENT_SASL_PASSWORD}) and {@code --ssl-ca FILE} (TLS). It
 * prints JSON lines on stdout:
 * {@code started} (its topology's internal topics), {@code state} (every state change),
 * {@code tasks} (its active tasks, each time it is RUNNING), {@code error} (an uncaught
 * exception, after which it shuts down), and {@code closed}. SIGTERM closes it cleanly (its
 * last commit included); SIGKILL is a crash.
 */
public final class CountApp {
    private CountApp() {}

    public static void main(String[] args) throws InterruptedException {
        Map<String, String> flags = parse(args);
        String name = flags.get("name");
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, flags.get("application-id"));
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, flags.get("bootstrap"));
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, flags.get("guarantee"));
        props.put(StreamsConfig.STATE_DIR_CONFIG, flags.get("state-dir"));
        props.put(StreamsConfig.CLIENT_ID_CONFIG, name);
        // The classic group protocol (the default, said here): the group is the host's, and
        // Streams' own assignor ("stream") runs in the client the host elects leader.
        // `--group-protocol streams` (KIP-1071) is for the test that the host refuses it.
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG,
            flags.getOrDefault("group-protocol", "classic"));
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        if (flags.containsKey("sasl")) {
            login(props, flags.get("sasl"));
        }
        if (flags.containsKey("ssl-ca")) {
            // TLS trusting the PEM CA (SASL_SSL after a login).
            boolean sasl = "SASL_PLAINTEXT".equals(props.get("security.protocol"));
            props.put("security.protocol", sasl ? "SASL_SSL" : "SSL");
            props.put("ssl.truststore.type", "PEM");
            props.put("ssl.truststore.location", flags.get("ssl-ca"));
        }
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        // A crashed instance's member leaves the group after 6 s (the host's minimum), not
        // the default 45 s.
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1000);

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(flags.get("input"), Consumed.with(Serdes.String(), Serdes.String()))
            .groupBy((key, word) -> word, Grouped.with("by-word", Serdes.String(), Serdes.String()))
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts")
                .withKeySerde(Serdes.String())
                .withValueSerde(Serdes.Long()))
            .toStream()
            .to(flags.get("output"), Produced.with(Serdes.String(), Serdes.Long()));
        Topology topology = builder.build();

        KafkaStreams streams = new KafkaStreams(topology, props);
        CountDownLatch closed = new CountDownLatch(1);
        streams.setStateListener((to, from) -> {
            say(name, "state", "\"from\":" + quote(from.name()) + ",\"to\":" + quote(to.name()));
            if (to == KafkaStreams.State.RUNNING) {
                TreeSet<String> tasks = new TreeSet<>();
                streams.metadataForLocalThreads().forEach(thread ->
                    thread.activeTasks().forEach(task -> tasks.add(task.taskId().toString())));
                StringBuilder list = new StringBuilder("[");
                for (String task : tasks) {
                    list.append(list.length() > 1 ? "," : "").append(quote(task));
                }
                say(name, "tasks", "\"active\":" + list + "]");
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            say(name, "error", "\"message\":" + quote(String.valueOf(e)));
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(30));
            say(name, "closed", "\"state\":" + quote(streams.state().name()));
            closed.countDown();
        }));
        say(name, "started", "\"guarantee\":" + quote(flags.get("guarantee"))
            + ",\"topology\":" + quote(topology.describe().toString()));
        streams.start();
        closed.await();
    }

    private static Map<String, String> parse(String[] args) {
        Map<String, String> flags = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (!args[i].startsWith("--")) {
                throw new IllegalArgumentException("expected a --flag, got " + args[i]);
            }
            flags.put(args[i].substring(2), args[i + 1]);
        }
        for (String required : new String[] {
            "bootstrap", "application-id", "input", "output", "guarantee", "state-dir", "name"}) {
            if (!flags.containsKey(required)) {
                throw new IllegalArgumentException("--" + required + " is required");
            }
        }
        return flags;
    }

    /**
     * Settings that log in with SASL over SASL_PLAINTEXT: {@code spec} is {@code --sasl}'s
     * {@code MECHANISM:USER}, the password comes from the environment's
     * {@code AGENT_SASL_PASSWORD} (never the command line, which {@code ps} shows).
     */
    static void login(Properties conf, String spec) {
        int colon = spec.indexOf(':');
        String password = System.getenv("AGENT_SASL_PASSWORD");
        if (colon < 0 || password == null) {
            throw new IllegalArgumentException(
                    "--sasl is MECHANISM:USER, with the password in AGENT_SASL_PASSWORD");
        }
        String mechanism = spec.substring(0, colon);
        String module = mechanism.equals("PLAIN")
                ? "org.apache.kafka.common.security.plain.PlainLoginModule"
                : "org.apache.kafka.common.security.scram.ScramLoginModule";
        conf.put("security.protocol", "SASL_PLAINTEXT");
        conf.put("sasl.mechanism", mechanism);
        conf.put("sasl.jaas.config", module + " required username=\"" + spec.substring(colon + 1)
                + "\" password=\"" + password + "\";");
    }

    /** One JSON line; stdout is shared by the threads, so one write per line. */
    private static synchronized void say(String name, String event, String fields) {
        System.out.println("{\"name\":" + quote(name) + ",\"event\":" + quote(event)
            + (fields.isEmpty() ? "" : "," + fields) + "}");
        System.out.flush();
    }

    private static String quote(String text) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.append('"').toString();
    }
}
