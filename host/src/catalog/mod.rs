//! Topics the host serves. (to be written)
