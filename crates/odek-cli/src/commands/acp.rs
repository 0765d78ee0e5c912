//! `odek acp`: the flags of `odek run` resolved the same way, then the ACP face on stdio
//! (`odek_acp`) over a session host. stdout is the protocol's; everything else goes to stderr.

use odek::host::HostSettings;

use crate::cli::RunArgs;
use crate::commands::run::overrides;
use crate::outcome::CommandError;

pub async fn run(args: &RunArgs) -> Result<(), CommandError> {
    refuse_run_only_flags(args, "odek acp")?;
    let settings = HostSettings::from_process(overrides(&args.common, Some(args))?)?;
    Ok(odek_acp::serve(settings).await?)
}

/// The flags of `odek run` that have no meaning for a face (`face`) whose tasks come from its
/// clients.
pub(crate) fn refuse_run_only_flags(args: &RunArgs, face: &str) -> Result<(), CommandError> {
    let common = &args.common;
    let refused = [
        (!common.task.is_empty(), "a task (its clients send the tasks)"),
        (args.session, "--session (every session is saved)"),
        (common.json, "--json (stdout carries the protocol)"),
        (common.events_jsonl.as_deref() == Some("-"), "--events-jsonl - (stdout carries the protocol)"),
        (!common.ctx.is_empty(), "--ctx"),
        (!common.external_refs.is_empty(), "--external-ref"),
        (common.output_file.is_some(), "--output-file"),
        (args.system.is_some(), "--system"),
    ];
    match refused.iter().find(|(given, _)| *given) {
        Some((_, what)) => Err(CommandError::Fatal(format!("{face} does not take {what}"))),
        None => Ok(()),
    }
}
