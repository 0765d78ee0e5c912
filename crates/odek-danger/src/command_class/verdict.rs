//! The verdict on one part of a command line: its class and reason, and the facts the pipeline
//! rules need (does it download, does it run code, does it read code from standard input).
//! Parts combine by [`Verdict::raise`]: the higher class wins, the facts accumulate.

use crate::class::DangerClass;

use DangerClass::Safe;

/// One part's class and reason, with the facts the pipeline rules need.
#[derive(Debug, Clone)]
pub(super) struct Verdict {
    pub(super) class: DangerClass,
    pub(super) reason: String,
    /// Downloads from the network to its output (`curl`, `wget`, …).
    pub(super) fetches: bool,
    /// An interpreter that reads the code it runs from standard input.
    pub(super) reads_code_from_stdin: bool,
    /// Runs the code it is given (interpreters, `eval`, `source`).
    pub(super) runs_code: bool,
}

impl Verdict {
    pub(super) fn new(class: DangerClass, reason: impl Into<String>) -> Verdict {
        Verdict { class, reason: reason.into(), fetches: false, reads_code_from_stdin: false, runs_code: false }
    }

    pub(super) fn nothing() -> Verdict {
        Verdict::new(Safe, "only reads")
    }

    pub(super) fn fetching(mut self) -> Verdict {
        self.fetches = true;
        self
    }

    pub(super) fn running_code(mut self) -> Verdict {
        self.runs_code = true;
        self
    }

    pub(super) fn reading_code_from_stdin(mut self) -> Verdict {
        self.runs_code = true;
        self.reads_code_from_stdin = true;
        self
    }

    /// Keeps the higher class (and its reason); the flags accumulate.
    pub(super) fn raise(&mut self, other: Verdict) {
        if other.class.severity() > self.class.severity() {
            self.class = other.class;
            self.reason = other.reason;
        }
        self.fetches |= other.fetches;
        self.reads_code_from_stdin |= other.reads_code_from_stdin;
        self.runs_code |= other.runs_code;
    }

    pub(super) fn at_least(mut self, class: DangerClass, reason: impl Into<String>) -> Verdict {
        self.raise(Verdict::new(class, reason));
        self
    }
}
