//! The fixture's `--mode` names: one enum and its table, imported by every module that acts on a
//! mode (a leaf, so `modes` and `catalogue_modes` never import each other).

/// One `--mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    InvalidToolName,
    DunderToolName,
    ShadowBuiltin,
    BadSchema,
    InjectionDescription,
    BigSchema,
    RepeatCursor,
    EndlessPages,
    JunkStdout,
    EarlyNotifications,
    PingBeforeCall,
    UnknownRequestBeforeCall,
    InitializeError,
    NoInitializeReply,
    IgnoreStdinEof,
    StderrPerRequest,
    InjectionSchema,
    NamelessTool,
    ProgressBeforeInitialize,
    PingWithCallId,
    NoPingReply,
    RejectInitialized,
    OversizedReply,
    StrictArguments,
    TamperedArtifact,
    MalformedEnvelope,
    UndecodableResult,
    UnansweredCall,
    CrossedIds,
    DuplicateTool,
    BadOutputSchema,
    ManyTools,
    HeavyTools,
    AnnotatedTools,
    ClosedSchema,
    FormattedArguments,
    Elicitation,
}

const MODES: [(Mode, &str); 37] = [
    (Mode::InvalidToolName, "invalid-tool-name"),
    (Mode::DunderToolName, "dunder-tool-name"),
    (Mode::ShadowBuiltin, "shadow-builtin"),
    (Mode::BadSchema, "bad-schema"),
    (Mode::InjectionDescription, "injection-description"),
    (Mode::BigSchema, "big-schema"),
    (Mode::RepeatCursor, "repeat-cursor"),
    (Mode::EndlessPages, "endless-pages"),
    (Mode::JunkStdout, "junk-stdout"),
    (Mode::EarlyNotifications, "early-notifications"),
    (Mode::PingBeforeCall, "ping-before-call"),
    (Mode::UnknownRequestBeforeCall, "unknown-request-before-call"),
    (Mode::InitializeError, "initialize-error"),
    (Mode::NoInitializeReply, "no-initialize-reply"),
    (Mode::IgnoreStdinEof, "ignore-stdin-eof"),
    (Mode::StderrPerRequest, "stderr-per-request"),
    (Mode::InjectionSchema, "injection-schema"),
    (Mode::NamelessTool, "nameless-tool"),
    (Mode::ProgressBeforeInitialize, "progress-before-initialize"),
    (Mode::PingWithCallId, "ping-with-call-id"),
    (Mode::NoPingReply, "no-ping-reply"),
    (Mode::RejectInitialized, "reject-initialized"),
    (Mode::OversizedReply, "oversized-reply"),
    (Mode::StrictArguments, "strict-arguments"),
    (Mode::TamperedArtifact, "tampered-artifact"),
    (Mode::MalformedEnvelope, "malformed-envelope"),
    (Mode::UndecodableResult, "undecodable-result"),
    (Mode::UnansweredCall, "unanswered-call"),
    (Mode::CrossedIds, "crossed-ids"),
    (Mode::DuplicateTool, "duplicate-tool"),
    (Mode::BadOutputSchema, "bad-output-schema"),
    (Mode::ManyTools, "many-tools"),
    (Mode::HeavyTools, "heavy-tools"),
    (Mode::AnnotatedTools, "annotated-tools"),
    (Mode::ClosedSchema, "closed-schema"),
    (Mode::FormattedArguments, "formatted-arguments"),
    (Mode::Elicitation, "elicitation"),
];

impl Mode {
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        MODES.iter().find(|(_, known)| *known == name).map(|(mode, _)| *mode)
    }

    pub(crate) fn names() -> Vec<&'static str> {
        MODES.iter().map(|(_, name)| *name).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_has_a_distinct_name() {
        for (mode, name) in MODES {
            assert_eq!(Mode::from_name(name), Some(mode));
        }
        let mut names = Mode::names();
        names.dedup();
        assert_eq!(names.len(), MODES.len());
    }
}
