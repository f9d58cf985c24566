//! Corrupt rows of the group tables, as a torn write or a flipped bit on disk would leave
//! them: a group's snapshot (MessagePack), a committed offset (MessagePack) and a group's
//! configuration (JSON), each mutated hundreds of ways (seeded, `crate::mutate`). Loading must
//! never panic: it either reads the row whole (and what it read writes and reads back the
//! same) or refuses with an error naming the table and the row, which the host prints when it
//! will not start on such a store.

use redb::{ReadableTable, TableDefinition};

use super::Store;
use super::groups::tests::{offset, snapshot};
use super::groups::{CONFIGS, GROUPS, OFFSETS};
use crate::coordinator::{GroupConfig, SavedGroup};
use crate::mutate::Mutator;

/// Replaces the value of `key` in `table` by `edit` of it.
fn corrupt<K: redb::Key + 'static>(
    store: &Store,
    table: TableDefinition<'static, K, &'static [u8]>,
    key: K::SelfType<'_>,
    edit: impl FnOnce(&[u8]) -> Vec<u8>,
) {
    let tx = store.db().begin_write().unwrap();
    {
        let mut t = tx.open_table(table).unwrap();
        let old = t.get(&key).unwrap().unwrap().value().to_vec();
        t.insert(&key, edit(&old).as_slice()).unwrap();
    }
    tx.commit().unwrap();
}

#[test]
fn corrupt_group_rows_are_read_whole_or_refused_naming_the_row() {
    let mut mutator = Mutator(0x2545_f491_4f6c_dd1d);
    let config = GroupConfig {
        strategy: Some("range".into()),
        stabilize_ms: Some(1000),
        ..GroupConfig::default()
    };
    let (mut read, mut refused) = (0, 0);
    for case in 0..600 {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store.save_group(&snapshot("g", 3)).unwrap();
        store.save_offsets("g", &[offset("t", 0, 5)]).unwrap();
        store.save_group_config("g", &config).unwrap();
        let mut edit = |old: &[u8]| mutator.mutate(old);
        let table = ["groups", "group_offsets", "group_configs"][case % 3];
        match case % 3 {
            0 => corrupt(&store, GROUPS, "g", &mut edit),
            1 => corrupt(&store, OFFSETS, ("g", "t", 0), &mut edit),
            _ => corrupt(&store, CONFIGS, "g", &mut edit),
        }
        match store.load_groups() {
            Ok(groups) => {
                read += 1;
                let g = groups.iter().find(|g| g.group_id == "g").unwrap();
                if let Some(s) = &g.snapshot {
                    let again = SavedGroup::decode(&s.encode().unwrap()).unwrap();
                    assert_eq!(&again, s, "case {case}: the snapshot read back");
                }
                if let Some(c) = &g.config {
                    let again: GroupConfig =
                        serde_json::from_slice(&serde_json::to_vec(c).unwrap()).unwrap();
                    assert_eq!(&again, c, "case {case}: the configuration read back");
                }
                assert_eq!(g.offsets.len(), 1, "case {case}: the offset row is kept");
            }
            Err(e) => {
                refused += 1;
                let message = e.to_string();
                assert!(
                    message.contains("corrupt") && message.contains("\"g"),
                    "case {case} ({table}): {message}"
                );
            }
        }
    }
    assert!(refused > 0 && read > 0, "read {read}, refused {refused}");
}
