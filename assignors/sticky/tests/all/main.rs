//! The integration tests of `sticky`, as one test binary (one link instead of one per file);
//! each module is one former file under `tests/`, its tests named `module::test`. The large
//! case (`large_group`) is `#[ignore]`d and runs optimised in `tests/run` (`--ignored`).

mod abstract_sticky_assignor_test;
mod balancing_cycles;
mod kafka_oracle;
mod large_group;
mod previous_assignment;
mod properties;
mod sticky_assignor_test;
