//! Kafka's `AbstractStickyAssignorTest`, every case, with this strategy's flavour (as Kafka
//! runs it for `StickyAssignorTest`). The cases are in `assignor-sticky-core`
//! (`kafka_test::abstract_*cases`); parametrized Java tests are modules with one test per
//! parameter.

assignor_sticky_core::abstract_sticky_assignor_test!(assignor_sticky_core::Flavor::Sticky);
