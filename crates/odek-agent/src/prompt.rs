//! System prompt composition (spec `loop-and-sessions.md` §8).
