//! Reference semantics of the linear-algebra ops (in progress).
