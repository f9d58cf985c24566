import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Field;
import java.util.*;

import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.internals.AbstractPartitionAssignor;
import org.apache.kafka.clients.consumer.internals.AbstractStickyAssignor;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

/**
 * Runs Kafka's AbstractStickyAssignor on scenarios read from stdin and prints the result.
 *
 * Scenario lines:
 *   scenario NAME
 *   flavor sticky|cooperative
 *   prefer 0|1
 *   topic NAME COUNT [RACKS]      RACKS: per partition "r1,r2" joined by '/', '-' for none
 *   member ID TOPICS OWNED GEN RACK
 *          TOPICS "t1,t2" or '-'; OWNED "t:p,t:p" or '-'; GEN int; RACK name or '-'
 *   end
 * The member data generation is GEN for both flavours (the sticky flavour's user data would
 * carry the same), and the Subscription's generationId is GEN too.
 */
public class Oracle {
    static final class Assignor extends AbstractStickyAssignor {
        final boolean cooperative;
        final Map<Subscription, MemberData> data = new IdentityHashMap<>();

        Assignor(boolean cooperative) {
            this.cooperative = cooperative;
        }

        @Override
        public String name() {
            return cooperative ? "cooperative-sticky" : "sticky";
        }

        @Override
        protected MemberData memberData(Subscription subscription) {
            return data.get(subscription);
        }

        Map<String, List<TopicPartition>> run(Map<String, List<PartitionInfo>> ppt, Map<String, Subscription> subs) {
            Map<String, List<TopicPartition>> assignments = assignPartitions(ppt, subs);
            if (!cooperative)
                return assignments;
            // CooperativeStickyAssignor.assignPartitions, verbatim.
            Map<TopicPartition, String> transferring = partitionsTransferringOwnership == null
                ? computePartitionsTransferringOwnership(subs, assignments)
                : partitionsTransferringOwnership;
            for (Map.Entry<TopicPartition, String> e : transferring.entrySet())
                assignments.get(e.getValue()).remove(e.getKey());
            return assignments;
        }

        private Map<TopicPartition, String> computePartitionsTransferringOwnership(Map<String, Subscription> subscriptions,
                                                                                   Map<String, List<TopicPartition>> assignments) {
            Map<TopicPartition, String> allAddedPartitions = new HashMap<>();
            Set<TopicPartition> allRevokedPartitions = new HashSet<>();
            for (final Map.Entry<String, List<TopicPartition>> entry : assignments.entrySet()) {
                String consumer = entry.getKey();
                List<TopicPartition> ownedPartitions = subscriptions.get(consumer).ownedPartitions();
                List<TopicPartition> assignedPartitions = entry.getValue();
                Set<TopicPartition> ownedPartitionsSet = new HashSet<>(ownedPartitions);
                for (TopicPartition tp : assignedPartitions) {
                    if (!ownedPartitionsSet.contains(tp))
                        allAddedPartitions.put(tp, consumer);
                }
                Set<TopicPartition> assignedPartitionsSet = new HashSet<>(assignedPartitions);
                for (TopicPartition tp : ownedPartitions) {
                    if (!assignedPartitionsSet.contains(tp))
                        allRevokedPartitions.add(tp);
                }
            }
            allAddedPartitions.keySet().retainAll(allRevokedPartitions);
            return allAddedPartitions;
        }
    }

    static List<TopicPartition> partitions(String s) {
        List<TopicPartition> out = new ArrayList<>();
        if (s.equals("-"))
            return out;
        for (String tp : s.split(",")) {
            int at = tp.lastIndexOf(':');
            out.add(new TopicPartition(tp.substring(0, at), Integer.parseInt(tp.substring(at + 1))));
        }
        return out;
    }

    static String show(Collection<TopicPartition> list) {
        List<String> parts = new ArrayList<>();
        List<TopicPartition> sorted = new ArrayList<>(list);
        sorted.sort(Comparator.comparing(TopicPartition::topic).thenComparing(TopicPartition::partition));
        for (TopicPartition tp : sorted)
            parts.add(tp.topic() + ":" + tp.partition());
        return parts.isEmpty() ? "-" : String.join(",", parts);
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        String name = null;
        boolean cooperative = false, prefer = false;
        Map<String, List<PartitionInfo>> ppt = new HashMap<>();
        Map<String, Subscription> subs = new HashMap<>();
        Map<String, Node> nodes = new HashMap<>();
        List<String[]> members = new ArrayList<>();
        while ((line = in.readLine()) != null) {
            String[] f = line.trim().split(" ");
            switch (f[0]) {
                case "scenario":
                    name = f[1];
                    ppt = new HashMap<>();
                    subs = new HashMap<>();
                    nodes = new HashMap<>();
                    members = new ArrayList<>();
                    break;
                case "flavor":
                    cooperative = f[1].equals("cooperative");
                    break;
                case "prefer":
                    prefer = f[1].equals("1");
                    break;
                case "topic": {
                    int n = Integer.parseInt(f[2]);
                    String[] racks = f.length > 3 ? f[3].split("/") : new String[0];
                    List<PartitionInfo> infos = new ArrayList<>();
                    for (int p = 0; p < n; p++) {
                        List<Node> replicas = new ArrayList<>();
                        if (p < racks.length && !racks[p].equals("-")) {
                            for (String r : racks[p].split(",")) {
                                Node node = nodes.get(r);
                                if (node == null) {
                                    node = new Node(nodes.size(), "h", 1, r);
                                    nodes.put(r, node);
                                }
                                replicas.add(node);
                            }
                        }
                        Node[] arr = replicas.toArray(new Node[0]);
                        infos.add(new PartitionInfo(f[1], p, arr.length > 0 ? arr[0] : Node.noNode(), arr, arr));
                    }
                    ppt.put(f[1], infos);
                    break;
                }
                case "member":
                    members.add(f);
                    break;
                case "end": {
                    Assignor assignor = new Assignor(cooperative);
                    Field pf = AbstractPartitionAssignor.class.getDeclaredField("preferRackAwareLogic");
                    pf.setAccessible(true);
                    pf.setBoolean(assignor, prefer);
                    for (String[] m : members) {
                        List<String> topics = m[2].equals("-") ? new ArrayList<>() : new ArrayList<>(Arrays.asList(m[2].split(",")));
                        List<TopicPartition> owned = partitions(m[3]);
                        int gen = Integer.parseInt(m[4]);
                        Optional<String> rack = m[5].equals("-") ? Optional.empty() : Optional.of(m[5]);
                        Subscription s = new Subscription(topics, null, cooperative ? owned : Collections.emptyList(), gen, rack);
                        assignor.data.put(s, new AbstractStickyAssignor.MemberData(owned, gen < 0 ? Optional.empty() : Optional.of(gen), rack));
                        subs.put(m[1], s);
                    }
                    StringBuilder out = new StringBuilder("result " + name + "\n");
                    try {
                        Map<String, List<TopicPartition>> result = assignor.run(ppt, subs);
                        for (String[] m : members)
                            out.append("assigned ").append(m[1]).append(' ').append(show(result.getOrDefault(m[1], Collections.emptyList()))).append('\n');
                        Map<TopicPartition, String> t = assignor.partitionsTransferringOwnership();
                        if (t == null) {
                            out.append("transferring null\n");
                        } else {
                            List<String> parts = new ArrayList<>();
                            List<Map.Entry<TopicPartition, String>> es = new ArrayList<>(t.entrySet());
                            es.sort(Comparator.comparing((Map.Entry<TopicPartition, String> e) -> e.getKey().topic()).thenComparing(e -> e.getKey().partition()));
                            for (Map.Entry<TopicPartition, String> e : es)
                                parts.add(e.getKey().topic() + ":" + e.getKey().partition() + ":" + e.getValue());
                            out.append("transferring ").append(parts.isEmpty() ? "-" : String.join(",", parts)).append('\n');
                        }
                    } catch (Exception e) {
                        out.append("error ").append(e.getClass().getSimpleName()).append('\n');
                    }
                    out.append("end\n");
                    System.out.print(out);
                    break;
                }
                default:
                    break;
            }
        }
    }
}
