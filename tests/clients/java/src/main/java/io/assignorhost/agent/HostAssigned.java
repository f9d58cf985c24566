package io.assignorhost.agent;

import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Configurable;

/**
 * A classic-protocol assignor that only names a strategy the host computes (a module uploaded
 * with {@code module push}): the host is the group's leader, so the client proposes the name,
 * takes the follower path and never runs {@link #assign}. Its name comes from the consumer's
 * configuration ({@link #NAME_CONFIG}), which the client hands every assignor it creates, so
 * a consumer names at most one such strategy.
 */
public final class HostAssigned implements ConsumerPartitionAssignor, Configurable {
    static final String NAME_CONFIG = "assignor.host.strategy";

    private String name;

    @Override
    public void configure(Map<String, ?> configs) {
        name = (String) configs.get(NAME_CONFIG);
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public GroupAssignment assign(Cluster metadata, GroupSubscription groupSubscription) {
        Events.error(name + ".assign ran on the client: the host should lead");
        throw new IllegalStateException("the host is the leader; a client assign must never run");
    }
}
