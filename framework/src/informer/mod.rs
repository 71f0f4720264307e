//! Informers: list and watch a resource into a cache and tell handlers about every change.
