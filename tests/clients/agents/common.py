"""What every Python agent shares: the JSON-lines protocol with the test process.

An agent is one real Kafka consumer in its own process. It prints one JSON object per line on
stdout (events) and reads one JSON object per line on stdin (commands):

events   {"event": "assigned", "member_id": str, "generation": int|null, "partitions": [[t, p]...]}
             the consumer's whole assignment after a rebalance, as the client reports it
         {"event": "revoked", "member_id": str, "partitions": [[t, p]...]}
         {"event": "committed", "offsets": [[t, p, offset]...]}       answer to "commit"
         {"event": "fetched", "offsets": [[t, p, offset|null]...]}    answer to "committed"
         {"event": "closed"}                                        the consumer left the group
         {"event": "error", "message": str}                         anything the client raised
commands {"cmd": "commit", "offsets": [[t, p, offset]...]}
         {"cmd": "committed", "partitions": [[t, p]...]}
         {"cmd": "close"}

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
    args = parser.parse_args()
    args.topics = args.topics.split(",")
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
