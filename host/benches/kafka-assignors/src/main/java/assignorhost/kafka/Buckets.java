package assignorhost.kafka;

import java.util.ArrayList;
import java.util.List;

/**
 * Kafka's HETEROGENEOUS subscriptions, as both assignor benchmarks build them
 * ({@code AssignorBenchmarkUtils.createHeterogeneousBucketedMembers} server side, the same loop
 * inline in {@code ClientSideAssignorBenchmark}): members and topics split into
 * {@code min(5, members)} contiguous buckets of {@code ceil(members / buckets)} members and
 * {@code ceil(topics / buckets)} topics; a member subscribes to its bucket's topics only.
 */
final class Buckets {
    /** Kafka's {@code MAX_BUCKET_COUNT}. */
    static final int MAX_BUCKET_COUNT = 5;

    private Buckets() {
    }

    /**
     * Member {@code i}'s topics at index {@code i}: one {@code subList} view per bucket, shared by
     * the bucket's members, as Kafka passes them.
     */
    static List<List<String>> subscriptions(int memberCount, List<String> topicNames) {
        int bucketCount = Math.min(MAX_BUCKET_COUNT, memberCount);
        if (topicNames.size() < bucketCount) {
            throw new IllegalArgumentException(
                "At least " + bucketCount + " topics are recommended for effective bucketing.");
        }
        int bucketSizeTopics = (int) Math.ceil((double) topicNames.size() / bucketCount);
        int bucketSizeMembers = (int) Math.ceil((double) memberCount / bucketCount);
        List<List<String>> out = new ArrayList<>(memberCount);
        for (int bucket = 0; bucket < bucketCount; bucket++) {
            int memberEnd = Math.min((bucket + 1) * bucketSizeMembers, memberCount);
            int topicStart = bucket * bucketSizeTopics;
            int topicEnd = Math.min((bucket + 1) * bucketSizeTopics, topicNames.size());
            List<String> bucketTopics = topicNames.subList(topicStart, topicEnd);
            for (int i = bucket * bucketSizeMembers; i < memberEnd; i++) {
                out.add(bucketTopics);
            }
        }
        return out;
    }
}
