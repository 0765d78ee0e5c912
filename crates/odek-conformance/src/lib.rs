//! The conformance checks behind `odek ext check` for extension servers over stdio or Streamable
//! HTTP: start (or reach) a server the way odek does, drive it through the handshake, its tool
//! list, a call of each planned tool, a burst of concurrent calls and a shutdown, and judge what
//! it did against the `odek-extension/v1` contract and odek's client rules. Every rule it
//! applies is the client's own, taken from `odek-mcp` — the spawn, the wire frames, the bounded
//! reader, the HTTP connection, the listing and its caps, the name rules, the registration
//! checks and the result pipeline — so the verdict is what odek would actually do with the
//! server. Checks that only mean something for a process (stdout hygiene, exit on stdin close)
//! are reported as not applicable over HTTP, which has checks of its own (the session id,
//! readable and bounded answers).
//!
//! Two phases: `observe` runs the server once (through the recording session of `probe`, over
//! either transport) and records what it did; `checks` turns that into one [`CheckResult`] per
//! check, one function each; [`run_conformance`] does both and returns the [`Report`], whose
//! text and JSON forms are in `report`. Which tools are called is planned before the first call
//! (`observe`), never one annotated `destructiveHint: true`. Not here: config loading, the
//! environment and URL rules and the exit code (the binary's). Start at [`run_conformance`].

mod arguments;
mod checks;
mod observe;
mod options;
mod probe;
mod report;

/// Arguments for a tool, derived from its input schema (what a check calls it with).
pub use arguments::arguments_from_schema;
/// One check's verdict, its group, reason and evidence.
pub use checks::CheckResult;
/// pass, warn, fail or skip.
pub use checks::Status;
/// What the check does with one listed tool, and why.
pub use observe::PlannedCall;
/// Which listed tools may be called (`--calls`).
pub use options::CallPolicy;
/// What to check and with which limits.
pub use options::CheckOptions;
/// Concurrent calls of the load check, by default (8).
pub use options::DEFAULT_CONCURRENCY;
/// How the server is reached: a command over stdio, or a URL over HTTP.
pub use options::Target;
/// Checks per status.
pub use report::Counts;
/// Everything `odek ext check` prints, as text or JSON.
pub use report::Report;
/// pass, warn or fail: the outcome of a whole run.
pub use report::Verdict;
/// The call plan as `odek ext check` prints it before the first call.
pub use report::render_plan;

/// Observes and judges: the whole check run. `announce` sees the call plan before the first
/// call is made (the binary prints it).
pub async fn run_conformance(options: &CheckOptions, announce: &(dyn Fn(&[PlannedCall]) + Sync)) -> Report {
    let observations = observe::observe(options, announce).await;
    let results = checks::judge(&observations, options);
    Report::new(options, results, observations.restarts).with_plan(observations.plan)
}
