//! Test harness for black-box tests.
