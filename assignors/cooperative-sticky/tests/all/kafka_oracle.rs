//! Groups answered by Kafka's own Java `AbstractStickyAssignor` (recorded in
//! `tests/data/kafka_oracle.txt`; how they were made: `assignors-common/sticky-core/oracle/README.md`):
//! random small groups with equal and different subscriptions, previous owners of several
//! generations, conflicting claims and racks. The port must give Kafka's assignment and
//! Kafka's `partitionsTransferringOwnership` for every one of them.

use assignor_sticky_core::kafka_test::oracle;

#[test]
fn every_recorded_group_gets_kafkas_answer() {
    let cases = oracle::parse(include_str!("../data/kafka_oracle.txt"));
    assert!(cases.len() > 300, "{} cases", cases.len());
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|c| oracle::check(c).err())
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} groups differ from Kafka:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
