//! Committed offsets: commit, read back (through the client and straight from the cluster),
//! list, delete, a member on the cluster itself, many groups.

use kafka_protocol::ResponseError;

use super::support::unique;
use super::{cluster, codes, committed, parts, record, sorted};

#[tokio::test]
async fn committed_offsets_read_back_through_the_client_and_straight_from_the_cluster() {
    let (kafka, client, n) = cluster(3).await;
    let offsets = [record(&n.t, 0, 11, 4, "m0"), record(&n.t, 2, 13, 5, "m2")];
    let errors = client.commit_offsets(&n.g, &offsets).await.expect("commit");
    assert_eq!(codes(&errors), [(0, 0), (2, 0)]);

    // Kafka keeps the committed leader epochs (librdkafka sends them from OffsetCommit v6 and
    // reads them from OffsetFetch v5). (noida-db 0.2.3 kept none: -1 for every partition.)
    let raw = kafka.raw_offsets(&n.g, &n.t, &[0, 2]);
    assert_eq!(
        raw,
        [
            (0, 11, 4, Some("m0".to_owned()), 0),
            (2, 13, 5, Some("m2".to_owned()), 0)
        ]
    );
    let read = client
        .fetch_offsets(&n.g, Some(&parts(&n.t, &[0, 2])))
        .await
        .expect("fetch");
    assert_eq!(
        sorted(read),
        [
            committed(&n.t, 0, 11, 4, Some("m0")),
            committed(&n.t, 2, 13, 5, Some("m2"))
        ]
    );
}

#[tokio::test]
async fn fetching_all_lists_every_committed_partition_and_an_uncommitted_one_reads_minus_one() {
    let (_kafka, client, n) = cluster(4).await;
    let offsets = [
        record(&n.t, 0, 5, -1, ""),
        record(&n.t, 1, 6, -1, "x"),
        record(&n.t, 3, 8, -1, "y"),
    ];
    assert_eq!(
        codes(&client.commit_offsets(&n.g, &offsets).await.expect("commit")),
        [(0, 0), (1, 0), (3, 0)]
    );

    let all = sorted(client.fetch_offsets(&n.g, None).await.expect("fetch all"));
    let found: Vec<_> = all
        .iter()
        .map(|c| (c.partition, c.offset, c.error))
        .collect();
    assert_eq!(found, [(0, 5, 0), (1, 6, 0), (3, 8, 0)]);

    let asked = sorted(
        client
            .fetch_offsets(&n.g, Some(&parts(&n.t, &[1, 2])))
            .await
            .expect("fetch"),
    );
    let found: Vec<_> = asked
        .iter()
        .map(|c| (c.partition, c.offset, c.error))
        .collect();
    assert_eq!(found, [(1, 6, 0), (2, -1, 0)]);
    assert_eq!(
        client
            .fetch_offsets(&unique("nobody"), None)
            .await
            .expect("unknown group"),
        []
    );
}

#[tokio::test]
async fn a_member_joined_on_the_cluster_directly_makes_every_partition_unknown_member_and_nothing_changes()
 {
    let (kafka, client, n) = cluster(2).await;
    let before = [record(&n.t, 0, 100, -1, "a"), record(&n.t, 1, 200, -1, "b")];
    assert_eq!(
        codes(&client.commit_offsets(&n.g, &before).await.expect("commit")),
        [(0, 0), (1, 0)]
    );

    let member = kafka.member(&n.g, &n.t);
    let overwrite = [record(&n.t, 0, 1, -1, "c"), record(&n.t, 1, 2, -1, "d")];
    let errors = client
        .commit_offsets(&n.g, &overwrite)
        .await
        .expect("commit while a member is in");
    let unknown_member = ResponseError::UnknownMemberId.code();
    assert_eq!(unknown_member, 25);
    assert_eq!(codes(&errors), [(0, unknown_member), (1, unknown_member)]);
    let raw = kafka.raw_offsets(&n.g, &n.t, &[0, 1]);
    assert_eq!(
        raw.iter().map(|p| p.1).collect::<Vec<_>>(),
        [100, 200],
        "offsets overwritten: {raw:?}"
    );

    drop(member);
    let errors = client
        .commit_offsets(&n.g, &overwrite)
        .await
        .expect("commit once the member left");
    assert_eq!(codes(&errors), [(0, 0), (1, 0)]);
    assert_eq!(
        kafka
            .raw_offsets(&n.g, &n.t, &[0, 1])
            .iter()
            .map(|p| p.1)
            .collect::<Vec<_>>(),
        [1, 2]
    );
}

#[tokio::test]
async fn delete_group_removes_its_offsets_and_delete_offsets_only_the_named_partitions() {
    let (kafka, client, n) = cluster(3).await;
    let offsets = [
        record(&n.t, 0, 1, -1, ""),
        record(&n.t, 1, 2, -1, ""),
        record(&n.t, 2, 3, -1, ""),
    ];
    let (g1, g2) = (unique("g1"), unique("g2"));
    for group in [&g1, &g2] {
        client
            .commit_offsets(group, &offsets)
            .await
            .expect("commit");
    }

    let deleted = client
        .delete_offsets(&g1, &parts(&n.t, &[1]))
        .await
        .expect("delete offsets");
    assert_eq!(codes(&deleted), [(1, 0)]);
    let left = sorted(
        client
            .fetch_offsets(&g1, Some(&parts(&n.t, &[0, 1, 2])))
            .await
            .expect("fetch"),
    );
    assert_eq!(
        left.iter().map(|c| c.offset).collect::<Vec<_>>(),
        [1, -1, 3]
    );

    assert_eq!(client.delete_group(&g2).await.expect("delete group"), 0);
    assert_eq!(
        client.fetch_offsets(&g2, None).await.expect("fetch all"),
        []
    );
    assert_eq!(
        kafka
            .raw_offsets(&g2, &n.t, &[0, 1, 2])
            .iter()
            .map(|p| p.1)
            .collect::<Vec<_>>(),
        [-1, -1, -1]
    );
    let not_found = ResponseError::GroupIdNotFound.code();
    assert_eq!(
        client.delete_group(&g2).await.expect("delete again"),
        not_found
    );
    let unknown = client
        .delete_offsets(&g2, &parts(&n.t, &[0]))
        .await
        .expect_err("delete from a deleted group");
    assert_eq!(unknown.kafka_code(), Some(not_found), "{unknown}");
}

#[tokio::test]
async fn fifty_groups_beyond_librdkafkas_coordinator_cache_all_read_back() {
    let (_kafka, client, n) = cluster(2).await;
    let prefix = unique("group");
    let offsets = |g: i64| {
        [
            record(&n.t, 0, g * 10, -1, &format!("g{g}")),
            record(&n.t, 1, g * 10 + 1, -1, ""),
        ]
    };
    for round in 0..2 {
        for g in 0..50 {
            let errors = client
                .commit_offsets(&format!("{prefix}-{g}"), &offsets(g + round))
                .await
                .expect("commit");
            assert_eq!(codes(&errors), [(0, 0), (1, 0)], "group-{g}");
        }
    }
    for g in 0..50 {
        let read = sorted(
            client
                .fetch_offsets(&format!("{prefix}-{g}"), None)
                .await
                .expect("fetch"),
        );
        let got: Vec<_> = read
            .iter()
            .map(|c| (c.partition, c.offset, c.metadata.clone()))
            .collect();
        let meta = format!("g{}", g + 1);
        assert_eq!(
            got,
            [(0, (g + 1) * 10, Some(meta)), (1, (g + 1) * 10 + 1, None)],
            "group-{g}"
        );
    }
}
