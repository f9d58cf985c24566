//! The tokio side of the coordinator. (to be written)
