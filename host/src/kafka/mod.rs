//! Kafka wire protocol. (to be written)
