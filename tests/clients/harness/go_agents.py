"""The Go agents: franz-go, sarama and kafka-go consumers (tests/clients/go, one binary each,
built by tests/clients/run with `go build` into target/go-agents, or `GO_AGENTS`), speaking
the JSON-lines protocol of agents/common.py with its flags. `spawn` (harness/agents.py) runs
them as it runs the Python agents; this module says what each can be asked.

- franz-go (kgo): balancers `cooperative-sticky` (its default here), `sticky`, `range`,
  `roundrobin`; KIP-848 with `group_protocol="consumer"`, where franz-go names the
  server-side assignor by its balancer, so `remote_assignor` is `range` or `uniform`;
  `commit_on_revoke`, `rebalance_timeout_ms`, `rack`.
- sarama: the eager strategies `range`, `roundrobin`, `sticky`; `instance_id`,
  `rebalance_timeout_ms`, `rack`.
- kafka-go: `range`, `roundrobin`, `rack-affinity`; `rebalance_timeout_ms`.
"""

import os
from pathlib import Path

GO_AGENTS_DIR = Path(os.environ.get(
    "GO_AGENTS", Path(__file__).resolve().parents[3] / "target" / "go-agents"))

# client -> the options of spawn() its agent takes besides the common ones
GO_AGENTS = {
    "franz-go": {"group_protocol", "remote_assignor", "commit_on_revoke",
                 "rebalance_timeout_ms", "rack"},
    "sarama": {"instance_id", "rebalance_timeout_ms", "rack"},
    "kafka-go": {"rebalance_timeout_ms"},
}

_FLAGS = {"group_protocol": "--group-protocol", "remote_assignor": "--remote-assignor",
          "instance_id": "--instance-id", "rebalance_timeout_ms": "--rebalance-timeout-ms",
          "rack": "--rack"}


def go_argv(client, bootstrap, group, topics, strategies, client_id, records, **options):
    """The command line of `client`'s agent; `options` are spawn()'s keyword options (None or
    False when not asked for). An option the agent does not take raises ValueError."""
    binary = GO_AGENTS_DIR / client
    if not binary.is_file():
        raise AssertionError(f"{binary} is missing: tests/clients/run builds it "
                             "(go build in tests/clients/go)")
    argv = [str(binary), "--bootstrap", bootstrap, "--group", group,
            "--topics", ",".join(topics)]
    for s in strategies:
        argv += ["--strategy", s]
    if client_id:
        argv += ["--client-id", client_id]
    if records:
        argv += ["--report-records"]
    if options.get("remote_assignor") and not options.get("group_protocol"):
        options["group_protocol"] = "consumer"
    for option, value in options.items():
        if value is None or value is False:
            continue
        if option not in GO_AGENTS[client]:
            raise ValueError(f"{client}: the Go agent does not take {option}")
        if option == "commit_on_revoke":
            argv += ["--commit-on-revoke"]
        else:
            argv += [_FLAGS[option], str(value)]
    return argv
