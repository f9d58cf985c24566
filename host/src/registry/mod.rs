//! Module registry. (to be written)
