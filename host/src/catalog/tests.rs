//! Catalog behaviour: Kafka's admin rules, persistence, seeding and the published view.

use super::*;
use super::{CatalogConfig, TopicSeed};

fn settings() -> CatalogConfig {
    CatalogConfig {
        default_partitions: 3,
        max_partitions_per_topic: 100,
        ..CatalogConfig::default()
    }
}

fn new_topic(name: &str, partitions: Option<i32>) -> NewTopic {
    NewTopic {
        name: name.to_owned(),
        partitions,
        partition_racks: Vec::new(),
    }
}

#[test]
fn create_uses_default_partitions_and_publishes_the_view() {
    let catalog = Catalog::open(&settings(), None).unwrap();
    let mut rx = catalog.subscribe();
    let topic = catalog.create(new_topic("orders", None), false).unwrap();
    assert_eq!(topic.partition_count, 3);
    assert!(rx.has_changed().unwrap());
    assert_eq!(rx.borrow_and_update().get("orders"), Some(&topic));
}

#[test]
fn validate_only_changes_nothing() {
    let catalog = Catalog::open(&settings(), None).unwrap();
    let rx = catalog.subscribe();
    let topic = catalog.create(new_topic("orders", Some(7)), true).unwrap();
    assert_eq!(topic.partition_count, 7);
    assert!(catalog.topic("orders").is_none());
    assert!(!rx.has_changed().unwrap());
}

#[test]
fn create_refusals_carry_kafkas_codes() {
    let catalog = Catalog::open(&settings(), None).unwrap();
    catalog.create(new_topic("a.b", Some(1)), false).unwrap();
    let cases = [
        (new_topic("a.b", Some(1)), 36, "already exists"),
        (
            new_topic("a_b", Some(1)),
            17,
            "collides with existing topic: a.b",
        ),
        (new_topic("bad name", Some(1)), 17, "illegal"),
        (new_topic("zero", Some(0)), 37, "non-positive"),
        (new_topic("huge", Some(101)), 37, "limit of 100"),
        (
            NewTopic {
                partition_racks: vec![vec!["r1".into()]],
                ..new_topic("racks", Some(2))
            },
            39,
            "one list per partition",
        ),
    ];
    for (new, code, text) in cases {
        let name = new.name.clone();
        let err = catalog.create(new, false).unwrap_err();
        assert_eq!(err.error_code(), code, "{name}: {err}");
        assert!(err.to_string().contains(text), "{name}: {err}");
    }
}

#[test]
fn partitions_only_increase_and_racks_cycle() {
    let catalog = Catalog::open(&settings(), None).unwrap();
    catalog
        .create(
            NewTopic {
                partition_racks: vec![vec!["a".into()], vec!["b".into()]],
                ..new_topic("t", Some(2))
            },
            false,
        )
        .unwrap();
    let same = catalog.create_partitions("t", 2, false).unwrap_err();
    assert_eq!(same.error_code(), 37);
    assert!(same.to_string().contains("already has 2"));
    let fewer = catalog.create_partitions("t", 1, false).unwrap_err();
    assert!(fewer.to_string().contains("would not be an increase"));
    let unknown = catalog.create_partitions("nope", 5, false).unwrap_err();
    assert_eq!(unknown.error_code(), 3);

    let grown = catalog.create_partitions("t", 5, false).unwrap();
    assert_eq!(grown.partition_count, 5);
    let racks: Vec<&str> = grown
        .partition_racks
        .iter()
        .map(|r| r[0].as_str())
        .collect();
    assert_eq!(racks, ["a", "b", "a", "b", "a"]);
    assert_eq!(catalog.topic("t"), Some(grown));
}

#[test]
fn delete_removes_and_unknown_is_an_error() {
    let catalog = Catalog::open(&settings(), None).unwrap();
    catalog.create(new_topic("t", Some(1)), false).unwrap();
    catalog.delete("t").unwrap();
    assert!(catalog.topics().is_empty());
    assert_eq!(catalog.delete("t").unwrap_err().error_code(), 3);
}

#[test]
fn store_keeps_topics_and_seeds_grow_them() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        let catalog = Catalog::open(&settings(), Some(store)).unwrap();
        catalog.create(new_topic("kept", Some(4)), false).unwrap();
        catalog.create(new_topic("grown", Some(2)), false).unwrap();
    }
    let seeded = CatalogConfig {
        topics: vec![
            TopicSeed {
                name: "grown".into(),
                partitions: 6,
                partition_racks: Vec::new(),
            },
            TopicSeed {
                name: "kept".into(),
                partitions: 1,
                partition_racks: Vec::new(),
            },
            TopicSeed {
                name: "fresh".into(),
                partitions: 2,
                partition_racks: Vec::new(),
            },
        ],
        ..settings()
    };
    let store = Store::open(dir.path()).unwrap();
    let catalog = Catalog::open(&seeded, Some(store)).unwrap();
    let counts: Vec<(String, i32)> = catalog
        .topics()
        .values()
        .map(|t| (t.name.clone(), t.partition_count))
        .collect();
    assert_eq!(
        counts,
        [
            ("fresh".to_owned(), 2),
            ("grown".to_owned(), 6),
            ("kept".to_owned(), 4)
        ]
    );
}

#[test]
fn a_bad_seed_refuses_the_start_naming_the_topic() {
    let bad = CatalogConfig {
        topics: vec![TopicSeed {
            name: "no spaces".into(),
            partitions: 1,
            partition_racks: Vec::new(),
        }],
        ..settings()
    };
    let err = Catalog::open(&bad, None).err().unwrap();
    assert!(err.to_string().contains("\"no spaces\""), "{err}");
}

#[test]
fn every_topic_has_a_stable_persisted_non_zero_id_and_a_recreated_topic_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let (orders, other) = {
        let catalog = Catalog::open(&settings(), Some(Store::open(dir.path()).unwrap())).unwrap();
        catalog.create(new_topic("orders", Some(2)), false).unwrap();
        catalog.create(new_topic("other", Some(1)), false).unwrap();
        let view = catalog.topics();
        let (orders, other) = (view.id("orders").unwrap(), view.id("other").unwrap());
        assert!(!orders.is_nil() && !other.is_nil());
        assert_ne!(orders, other);
        assert_eq!(view.name_of(&orders), Some("orders"));
        // Growing a topic keeps its id.
        catalog.create_partitions("orders", 4, false).unwrap();
        assert_eq!(catalog.topics().id("orders"), Some(orders));
        (orders, other)
    };
    let catalog = Catalog::open(&settings(), Some(Store::open(dir.path()).unwrap())).unwrap();
    assert_eq!(
        catalog.topics().id("orders"),
        Some(orders),
        "kept across a restart"
    );
    assert_eq!(catalog.topics().id("other"), Some(other));
    catalog.delete("orders").unwrap();
    assert_eq!(catalog.topics().name_of(&orders), None);
    catalog.create(new_topic("orders", Some(2)), false).unwrap();
    let again = catalog.topics().id("orders").unwrap();
    assert!(!again.is_nil());
    assert_ne!(again, orders, "a recreated topic is another topic");
}

#[test]
fn topics_stored_before_ids_existed_get_one_when_the_catalog_opens() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let topic = Topic {
        name: "old".into(),
        partition_count: 1,
        partition_racks: Vec::new(),
    };
    store.put_topic(&topic, uuid::Uuid::nil()).unwrap();
    let id = Catalog::open(&settings(), Some(store.clone()))
        .unwrap()
        .topics()
        .id("old")
        .unwrap();
    assert!(!id.is_nil());
    assert_eq!(store.load_topic_ids().unwrap()["old"], id, "persisted");
}
