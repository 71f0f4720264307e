//! Runnable kubeward programs; each lives in `src/bin/`.
