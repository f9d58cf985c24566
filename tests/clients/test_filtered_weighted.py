"""Issue 13: the built-in `filtered` and `weighted` strategies decide the assignment of real
confluent-kafka (librdkafka) consumers. The consumers propose `range`, as librdkafka can; the
operator selects the strategy and its parameters for the group (`PUT /v1/groups/G/config`,
what `assignor-host group set G --strategy S --param k=v` sends), so the host assigns with it.

- `filtered` with a white list of client ids: only those consumers get partitions, an
  excluded one in the same group gets none and the group is otherwise normal (Stable, every
  partition owned once); a bad pattern is refused when set, with the module's message.
- `weighted` 1:2:3 on one topic of 12 partitions: 2, 4 and 6 partitions."""

from conftest import unique
from harness.expect import stable_split


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
