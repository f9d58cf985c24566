"""One aiokafka consumer speaking the agent protocol of common.py.

The assignment reported is the one aiokafka passes to `on_partitions_assigned` (it only has
eager strategies: the whole assignment). aiokafka has no public accessor for the member id or
the generation, so they are read from the consumer's coordinator (`_coordinator.member_id`,
`_coordinator.generation`, aiokafka/consumer/group_coordinator.py). A strategy name other than
the client's own assignors (`BUILT_IN`) becomes an assignor class of that name whose `assign`
must never run. With --report-records the records of each `getmany` are reported (proxy
mode).
"""

import asyncio
import json
import sys
import threading

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata
from aiokafka.helpers import create_ssl_context
from aiokafka.structs import OffsetAndMetadata, TopicPartition

from common import Positions, emit, parse_args, partitions_of



class ClientSticky(StickyPartitionAssignor):
    """aiokafka's sticky assignor under a name no host module has: the host falls back to
    Kafka's classic protocol for it (a member is leader and this class assigns)."""

    name = "client-sticky"


# The client's own assignors, by the protocol name they propose.
BUILT_IN = {a.name: a for a in (RangePartitionAssignor, RoundRobinPartitionAssignor,
                                StickyPartitionAssignor, ClientSticky)}


def host_assigned(strategy):
    class HostAssigned(AbstractPartitionAssignor):
        name = strategy
        version = 0

        @classmethod
        def assign(cls, cluster, members):
            emit("error", message=f"{strategy}.assign ran on the client: the host should lead")
            raise AssertionError("the host is the leader; a client assign must never run")

        @classmethod
        def metadata(cls, topics):
            return ConsumerProtocolMemberMetadata(cls.version, sorted(topics), b"")

        @classmethod
        def on_assignment(cls, assignment):
            pass

    return HostAssigned


async def run(args):
    strategies = tuple(BUILT_IN.get(name) or host_assigned(name)
                       for name in (args.strategy or ["roundrobin"]))
    extra = {"client_id": args.client_id} if args.client_id else {}
    if args.sasl:
        mechanism, user, password = args.sasl
        extra.update(security_protocol="SASL_SSL" if args.ssl_ca else "SASL_PLAINTEXT",
                     sasl_mechanism=mechanism, sasl_plain_username=user,
                     sasl_plain_password=password)
    if args.ssl_ca:
        extra["ssl_context"] = create_ssl_context(cafile=args.ssl_ca)
        extra.setdefault("security_protocol", "SSL")
    consumer = AIOKafkaConsumer(
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
        async def on_partitions_revoked(self, revoked):
            positions.flush()
            if args.commit_on_revoke:
                offsets = positions.of((tp.topic, tp.partition) for tp in revoked)
                error = None
                try:
                    if offsets:
                        await consumer.commit({TopicPartition(t, p): OffsetAndMetadata(o, "")
                                               for t, p, o in offsets})
                except Exception as e:  # reported; the group goes on
                    error = f"{type(e).__name__}: {e}"
                emit("revoke_commit", offsets=offsets, error=error)
            positions.forget((tp.topic, tp.partition) for tp in revoked)
            emit("revoked", member_id=consumer._coordinator.member_id,
                 partitions=partitions_of(revoked))

        async def on_partitions_assigned(self, assigned):
            emit("assigned", member_id=consumer._coordinator.member_id,
                 generation=consumer._coordinator.generation,
                 partitions=partitions_of(assigned))

    loop = asyncio.get_running_loop()
    commands = asyncio.Queue()

    def read():
        for line in sys.stdin:
            if line.strip():
                loop.call_soon_threadsafe(commands.put_nowait, json.loads(line))
        loop.call_soon_threadsafe(commands.put_nowait, {"cmd": "close"})

    threading.Thread(target=read, daemon=True).start()

    await consumer.start()
    consumer.subscribe(args.topics, listener=Listener())
    while True:
        batches = await consumer.getmany(timeout_ms=100)
        if args.report_records:
            for tp in sorted(batches):
                for r in batches[tp]:
                    positions.add(r.topic, r.partition, r.offset, r.key)
            positions.flush()
        while not commands.empty():
            cmd = commands.get_nowait()
            try:
                if cmd["cmd"] == "commit":
                    await consumer.commit({TopicPartition(t, p): OffsetAndMetadata(o, "")
                                           for t, p, o in cmd["offsets"]})
                    emit("committed", offsets=sorted(cmd["offsets"]))
                elif cmd["cmd"] == "commit_consumed":
                    offsets = positions.of((tp.topic, tp.partition)
                                           for tp in consumer.assignment())
                    if offsets:
                        await consumer.commit({TopicPartition(t, p): OffsetAndMetadata(o, "")
                                               for t, p, o in offsets})
                    emit("committed", offsets=offsets)
                elif cmd["cmd"] == "committed":
                    got = [[t, p, await consumer.committed(TopicPartition(t, p))]
                           for t, p in cmd["partitions"]]
                    emit("fetched", offsets=sorted(got))
                elif cmd["cmd"] == "close":
                    await consumer.stop()
                    emit("closed")
                    return
            except Exception as e:  # the test shows whatever the client raised
                emit("error", message=f"{cmd['cmd']}: {type(e).__name__}: {e}")


if __name__ == "__main__":
    asyncio.run(run(parse_args()))
