"""What every Python agent shares: the JSON-lines protocol with the test process.

An agent is one real Kafka consumer in its own process. It prints one JSON object per line on
stdout (events) and reads one JSON object per line on stdin (commands):

events   {"event": "assigned", "member_id": str, "generation": int|null, "partitions": [[t, p]...]}
             the consumer's whole assignment after a rebalance, as the client reports it
         {"event": "revoked", "member_id": str, "partitions": [[t, p]...]}
         {"event": "committed", "offsets": [[t, p, offset]...]}       answer to "commit"
         {"event": "fetched", "offsets": [[t, p, offset|null]...]}    answer to "committed"
         {"event": "closed"}                                        the consumer left the group
             confluent-kafka adds stamps to assigned (`added`, `since`, `since_ns`), revoked and
             closed (`at`, `at_ns`): time.time() and time.monotonic_ns() before taking and
             after giving up partitions (ownership intervals, comparable across processes)
         {"event": "error", "message": str}                         anything the client raised
         {"event": "records", "records": [[t, p, offset, key]...]}  with --report-records: what
             one poll returned, in the order the client handed it over (proxy mode)
         {"event": "revoke_commit", "offsets": [[t, p, offset]...], "error": str|null}
             with --commit-on-revoke: the consumed positions committed in the revoke callback
commands {"cmd": "commit", "offsets": [[t, p, offset]...]}
         {"cmd": "commit_consumed"}     commits the position after the last record reported of
             every partition the consumer holds; answered by "committed" with those offsets
         {"cmd": "committed", "partitions": [[t, p]...]}
         {"cmd": "close"}

The consumed position of a partition is the offset after the last record reported from it
(what an application that processed those records commits); a revoked partition's position
is forgotten, so a later commit_consumed commits only partitions the consumer holds.

stdin is read by a thread into a queue so the consumer's own loop never blocks on it.
"""

import argparse
import faulthandler
import json
import logging
import os
import queue
import signal
import sys
import threading

# SIGUSR1 dumps every thread's stack on stderr: the harness asks for it when a test fails, to
# show where a client was stuck.
faulthandler.register(signal.SIGUSR1, all_threads=True)

# The clients' warnings go to stderr, which the harness keeps and prints for a failing test;
# AGENT_DEBUG=kafka.coordinator,aiokafka (logger names) adds those loggers at DEBUG.
logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                    format="%(asctime)s %(threadName)s %(name)s %(levelname)s %(message)s")
for _name in filter(None, os.environ.get("AGENT_DEBUG", "").split(",")):
    logging.getLogger(_name).setLevel(logging.DEBUG)


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topics", required=True, help="comma-separated subscription")
    parser.add_argument("--strategy", action="append", default=[],
                        help="assignment strategy name (repeatable)")
    parser.add_argument("--client-id", default=None)
    parser.add_argument("--group-protocol", default="classic", choices=["classic", "consumer"],
                        help="librdkafka's group.protocol: consumer is KIP-848's "
                             "(ConsumerGroupHeartbeat)")
    parser.add_argument("--instance-id", default=None,
                        help="group.instance.id: a static member (confluent-kafka, kafka-python)")
    parser.add_argument("--rebalance-timeout-ms", type=int, default=None,
                        help="JoinGroup's rebalance timeout (librdkafka: max.poll.interval.ms; "
                             "confluent-kafka, classic protocol only)")
    parser.add_argument("--rack", default=None,
                        help="client.rack, sent in Subscription v3 (confluent-kafka only)")
    parser.add_argument("--remote-assignor", default=None,
                        help="librdkafka's group.remote.assignor (consumer protocol only)")
    parser.add_argument("--report-records", action="store_true",
                        help="emit a `records` event for every poll that returned records")
    parser.add_argument("--commit-on-revoke", action="store_true",
                        help="commit the consumed positions of revoked partitions in the "
                             "revoke callback, as at-least-once applications do")
    parser.add_argument("--sasl", default=None, metavar="MECHANISM:USER",
                        help="log in with SASL (SASL_PLAINTEXT, or SASL_SSL with --ssl-ca), "
                             "with the password in the environment's AGENT_SASL_PASSWORD")
    parser.add_argument("--ssl-ca", default=None, help="speak TLS, trusting this PEM CA")
    parser.add_argument("--ssl-cert", default=None,
                        help="with --ssl-ca: present this PEM client certificate (mutual TLS)")
    parser.add_argument("--ssl-key", default=None, help="the key of --ssl-cert (PEM)")
    args = parser.parse_args()
    args.topics = args.topics.split(",")
    if args.sasl:
        mechanism, user = args.sasl.split(":", 1)
        password = os.environ.get("AGENT_SASL_PASSWORD")
        if password is None:
            parser.error("--sasl needs the password in AGENT_SASL_PASSWORD")
        args.sasl = (mechanism, user, password)
    return args


_out = threading.Lock()


def emit(event, **fields):
    fields["event"] = event
    line = json.dumps(fields, sort_keys=True)
    with _out:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def partitions_of(items):
    """[[topic, partition], ...] sorted, from any objects with .topic and .partition."""
    return sorted([tp.topic, tp.partition] for tp in items)


def command_queue():
    """A queue fed with the decoded stdin commands; EOF on stdin becomes a close."""
    commands = queue.Queue()

    def read():
        for line in sys.stdin:
            line = line.strip()
            if line:
                commands.put(json.loads(line))
        commands.put({"cmd": "close"})

    threading.Thread(target=read, daemon=True).start()
    return commands


class Positions:
    """The consumed position of each partition: the offset after the last record reported.

    Records are added one at a time as the client hands them over (`add`) and reported in
    one `records` event per poll (`flush`); the rebalance callbacks flush first, so a
    record is always reported before the revocation or assignment that follows it, and a
    revoke commit covers every record handed over before it."""

    def __init__(self):
        self._next = {}
        self._pending = []

    def add(self, topic, partition, offset, key):
        self._next[(topic, partition)] = offset + 1
        self._pending.append([topic, partition, offset, key_text(key)])

    def flush(self):
        if self._pending:
            emit("records", records=self._pending)
            self._pending = []

    def of(self, partitions):
        """[[t, p, next offset]...] of those of `partitions` ((t, p) pairs) with records."""
        return sorted([t, p, self._next[(t, p)]] for t, p in partitions if (t, p) in self._next)

    def forget(self, partitions):
        for tp in partitions:
            self._next.pop(tuple(tp), None)


def key_text(key):
    return key.decode("utf-8", "replace") if isinstance(key, (bytes, bytearray)) else key
