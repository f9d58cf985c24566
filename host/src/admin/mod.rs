//! HTTP admin API (axum) and the Prometheus metrics endpoint. (to be written)
