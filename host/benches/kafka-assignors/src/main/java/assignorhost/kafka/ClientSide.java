package assignorhost.kafka;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

import static org.apache.kafka.clients.consumer.internals.AbstractStickyAssignor.DEFAULT_GENERATION;

/**
 * The classic protocol's client-side assignors on the input of Kafka's
 * {@code ClientSideAssignorBenchmark} with {@code isRackAware = false}: three brokers (one per
 * rack), topics {@code topic<i>} with {@code members x ratio / topics} partitions of three
 * replicas each in a {@code Cluster}; members {@code member<i>} with no rack, no user data and
 * the default generation. Kafka's benchmark has {@code RangeAssignor} and
 * {@code CooperativeStickyAssignor}; {@code RoundRobinAssignor} and {@code StickyAssignor} are
 * timed on the same input, as the host has a strategy for each.
 *
 * <p>INCREMENTAL: {@code members - 1} members assigned first, each then owning what it got,
 * and {@code newMember} joins (every topic, or member {@code members - 2}'s bucket). Kafka's
 * {@code simulateIncrementalRebalance()} builds that map but leaves its
 * {@code groupSubscription} on the first one (it reassigns the field the subscription was built
 * from, not the subscription), so its INCREMENTAL cell times a FULL assignment of
 * {@code members - 1} members. Here the group subscription is the rebalance the benchmark
 * describes, the counterpart of the host's INCREMENTAL cells.
 */
final class ClientSide {
    private static final int NUMBER_OF_RACKS = 3;

    private ClientSide() {
    }

    static Timing.Cell prepare(
        String name,
        int memberCount,
        int topicCount,
        int partitionsToMemberRatio,
        boolean heterogeneous,
        boolean incremental
    ) {
        ConsumerPartitionAssignor assignor = switch (name) {
            case "range" -> new RangeAssignor();
            case "roundrobin" -> new RoundRobinAssignor();
            case "sticky" -> new StickyAssignor();
            case "cooperative-sticky" -> new CooperativeStickyAssignor();
            default -> throw Timing.usage("client side: --assignor range|roundrobin|sticky|cooperative-sticky");
        };

        List<Node> nodes = new ArrayList<>(NUMBER_OF_RACKS);
        for (int i = 0; i < NUMBER_OF_RACKS; i++) {
            nodes.add(new Node(i, "", i, "rack" + i));
        }
        int partitionsPerTopic = memberCount * partitionsToMemberRatio / topicCount;
        List<String> topicNames = new ArrayList<>();
        List<PartitionInfo> partitions = new ArrayList<>();
        for (int i = 0; i < topicCount; i++) {
            String topic = "topic" + i;
            topicNames.add(topic);
            for (int p = 0; p < partitionsPerTopic; p++) {
                Node[] replicas = new Node[3];
                for (int j = 0; j < 3; j++) {
                    replicas[j] = nodes.get((p + j) % NUMBER_OF_RACKS);
                }
                partitions.add(new PartitionInfo(topic, p, replicas[0], replicas, replicas));
            }
        }
        Cluster metadata = new Cluster("test-cluster", nodes, partitions, Collections.emptySet(), Collections.emptySet());

        int numberOfMembers = incremental ? memberCount - 1 : memberCount;
        List<List<String>> bucketed = heterogeneous ? Buckets.subscriptions(numberOfMembers, topicNames) : null;
        Map<String, Subscription> subscriptions = new HashMap<>();
        for (int i = 0; i < numberOfMembers; i++) {
            subscriptions.put("member" + i, subscription(heterogeneous ? bucketed.get(i) : topicNames, Collections.emptyList()));
        }
        GroupSubscription groupSubscription = new GroupSubscription(subscriptions);

        if (incremental) {
            Map<String, ConsumerPartitionAssignor.Assignment> first =
                assignor.assign(metadata, groupSubscription).groupAssignment();
            Map<String, Subscription> rebalance = new HashMap<>();
            subscriptions.forEach((member, s) ->
                rebalance.put(member, subscription(s.topics(), first.get(member).partitions())));
            List<String> joinerTopics = heterogeneous
                ? subscriptions.get("member" + (memberCount - 2)).topics()
                : topicNames;
            rebalance.put("newMember", subscription(joinerTopics, Collections.emptyList()));
            groupSubscription = new GroupSubscription(rebalance);
        }

        GroupSubscription group = groupSubscription;
        return new Timing.Cell(() -> assignor.assign(metadata, group), assignor.getClass().getName());
    }

    private static Subscription subscription(List<String> topics, List<TopicPartition> owned) {
        return new Subscription(topics, null, owned, DEFAULT_GENERATION, Optional.empty());
    }
}
