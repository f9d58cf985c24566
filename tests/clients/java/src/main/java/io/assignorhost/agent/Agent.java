package io.assignorhost.agent;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * One Apache Kafka {@code KafkaConsumer} (kafka-clients 4.4) speaking the agent protocol of
 * tests/clients/agents/common.py: events on stdout, commands on stdin, the same flags.
 *
 * <p>{@code --group-protocol classic} (the default) is the {@code ClassicKafkaConsumer}
 * (JoinGroup/SyncGroup), with Kafka's own assignors named by their protocol names
 * ({@code range}, {@code roundrobin}, {@code sticky}, {@code cooperative-sticky}) or one other
 * name the host computes ({@link HostAssigned}); {@code consumer} is KIP-848's
 * {@code AsyncKafkaConsumer} (ConsumerGroupHeartbeat) with {@code group.remote.assignor}.
 *
 * <p>The assignment reported is the consumer's whole assignment ({@code assignment()}) in
 * {@code onPartitionsAssigned}: under an eager protocol the callback is handed everything,
 * under cooperative-sticky and the consumer protocol only the additions (reported as
 * {@code added}), and the client has installed them before it calls back. Member id and
 * generation (the member epoch under the consumer protocol) are {@code groupMetadata()}'s.
 * {@code onPartitionsLost} is reported as {@code revoked} with {@code lost: true}.
 *
 * <p>Two commands besides common.py's: {@code {"cmd": "stall", "ms": N}} holds the consumer's
 * thread N ms without polling (an application slow to process a batch; answered by
 * {@code stalled}), and {@code {"cmd": "stacks"}} prints every thread's stack on stderr.
 *
 * <p>Ownership stamps ({@code since}/{@code since_ns} on {@code assigned}, {@code at}/
 * {@code at_ns} on {@code revoked} and {@code closed}) are taken in the callbacks: the
 * application owns a partition from the start of {@code onPartitionsAssigned} (no record of
 * it is returned before) to the end of {@code onPartitionsRevoked} (none after, and the
 * client tells the coordinator it released it only once the callback returned). A loss is
 * the exception: a member that overstayed {@code max.poll.interval.ms} or was fenced learns of
 * it in {@code onPartitionsLost} at its next poll, after the coordinator may have handed the
 * partitions on (Kafka's zombie member), so its interval can overlap the next owner's.
 */
public final class Agent {
    private final Args args;
    private final KafkaConsumer<byte[], byte[]> consumer;
    private final Positions positions = new Positions();
    private final BlockingQueue<JsonNode> commands = new LinkedBlockingQueue<>();
    /** The member id of the last assignment, reported again with {@code revoked}. */
    private String memberId;

    private Agent(Args args) {
        this.args = args;
        this.consumer = new KafkaConsumer<>(config(args), new ByteArrayDeserializer(),
                new ByteArrayDeserializer());
    }

    static Properties config(Args args) {
        Properties conf = new Properties();
        conf.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args.bootstrap);
        conf.put(ConsumerConfig.GROUP_ID_CONFIG, args.group);
        conf.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        conf.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        if (args.sasl != null) {
            Args.login(conf, args.sasl);
        }
        if (args.sslCa != null) {
            Args.tls(conf, args.sslCa, args.sslCert, args.sslKey);
        }
        if (args.consumerProtocol()) {
            // KIP-848: the coordinator assigns and sets the session and heartbeat timing; the
            // client refuses partition.assignment.strategy, session.timeout.ms and
            // heartbeat.interval.ms with group.protocol=consumer.
            conf.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
            if (args.remoteAssignor != null) {
                conf.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, args.remoteAssignor);
            }
        } else {
            // Kafka's lower bound (group.min.session.timeout.ms) is 6000; the host enforces it.
            // A static member gets 30 s: the window a restart has to come back without a
            // rebalance (KIP-345), wide enough for a JVM starting on a loaded machine.
            conf.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG,
                    args.instanceId == null ? "6000" : "30000");
            conf.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
            if (!args.strategies.isEmpty()) {
                conf.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
                        assignors(args.strategies, conf));
            }
        }
        if (args.rebalanceTimeoutMs != null) {
            // Both protocols send max.poll.interval.ms as the member's rebalance timeout.
            conf.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG,
                    args.rebalanceTimeoutMs.toString());
        }
        if (args.clientId != null) {
            conf.put(ConsumerConfig.CLIENT_ID_CONFIG, args.clientId);
        }
        if (args.instanceId != null) {
            conf.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, args.instanceId);
        }
        if (args.rack != null) {
            conf.put(ConsumerConfig.CLIENT_RACK_CONFIG, args.rack);
        }
        return conf;
    }

    /** The assignor classes of the protocol names; one other name becomes HostAssigned's. */
    static String assignors(List<String> names, Properties conf) {
        List<String> classes = new ArrayList<>();
        for (String name : names) {
            String builtIn = switch (name) {
                case "range" -> RangeAssignor.class.getName();
                case "roundrobin" -> RoundRobinAssignor.class.getName();
                case "sticky" -> StickyAssignor.class.getName();
                case "cooperative-sticky" -> CooperativeStickyAssignor.class.getName();
                default -> null;
            };
            if (builtIn == null) {
                if (conf.containsKey(HostAssigned.NAME_CONFIG)) {
                    throw new IllegalArgumentException("one strategy of the host's at most: "
                            + conf.get(HostAssigned.NAME_CONFIG) + " and " + name);
                }
                conf.put(HostAssigned.NAME_CONFIG, name);
                builtIn = HostAssigned.class.getName();
            }
            classes.add(builtIn);
        }
        return String.join(",", classes);
    }

    private final class Listener implements ConsumerRebalanceListener {
        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> added) {
            double since = Events.wallSeconds();
            long sinceNs = Events.monotonicNs();
            positions.flush();
            ConsumerGroupMetadata meta = consumer.groupMetadata();
            memberId = meta.memberId();
            Events.emit("assigned", "member_id", memberId, "generation", meta.generationId(),
                    "partitions", Events.partitions(consumer.assignment()),
                    "added", Events.partitions(added), "since", since, "since_ns", sinceNs);
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
            positions.flush();
            if (args.commitOnRevoke) {
                Map<TopicPartition, Long> offsets = positions.of(revoked);
                String error = null;
                if (!offsets.isEmpty()) {
                    try {
                        consumer.commitSync(metadata(offsets));
                    } catch (RuntimeException e) {
                        error = describe(e);
                    }
                }
                Events.emit("revoke_commit", "offsets", Positions.triples(offsets),
                        "error", error);
            }
            giveUp(revoked, false);
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> lost) {
            positions.flush();
            giveUp(lost, true);
        }

        private void giveUp(Collection<TopicPartition> partitions, boolean lost) {
            positions.forget(partitions);
            Events.emit("revoked", "member_id", memberId,
                    "partitions", Events.partitions(partitions), "lost", lost,
                    "at", Events.wallSeconds(), "at_ns", Events.monotonicNs());
        }
    }

    static Map<TopicPartition, OffsetAndMetadata> metadata(Map<TopicPartition, Long> offsets) {
        Map<TopicPartition, OffsetAndMetadata> out = new TreeMap<>(Events.BY_TOPIC_PARTITION);
        offsets.forEach((tp, o) -> out.put(tp, new OffsetAndMetadata(o)));
        return out;
    }

    static String describe(Throwable e) {
        return e.getClass().getSimpleName() + ": " + e.getMessage();
    }

    /**
     * stdin, one JSON command a line, into {@link #commands}; EOF becomes a close. {@code stacks}
     * is answered here, not queued: every thread's stack on stderr, even while the consumer's
     * thread is stuck (the fixture asks for it when a test fails).
     */
    private void readCommands() {
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(
                    new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    if (line.isBlank()) {
                        continue;
                    }
                    JsonNode cmd = Events.json().readTree(line);
                    if (cmd.path("cmd").asText().equals("stacks")) {
                        dumpStacks();
                    } else {
                        commands.add(cmd);
                    }
                }
            } catch (IOException e) {
                Events.error("stdin: " + describe(e));
            }
            commands.add(Events.json().createObjectNode().put("cmd", "close"));
        }, "commands");
        reader.setDaemon(true);
        reader.start();
    }

    private static void dumpStacks() {
        StringBuilder out = new StringBuilder("stacks of every thread:\n");
        Thread.getAllStackTraces().forEach((thread, frames) -> {
            out.append('"').append(thread.getName()).append("\" ").append(thread.getState())
                    .append('\n');
            for (StackTraceElement frame : frames) {
                out.append("    at ").append(frame).append('\n');
            }
        });
        System.err.print(out.append("end of stacks\n"));
        System.err.flush();
    }

    private void run() throws InterruptedException {
        if (args.topicPattern == null) {
            consumer.subscribe(args.topics, new Listener());
        } else if (args.consumerProtocol()) {
            // KIP-848's regular expression, matched by the coordinator (RE2/J syntax).
            consumer.subscribe(new SubscriptionPattern(args.topicPattern), new Listener());
        } else {
            // The classic protocol's: matched by the client against all topics' metadata.
            consumer.subscribe(Pattern.compile(args.topicPattern), new Listener());
        }
        readCommands();
        while (true) {
            try {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(100))) {
                    if (args.reportRecords) {
                        positions.add(record);
                    }
                }
                positions.flush();
            } catch (RuntimeException e) {
                // What the client raised to the application; it polls again, after a pause
                // spent waiting for a command so a fatal error does not spin.
                Events.error("poll: " + describe(e));
                JsonNode cmd = commands.poll(100, TimeUnit.MILLISECONDS);
                if (cmd != null && !handle(cmd)) {
                    return;
                }
            }
            for (JsonNode cmd; (cmd = commands.poll()) != null; ) {
                if (!handle(cmd)) {
                    return;
                }
            }
        }
    }

    /** Runs one command; false once the consumer has closed. */
    private boolean handle(JsonNode cmd) {
        String kind = cmd.path("cmd").asText();
        try {
            switch (kind) {
                case "commit" -> {
                    Map<TopicPartition, Long> offsets = new TreeMap<>(Events.BY_TOPIC_PARTITION);
                    for (JsonNode o : cmd.path("offsets")) {
                        offsets.put(new TopicPartition(o.get(0).asText(), o.get(1).asInt()),
                                o.get(2).asLong());
                    }
                    consumer.commitSync(metadata(offsets));
                    Events.emit("committed", "offsets", Positions.triples(offsets));
                }
                case "commit_consumed" -> {
                    Map<TopicPartition, Long> offsets = positions.of(consumer.assignment());
                    if (!offsets.isEmpty()) {
                        consumer.commitSync(metadata(offsets));
                    }
                    Events.emit("committed", "offsets", Positions.triples(offsets));
                }
                case "committed" -> {
                    Set<TopicPartition> partitions = new HashSet<>();
                    for (JsonNode tp : cmd.path("partitions")) {
                        partitions.add(new TopicPartition(tp.get(0).asText(), tp.get(1).asInt()));
                    }
                    Map<TopicPartition, OffsetAndMetadata> got =
                            consumer.committed(partitions, Duration.ofSeconds(30));
                    List<List<Object>> offsets = new ArrayList<>();
                    partitions.stream().sorted(Events.BY_TOPIC_PARTITION).forEach(tp -> {
                        OffsetAndMetadata o = got.get(tp);
                        offsets.add(Arrays.asList(tp.topic(), tp.partition(),
                                o == null ? null : o.offset()));
                    });
                    Events.emit("fetched", "offsets", offsets);
                }
                case "stall" -> {
                    // An application that takes `ms` to process what poll returned: the
                    // consumer's thread does not poll meanwhile (past max.poll.interval.ms the
                    // client leaves the group by itself and rejoins at the next poll).
                    Thread.sleep(cmd.path("ms").asLong());
                    Events.emit("stalled", "ms", cmd.path("ms").asLong());
                }
                case "close" -> {
                    consumer.close();
                    Events.emit("closed", "at", Events.wallSeconds(), "at_ns",
                            Events.monotonicNs());
                    return false;
                }
                default -> Events.error("unknown command " + cmd);
            }
        } catch (RuntimeException e) {
            Events.error(kind + ": " + describe(e));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            Events.error(kind + ": interrupted");
        }
        return true;
    }

    public static void main(String[] argv) throws InterruptedException {
        Logging.configure();
        Agent agent = new Agent(Args.parse(argv));
        agent.run();
        System.exit(0);
    }
}
