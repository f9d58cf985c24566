package io.assignorhost.agent;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;

/**
 * The consumed position of each partition: the offset after the last record reported (what an
 * application that processed those records commits), as common.py's {@code Positions}.
 * Records are added as {@code poll} hands them over and reported in one {@code records} event
 * per poll ({@link #flush}); a revoked partition's position is forgotten.
 */
final class Positions {
    private final Map<TopicPartition, Long> next = new HashMap<>();
    private final List<List<Object>> pending = new ArrayList<>();

    void add(ConsumerRecord<byte[], byte[]> record) {
        next.put(new TopicPartition(record.topic(), record.partition()), record.offset() + 1);
        byte[] key = record.key();
        // Arrays.asList: a record without a key is reported with a null key, as in Python.
        pending.add(Arrays.asList(record.topic(), record.partition(), record.offset(),
                key == null ? null : new String(key, StandardCharsets.UTF_8)));
    }

    void flush() {
        if (!pending.isEmpty()) {
            Events.emit("records", "records", new ArrayList<>(pending));
            pending.clear();
        }
    }

    /** The next offset of each of {@code partitions} that had records, sorted. */
    Map<TopicPartition, Long> of(Collection<TopicPartition> partitions) {
        Map<TopicPartition, Long> out = new TreeMap<>(Events.BY_TOPIC_PARTITION);
        for (TopicPartition tp : partitions) {
            Long offset = next.get(tp);
            if (offset != null) {
                out.put(tp, offset);
            }
        }
        return out;
    }

    void forget(Collection<TopicPartition> partitions) {
        partitions.forEach(next::remove);
    }

    /** {@code [[topic, partition, offset]...]} in the order of {@code offsets}. */
    static List<List<Object>> triples(Map<TopicPartition, Long> offsets) {
        List<List<Object>> out = new ArrayList<>();
        offsets.forEach((tp, o) -> out.add(List.of(tp.topic(), tp.partition(), o)));
        return out;
    }
}
