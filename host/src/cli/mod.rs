//! The command line's client side (to be written).
