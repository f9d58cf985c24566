//! Compile-time behaviour of `#[assignor]`: correct uses compile (and run natively), and every
//! misuse fails with the message in the matching `.stderr` file. Regenerate the messages with
//! `TRYBUILD=overwrite cargo test -p assignor-sdk --test ui` and read each one.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass_*.rs");
    t.compile_fail("tests/ui/fail_*.rs");
}
