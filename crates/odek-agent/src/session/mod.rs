//! Sessions (spec `loop-and-sessions.md` §10).
