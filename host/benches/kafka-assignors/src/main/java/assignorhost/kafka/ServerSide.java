package assignorhost.kafka;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.metadata.PartitionRecord;
import org.apache.kafka.common.metadata.TopicRecord;
import org.apache.kafka.coordinator.common.runtime.CoordinatorMetadataImage;
import org.apache.kafka.coordinator.common.runtime.KRaftCoordinatorMetadataImage;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.GroupSpec;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.PartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.RangeAssignor;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberAssignmentImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;
import org.apache.kafka.coordinator.group.modern.SubscribedTopicDescriberImpl;
import org.apache.kafka.coordinator.group.modern.TopicIds;
import org.apache.kafka.coordinator.group.modern.consumer.ConsumerGroupMember;
import org.apache.kafka.image.MetadataDelta;
import org.apache.kafka.image.MetadataImage;
import org.apache.kafka.image.MetadataProvenance;

/**
 * The group coordinator's assignors (KIP-848) on the input of Kafka's
 * {@code ServerSideAssignorBenchmark} with {@code isRackAware = false}: topics
 * {@code topic-<i>} with stable ids and {@code members x ratio / topics} partitions each (two
 * replicas, as {@code AssignorBenchmarkUtils.addTopic} lays them) in a KRaft metadata image;
 * members {@code member<i>} built as {@code ConsumerGroupMember}s and turned into a
 * {@code GroupSpecImpl} through a cached topic resolver. INCREMENTAL: {@code members - 1}
 * members assigned first, their answer fed back as each one's assignment and the inverted
 * target assignment, then {@code newMember} joins (every topic, or member {@code members - 2}'s
 * bucket). The timed call is the benchmark's {@code doAssignment()}: clear the resolver's
 * cache, then {@code assign(groupSpec, describer)}.
 */
final class ServerSide {
    private ServerSide() {
    }

    static Timing.Cell prepare(
        String name,
        int memberCount,
        int topicCount,
        int partitionsToMemberRatio,
        boolean heterogeneous,
        boolean incremental
    ) {
        PartitionAssignor assignor = switch (name) {
            case "uniform" -> new UniformAssignor();
            case "range" -> new RangeAssignor();
            default -> throw Timing.usage("server side: --assignor uniform|range");
        };
        SubscriptionType subscriptionType = heterogeneous ? SubscriptionType.HETEROGENEOUS : SubscriptionType.HOMOGENEOUS;

        List<String> topicNames = new ArrayList<>();
        for (int i = 0; i < topicCount; i++) {
            topicNames.add("topic-" + i);
        }
        int partitionsPerTopic = memberCount * partitionsToMemberRatio / topicCount;
        MetadataDelta delta = new MetadataDelta.Builder().setImage(MetadataImage.EMPTY).build();
        for (int i = 0; i < topicCount; i++) {
            // Stable ids, as Kafka's benchmark uses since it pairs runs: the same topic order
            // in every JVM.
            addTopic(delta, new Uuid(0, i + 1), topicNames.get(i), partitionsPerTopic);
        }
        CoordinatorMetadataImage image = new KRaftCoordinatorMetadataImage(delta.apply(MetadataProvenance.EMPTY));
        TopicIds.CachedTopicResolver topicResolver = new TopicIds.CachedTopicResolver(image);
        SubscribedTopicDescriber describer = new SubscribedTopicDescriberImpl(image);

        int numberOfMembers = incremental ? memberCount - 1 : memberCount;
        List<List<String>> subscriptions = heterogeneous
            ? Buckets.subscriptions(numberOfMembers, topicNames)
            : null;
        Map<String, ConsumerGroupMember> members = new HashMap<>();
        for (int i = 0; i < numberOfMembers; i++) {
            members.put(memberId(i), new ConsumerGroupMember.Builder("member" + i)
                .setSubscribedTopicNames(heterogeneous ? subscriptions.get(i) : topicNames)
                .build());
        }
        GroupSpec groupSpec = groupSpec(members, subscriptionType, topicResolver);
        if (incremental) {
            groupSpec = joinOne(assignor, groupSpec, describer, subscriptionType, memberCount, topicNames, topicResolver);
        }

        GroupSpec spec = groupSpec;
        return new Timing.Cell(() -> {
            topicResolver.clear();
            return assignor.assign(spec, describer);
        }, assignor.getClass().getName());
    }

    private static String memberId(int memberIndex) {
        return "member" + memberIndex;
    }

    /** {@code AssignorBenchmarkUtils.createGroupSpec}: racks and instance ids off, no assignment. */
    private static GroupSpec groupSpec(
        Map<String, ConsumerGroupMember> members,
        SubscriptionType subscriptionType,
        TopicIds.TopicResolver topicResolver
    ) {
        Map<String, MemberSubscriptionAndAssignmentImpl> memberSpecs = new HashMap<>();
        for (Map.Entry<String, ConsumerGroupMember> entry : members.entrySet()) {
            ConsumerGroupMember member = entry.getValue();
            memberSpecs.put(entry.getKey(), new MemberSubscriptionAndAssignmentImpl(
                Optional.ofNullable(member.rackId()),
                Optional.ofNullable(member.instanceId()),
                new TopicIds(member.subscribedTopicNames(), topicResolver),
                Assignment.EMPTY
            ));
        }
        return new GroupSpecImpl(memberSpecs, subscriptionType, Map.of());
    }

    /** {@code simulateIncrementalRebalance()}: the first assignment kept, one member joins. */
    private static GroupSpec joinOne(
        PartitionAssignor assignor,
        GroupSpec groupSpec,
        SubscribedTopicDescriber describer,
        SubscriptionType subscriptionType,
        int memberCount,
        List<String> topicNames,
        TopicIds.TopicResolver topicResolver
    ) {
        GroupAssignment initial = assignor.assign(groupSpec, describer);
        Map<String, MemberAssignment> assigned = initial.members();
        Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
        for (Map.Entry<String, MemberAssignment> member : assigned.entrySet()) {
            for (Map.Entry<Uuid, Set<Integer>> topic : member.getValue().partitions().entrySet()) {
                Map<Integer, String> owners = inverted.computeIfAbsent(topic.getKey(), k -> new HashMap<>());
                for (Integer partition : topic.getValue()) {
                    owners.put(partition, member.getKey());
                }
            }
        }
        Map<String, MemberSubscriptionAndAssignmentImpl> updated = new HashMap<>();
        for (String memberId : groupSpec.memberIds()) {
            MemberAssignment assignment = assigned.getOrDefault(memberId, new MemberAssignmentImpl(Map.of()));
            updated.put(memberId, new MemberSubscriptionAndAssignmentImpl(
                groupSpec.memberSubscription(memberId).rackId(),
                Optional.empty(),
                groupSpec.memberSubscription(memberId).subscribedTopicIds(),
                new Assignment(Map.copyOf(assignment.partitions()))
            ));
        }
        Set<Uuid> joinerTopics = subscriptionType == SubscriptionType.HETEROGENEOUS
            ? updated.get(memberId(memberCount - 2)).subscribedTopicIds()
            : new TopicIds(new HashSet<>(topicNames), topicResolver);
        updated.put("newMember", new MemberSubscriptionAndAssignmentImpl(
            Optional.empty(),
            Optional.empty(),
            joinerTopics,
            Assignment.EMPTY
        ));
        return new GroupSpecImpl(updated, subscriptionType, inverted);
    }

    /** {@code AssignorBenchmarkUtils.addTopic}: two replicas per partition over four brokers. */
    private static void addTopic(MetadataDelta delta, Uuid topicId, String topicName, int numPartitions) {
        delta.replay(new TopicRecord().setTopicId(topicId).setName(topicName));
        for (int i = 0; i < numPartitions; i++) {
            delta.replay(new PartitionRecord()
                .setTopicId(topicId)
                .setPartitionId(i)
                .setReplicas(List.of(i % 4, (i + 1) % 4)));
        }
    }
}
