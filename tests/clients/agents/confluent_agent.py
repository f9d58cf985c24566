"""One confluent-kafka (librdkafka) consumer speaking the agent protocol of common.py, with
the classic group protocol or KIP-848's (`--group-protocol consumer`, the assignor named by
`--remote-assignor`).

The assignment reported is the consumer's whole assignment (`assignment()`) once the partitions
librdkafka hands `on_assign` are applied, with `Consumer.memberid()` as the member id. librdkafka
does not expose the generation to Python, so it is reported as null. `assigned`, `revoked` and
`closed` also carry `time.monotonic_ns()` (`since_ns`, `at_ns`): CLOCK_MONOTONIC is one clock
for every process on Linux, so stamps of different consumers compare, and it never steps.
With --report-records the records of each `consume` call are reported (proxy mode, where the
host passes Fetch through to real brokers).
"""

import time

from confluent_kafka import Consumer, KafkaException, TopicPartition

from common import Positions, command_queue, emit, parse_args, partitions_of


def main():
    args = parse_args()
    conf = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "partition.assignment.strategy": ",".join(args.strategy or ["range", "roundrobin"]),
        # Kafka's lower bound (group.min.session.timeout.ms) is 6000; the host enforces it.
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "error_cb": lambda err: emit("error", message=str(err)),
    }
    if args.group_protocol == "consumer":
        # KIP-848: the coordinator assigns and sets the session and heartbeat timing;
        # librdkafka refuses the classic settings with group.protocol=consumer.
        for key in ("partition.assignment.strategy", "session.timeout.ms",
                    "heartbeat.interval.ms"):
            del conf[key]
        conf["group.protocol"] = "consumer"
        if args.remote_assignor:
            conf["group.remote.assignor"] = args.remote_assignor
    if args.rebalance_timeout_ms is not None and args.group_protocol == "classic":
        # librdkafka sends max.poll.interval.ms as JoinGroup's rebalance timeout.
        conf["max.poll.interval.ms"] = args.rebalance_timeout_ms
    if args.client_id:
        conf["client.id"] = args.client_id
    if args.instance_id:
        conf["group.instance.id"] = args.instance_id
    if args.rack:
        conf["client.rack"] = args.rack
    if args.sasl:
        mechanism, user, password = args.sasl
        conf.update({"security.protocol": "SASL_SSL" if args.ssl_ca else "SASL_PLAINTEXT",
                     "sasl.mechanism": mechanism, "sasl.username": user,
                     "sasl.password": password})
    if args.ssl_ca:
        conf["ssl.ca.location"] = args.ssl_ca
        conf.setdefault("security.protocol", "SSL")
    if args.ssl_cert:
        conf["ssl.certificate.location"] = args.ssl_cert
        conf["ssl.key.location"] = args.ssl_key
    consumer = Consumer(conf)

    # librdkafka hands `on_assign` the whole assignment under an eager protocol and only the
    # additions under cooperative-sticky: the agent applies them itself and reports the
    # consumer's whole assignment afterwards (`assignment()`), the same in both cases.
    # The consumer protocol is incremental too (librdkafka: incremental_assign/unassign only).
    cooperative = "cooperative-sticky" in args.strategy or args.group_protocol == "consumer"
    positions = Positions()
    # The member id of the last assignment, reported again with `revoked`: `memberid()` is not
    # called from `on_revoke`, because a revoke served inside `close()` can block in it (seen
    # once in two runs of the suite with two files at a time: `close()` hung for the
    # harness's 60 s, the stack dump (SIGUSR1) pointing at that call).
    member = {"id": None}

    def on_assign(c, partitions):
        # `since`: before the partitions are taken (the earliest this consumer may own them);
        # `at` in `revoked`: after they are given up. Ownership intervals from these two are
        # conservative, so an overlap between two consumers is a real one.
        since, since_ns = time.time(), time.monotonic_ns()
        positions.flush()
        if cooperative:
            c.incremental_assign(partitions)
        else:
            c.assign(partitions)
        member["id"] = c.memberid()
        emit("assigned", member_id=member["id"], generation=None,
             partitions=partitions_of(c.assignment()),
             added=partitions_of(partitions), since=since, since_ns=since_ns)

    def on_revoke(c, partitions):
        positions.flush()
        if args.commit_on_revoke:
            offsets = positions.of((tp.topic, tp.partition) for tp in partitions)
            error = None
            if offsets:
                try:
                    done = c.commit(offsets=[TopicPartition(t, p, o) for t, p, o in offsets],
                                    asynchronous=False)
                    error = ", ".join(str(tp) for tp in done if tp.error) or None
                except KafkaException as e:
                    error = str(e)
            emit("revoke_commit", offsets=offsets, error=error)
        positions.forget((tp.topic, tp.partition) for tp in partitions)
        if cooperative:
            c.incremental_unassign(partitions)
        else:
            c.unassign()
        emit("revoked", member_id=member["id"], partitions=partitions_of(partitions),
             at=time.time(), at_ns=time.monotonic_ns())

    consumer.subscribe(args.topics, on_assign=on_assign, on_revoke=on_revoke)
    commands = command_queue()
    while True:
        # One message per poll (not `consume(n)`): a rebalance callback served inside a poll
        # then comes after every record handed over before it was added to `positions`.
        # At most 500 per round, so commands are served during a backlog; a message polled is
        # always handled (a loop that polled the 501st and then stopped dropped it from the
        # report: seen as one record "never read" after an eager reassignment re-read a
        # partition of 400 records from the start).
        m = consumer.poll(0.1)
        handled = 0
        while m is not None:
            if m.error():
                emit("error", message=f"consume: {m.error()}")
            elif args.report_records:
                positions.add(m.topic(), m.partition(), m.offset(), m.key())
            handled += 1
            m = consumer.poll(0) if handled < 500 else None
        positions.flush()
        while not commands.empty():
            cmd = commands.get()
            try:
                if cmd["cmd"] == "commit":
                    done = consumer.commit(
                        offsets=[TopicPartition(t, p, o) for t, p, o in cmd["offsets"]],
                        asynchronous=False)
                    failed = [str(tp) for tp in done if tp.error]
                    if failed:
                        emit("error", message="commit failed: " + ", ".join(failed))
                    else:
                        emit("committed",
                             offsets=sorted([tp.topic, tp.partition, tp.offset] for tp in done))
                elif cmd["cmd"] == "commit_consumed":
                    offsets = positions.of((tp.topic, tp.partition)
                                           for tp in consumer.assignment())
                    done = consumer.commit(
                        offsets=[TopicPartition(t, p, o) for t, p, o in offsets],
                        asynchronous=False) if offsets else []
                    failed = [str(tp) for tp in done if tp.error]
                    if failed:
                        emit("error", message="commit failed: " + ", ".join(failed))
                    else:
                        emit("committed", offsets=offsets)
                elif cmd["cmd"] == "committed":
                    got = consumer.committed(
                        [TopicPartition(t, p) for t, p in cmd["partitions"]], timeout=30)
                    emit("fetched", offsets=sorted(
                        [tp.topic, tp.partition, tp.offset if tp.offset >= 0 else None]
                        for tp in got))
                elif cmd["cmd"] == "close":
                    consumer.close()
                    emit("closed", at=time.time(), at_ns=time.monotonic_ns())
                    return
            except KafkaException as e:
                emit("error", message=f"{cmd['cmd']}: {e}")


if __name__ == "__main__":
    main()
