"""Issue 13: the built-in `filtered` and `weighted` strategies decide the assignment of real
confluent-kafka (librdkafka) consumers. The consumers propose `range`, as librdkafka can; the
operator selects the strategy and its parameters for the group (`PUT /v1/groups/G/config`,
what `assignor-host group set G --strategy S --param k=v` sends), so the host assigns with it.

- `filtered` with a white list of client ids: only those consumers get partitions, an
  excluded one in the same group gets none and the group is otherwise normal (Stable, every
  partition owned once); a bad pattern is refused when set, with the module's message.
- `weighted` 1:2:3 on one topic of 12 partitions: 2, 4 and 6 partitions."""

from conftest import unique
from harness.expect import all_partitions
from harness.wait import wait_until


def stable_split(host, group, agents, topics):
    """Waits until the group is Stable with exactly `agents`, each agent's own report equal to
    what the host says it holds, and the partitions covered once; returns
    {client_id: partitions}."""
    def check():
        d = host.describe(group)
        seen = f"{d}\n" + "\n".join(a.summary() for a in agents)
        if d["state"] != "Stable" or set(d["members"]) != {a.member_id for a in agents}:
            return False, seen
        if any(a.current != d["members"][a.member_id]["assignment"] for a in agents):
            return False, seen
        union = sorted(tp for a in agents for tp in a.current)
        if union != all_partitions(topics):
            return False, seen
        return True, d
    d = wait_until(check, f"{group}: stable and covered once", timeout_s=60)[1]
    for a in agents:
        assert not a.errors(), f"{a.name} reported errors: {a.errors()}"
    return {d["members"][a.member_id]["client_id"]: a.current for a in agents}


def test_filtered_white_list_gives_only_the_listed_consumers_partitions(host, consumers):
    group = unique("filtered")
    topics = {f"{group}-orders": 6}
    host.create_topics(topics)
    status, answer = host.set_group_config(group, "filtered", {"include": "keep-[12]"})
    assert (status, answer["error"]["code"]) == (422, "bad_params"), answer
    assert "pattern `keep-[12]` uses `[`" in answer["error"]["message"], answer
    status, answer = host.set_group_config(group, "filtered", {"include": "keep-*"})
    assert status == 200, answer

    agents = [consumers.start("confluent-kafka", group, sorted(topics), ["range"],
                              client_id=client_id)
              for client_id in ["keep-1", "laptop", "keep-2"]]
    split = stable_split(host, group, agents, topics)
    assert split["laptop"] == [], split
    assert sorted(len(split[c]) for c in ["keep-1", "keep-2"]) == [3, 3], split
    assert host.group_detail(group)["strategy"] == "filtered"


def test_weighted_one_two_three(host, consumers):
    group = unique("weighted")
    topics = {f"{group}-orders": 12}
    host.create_topics(topics)
    status, answer = host.set_group_config(group, "weighted",
                                           {"weights": "small:1,medium:2,large:3"})
    assert status == 200, answer

    agents = [consumers.start("confluent-kafka", group, sorted(topics), ["range"],
                              client_id=client_id)
              for client_id in ["small", "medium", "large"]]
    split = stable_split(host, group, agents, topics)
    assert {c: len(p) for c, p in split.items()} == {"small": 2, "medium": 4, "large": 6}, split
