"""One kafka-python (3.x) consumer speaking the agent protocol of common.py.

The assignment reported is the consumer's whole assignment (`assignment()`) when kafka-python
calls `on_partitions_assigned`, with the member id and generation of
`KafkaConsumer.group_metadata()`. `assigned` also carries the partitions the callback was given
(`added`: eager, the whole assignment; cooperative, the additions) and `revoked` and `closed`
carry `time.monotonic_ns()` (`since_ns`, `at_ns`) as the confluent-kafka agent's do, for
harness.ownership. kafka-python has installed an assignment before it calls the callback, so
`since_ns` is a little late: ownership from these stamps is the client's from the callback on. A strategy name other than the client's own assignors
(`BUILT_IN`) becomes an assignor class of that name whose `assign` must never run: the host is
the group's leader, so the client only proposes the name and takes the follower path.
"""

import time

from kafka import KafkaConsumer
from kafka.errors import KafkaConnectionError
from kafka.consumer.subscription_state import (AsyncConsumerRebalanceListener,
                                               ConsumerRebalanceListener)
from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription
from kafka.structs import OffsetAndMetadata, TopicPartition

from common import Positions, command_queue, emit, parse_args, partitions_of


class ClientSticky(StickyPartitionAssignor):
    """kafka-python's sticky assignor under a name no host module has: the host falls back to
    Kafka's classic protocol for it (a member is leader and this class assigns)."""

    name = "client-sticky"


# The client's own assignors, by the protocol name they propose.
BUILT_IN = {a.name: a for a in (RangePartitionAssignor, RoundRobinPartitionAssignor,
                                StickyPartitionAssignor, CooperativeStickyAssignor,
                                ClientSticky)}


def host_assigned(strategy):
    """An assignor that only names `strategy`: the host computes the assignment."""

    class HostAssigned(AbstractPartitionAssignor):
        name = strategy
        version = 0

        @classmethod
        def assign(cls, cluster, members):
            emit("error", message=f"{strategy}.assign ran on the client: the host should lead")
            raise AssertionError("the host is the leader; a client assign must never run")

        @classmethod
        def metadata(cls, topics):
            return ConsumerProtocolSubscription(cls.version, sorted(topics), b"")

        @classmethod
        def on_assignment(cls, assignment, generation):
            pass

    return HostAssigned


def main():
    args = parse_args()
    strategies = [BUILT_IN.get(name) or host_assigned(name)
                  for name in (args.strategy or ["range", "roundrobin"])]
    extra = {"client_id": args.client_id} if args.client_id else {}
    if args.instance_id:
        extra["group_instance_id"] = args.instance_id
    if args.sasl:
        mechanism, user, password = args.sasl
        extra.update(security_protocol="SASL_SSL" if args.ssl_ca else "SASL_PLAINTEXT",
                     sasl_mechanism=mechanism, sasl_plain_username=user,
                     sasl_plain_password=password)
    if args.ssl_ca:
        extra["ssl_cafile"] = args.ssl_ca
        extra.setdefault("security_protocol", "SSL")
    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        partition_assignment_strategy=strategies,
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        **extra,
    )

    positions = Positions()

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            positions.flush()
            positions.forget((tp.topic, tp.partition) for tp in revoked)
            emit("revoked", member_id=consumer.group_metadata().member_id,
                 partitions=partitions_of(revoked), at=time.time(), at_ns=time.monotonic_ns())

        def on_partitions_assigned(self, assigned):
            # Eager: `assigned` is the whole assignment; cooperative: only the additions, with
            # the whole set already installed. Report the whole set in both cases.
            since, since_ns = time.time(), time.monotonic_ns()
            meta = consumer.group_metadata()
            emit("assigned", member_id=meta.member_id, generation=meta.generation_id,
                 partitions=partitions_of(consumer.assignment()),
                 added=partitions_of(assigned), since=since, since_ns=since_ns)

    class CommittingListener(AsyncConsumerRebalanceListener):
        """--commit-on-revoke. kafka-python 3 runs listeners on its IO loop, where a blocking
        `commit()` raises ("Cannot block on net.run() from the IO thread itself"); its async
        listener awaits `commit_async` instead, as the library's docs recommend."""

        async def on_partitions_revoked(self, revoked):
            positions.flush()
            offsets = positions.of((tp.topic, tp.partition) for tp in revoked)
            error = None
            try:
                if offsets:
                    await consumer.commit_async({TopicPartition(t, p): OffsetAndMetadata(o, "", -1)
                                                 for t, p, o in offsets})
            except Exception as e:  # reported; the group goes on
                error = f"{type(e).__name__}: {e}"
            emit("revoke_commit", offsets=offsets, error=error)
            Listener.on_partitions_revoked(self, revoked)

        async def on_partitions_assigned(self, assigned):
            Listener.on_partitions_assigned(self, assigned)

    # Topic metadata first: kafka-python 3.0.12 can lose a join when it is a client-side
    # leader (only when the host relays a strategy it has no module for) that rejoins because
    # its metadata snapshot changed (README, "Client quirks"); a first assignment made with the
    # metadata known avoids the most common such rejoin.
    for topic in args.topics:
        consumer.partitions_for_topic(topic)
    listener = CommittingListener() if args.commit_on_revoke else Listener()
    consumer.subscribe(args.topics, listener=listener)
    commands = command_queue()
    while True:
        try:
            batches = consumer.poll(timeout_ms=100)
        except KafkaConnectionError as e:
            # kafka-python 3.0 raises a refused connect out of poll while it looks for the
            # coordinator (a host restarting); an application polls again, and so does this.
            emit("error", message=f"poll: {type(e).__name__}: {e}")
            time.sleep(0.1)
            continue
        if args.report_records:
            for tp in sorted(batches):
                for r in batches[tp]:
                    positions.add(r.topic, r.partition, r.offset, r.key)
            positions.flush()
        while not commands.empty():
            cmd = commands.get()
            try:
                if cmd["cmd"] == "commit":
                    offsets = {TopicPartition(t, p): OffsetAndMetadata(o, "", -1)
                               for t, p, o in cmd["offsets"]}
                    consumer.commit(offsets)
                    emit("committed", offsets=sorted(cmd["offsets"]))
                elif cmd["cmd"] == "commit_consumed":
                    offsets = positions.of((tp.topic, tp.partition)
                                           for tp in consumer.assignment())
                    if offsets:
                        consumer.commit({TopicPartition(t, p): OffsetAndMetadata(o, "", -1)
                                         for t, p, o in offsets})
                    emit("committed", offsets=offsets)
                elif cmd["cmd"] == "committed":
                    emit("fetched", offsets=sorted(
                        [t, p, consumer.committed(TopicPartition(t, p))]
                        for t, p in cmd["partitions"]))
                elif cmd["cmd"] == "close":
                    consumer.close(autocommit=False)
                    emit("closed", at=time.time(), at_ns=time.monotonic_ns())
                    return
            except Exception as e:  # the test shows whatever the client raised
                emit("error", message=f"{cmd['cmd']}: {type(e).__name__}: {e}")


if __name__ == "__main__":
    main()
