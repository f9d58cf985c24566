"""Issue 13: rack-aware assignment (KIP-881) for real confluent-kafka (librdkafka) consumers.
Each consumer sets `client.rack`, which librdkafka sends in Subscription v3; the replicas'
racks come from the catalog (standalone, `POST /v1/topics` with `racks`). The host's `range`
and `cooperative-sticky` modules read both (ABI input `racks`) and give each consumer the
partitions with a replica in its rack where the balance allows.

The topic has 6 partitions whose single replica sits on rack r0, r1, r2, r0, r1, r2. Three
consumers on racks r0, r1 and r2 must each get exactly the two partitions of their own rack,
which is not what range gives without racks (0-1, 2-3, 4-5): a control group on the same
topic whose consumers send no rack shows that split. cooperative-sticky has no fixed split
without racks (it depends on the order the members joined, and the interleaved 0-3, 1-4, 2-5
is one it reaches: seen in CI), so its evidence is the exact consumer-to-rack match alone. A fourth consumer on a rack
with no replica still gets its share: balance first, racks where they agree with it."""

import pytest

from conftest import unique
from harness.expect import stable_split

RACKS = ["r0", "r1", "r2"]


def rack_topic(host, name):
    """A 6-partition topic, partition p's one replica on rack r(p mod 3)."""
    host.create_topic_with_racks(name, [[RACKS[p % 3]] for p in range(6)])
    return {name: 6}


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_each_consumer_gets_the_partitions_of_its_rack(host, consumers, strategy):
    group = unique(f"rack-{strategy}")
    topics = rack_topic(host, f"{group}-orders")
    topic = next(iter(topics))
    agents = [consumers.start("confluent-kafka", group, sorted(topics), [strategy],
                              client_id=f"on-{rack}", rack=rack)
              for rack in RACKS]
    split = stable_split(host, group, agents, topics)
    assert split == {f"on-{r}": [[topic, p], [topic, p + 3]] for p, r in enumerate(RACKS)}, \
        split
    assert host.group_detail(group)["strategy"] == strategy

    if strategy != "range":
        return  # no split without racks to compare with (module docstring)
    # The control: the same topic, consumers without a rack, range's plain split.
    control = unique(f"norack-{strategy}")
    plain = [consumers.start("confluent-kafka", control, sorted(topics), [strategy],
                             client_id=f"plain-{i}")
             for i in range(3)]
    plain_split = stable_split(host, control, plain, topics)
    assert sorted(plain_split.values()) == [[[topic, 2 * i], [topic, 2 * i + 1]]
                                            for i in range(3)], plain_split


def test_a_consumer_on_a_rack_without_replicas_still_gets_its_share(host, consumers):
    group = unique("rack-share")
    topics = rack_topic(host, f"{group}-orders")
    topic = next(iter(topics))
    agents = [consumers.start("confluent-kafka", group, sorted(topics), ["range"],
                              client_id=f"on-{rack}", rack=rack)
              for rack in ["r0", "r1", "elsewhere"]]
    split = stable_split(host, group, agents, topics)
    assert sorted(len(p) for p in split.values()) == [2, 2, 2], split
    # The two consumers whose rack holds replicas get only partitions of their rack.
    assert all(p % 3 == 0 for _, p in split["on-r0"]), split
    assert all(p % 3 == 1 for _, p in split["on-r1"]), split
    assert {t for t, _ in split["on-elsewhere"]} == {topic}, split
