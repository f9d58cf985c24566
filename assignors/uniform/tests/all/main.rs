//! The integration tests of `uniform`, as one test binary (one link instead of one per file);
//! each module is one former file under `tests/`, its tests named `module::test`.

mod properties;
mod uniform_assignor_test;
