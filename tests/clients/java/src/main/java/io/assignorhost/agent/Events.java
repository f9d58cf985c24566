package io.assignorhost.agent;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;

/**
 * The agent's side of the JSON-lines protocol: one event per line on stdout, each written
 * whole (one {@code print} of the line and its newline, under a lock), keys sorted as the
 * Python agents write them.
 */
final class Events {
    private static final ObjectMapper JSON =
            new ObjectMapper().enable(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS);
    private static final PrintStream OUT =
            new PrintStream(System.out, false, StandardCharsets.UTF_8);

    private Events() {}

    static ObjectMapper json() {
        return JSON;
    }

    /** Emits {@code {"event": kind, ...fields}}; {@code fields} alternate name and value. */
    static void emit(String kind, Object... fields) {
        Map<String, Object> event = new LinkedHashMap<>();
        for (int i = 0; i + 1 < fields.length; i += 2) {
            event.put((String) fields[i], fields[i + 1]);
        }
        event.put("event", kind);
        String line;
        try {
            line = JSON.writeValueAsString(event);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("an event that is not JSON: " + event, e);
        }
        synchronized (OUT) {
            OUT.print(line + "\n");
            OUT.flush();
        }
    }

    static void error(String message) {
        emit("error", "message", message);
    }

    /** {@code [[topic, partition]...]} sorted, as common.py's {@code partitions_of}. */
    static List<List<Object>> partitions(Collection<TopicPartition> partitions) {
        List<TopicPartition> sorted = new ArrayList<>(partitions);
        sorted.sort(BY_TOPIC_PARTITION);
        List<List<Object>> out = new ArrayList<>();
        for (TopicPartition tp : sorted) {
            out.add(List.of(tp.topic(), tp.partition()));
        }
        return out;
    }

    static final Comparator<TopicPartition> BY_TOPIC_PARTITION =
            Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition);

    /** Wall-clock seconds, as Python's {@code time.time()}. */
    static double wallSeconds() {
        return System.currentTimeMillis() / 1000.0;
    }

    /**
     * CLOCK_MONOTONIC in nanoseconds: HotSpot's {@code System.nanoTime()} on Linux reads it
     * (os::javaTimeNanos), as Python's {@code time.monotonic_ns()} does, so stamps of
     * different consumers, in any language, compare.
     */
    static long monotonicNs() {
        return System.nanoTime();
    }
}
