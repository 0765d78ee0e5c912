//! The report of one check run: every [`CheckResult`], the call plan, the notes, and the
//! verdict; as text for a terminal (one line per check, evidence indented below, the plan before
//! the calls, a verdict line last) and as one JSON object for CI. Every text from the server
//! reaches the terminal form through odek's terminal-safe text
//! ([`odek_contract::terminal_text`]). The binary chooses the exit code of a [`Verdict`].

use odek_contract::redaction::redact;
use odek_contract::terminal_text::{Layout, sanitise_for_terminal};
use serde::Serialize;

use crate::checks::{CheckResult, Status};
use crate::observe::PlannedCall;
use crate::options::{CallPolicy, CheckOptions, Target};
use crate::probe::cut;

/// Longest reason kept, in bytes (4 KiB): room for a server's whole error message, but not for
/// whatever a hostile server writes.
pub const MAX_REASON_BYTES: usize = 4096;

/// The overall outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Every check passed (or did not apply).
    Pass,
    /// No check failed, some warned.
    Warn,
    /// At least one check failed.
    Fail,
}

/// Checks per status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub pass: usize,
    pub warn: usize,
    pub fail: usize,
    pub skip: usize,
}

/// Everything `odek ext check` prints.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub server: String,
    /// `stdio`, `streamable-http` or `http+sse`.
    pub transport: &'static str,
    /// stdio: the command line, redacted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// HTTP: the URL (never with credentials: odek refuses those), redacted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// HTTP: the names of the headers sent with every request (`Authorization` for a bearer
    /// token), never their values.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<String>,
    pub verdict: Verdict,
    pub counts: Counts,
    pub checks: Vec<CheckResult>,
    /// Which tools could be called (`--calls`).
    pub call_policy: CallPolicy,
    /// Every listed tool, whether it was called and why, in list order.
    pub plan: Vec<PlannedCall>,
    /// What happened besides the checks (restarts after a step killed the connection).
    pub notes: Vec<String>,
}

impl Report {
    /// The report of these results. Every text that can carry a secret (the command line or
    /// URL, and reasons and evidence quoting the server) passes through odek's redaction, and of
    /// headers only the names are kept, so the report is safe to keep as a CI log. Reasons are
    /// cut to [`MAX_REASON_BYTES`].
    pub fn new(options: &CheckOptions, mut checks: Vec<CheckResult>, notes: Vec<String>) -> Report {
        for check in &mut checks {
            check.reason = cut(&redact(&check.reason), MAX_REASON_BYTES);
            check.evidence = check.evidence.as_deref().map(|evidence| redact(evidence).into_owned());
        }
        let mut counts = Counts::default();
        for result in &checks {
            match result.status {
                Status::Pass => counts.pass += 1,
                Status::Warn => counts.warn += 1,
                Status::Fail => counts.fail += 1,
                Status::Skip => counts.skip += 1,
            }
        }
        let verdict = if counts.fail > 0 {
            Verdict::Fail
        } else if counts.warn > 0 {
            Verdict::Warn
        } else {
            Verdict::Pass
        };
        let (command, url, headers) = match &options.target {
            Target::Stdio { command, args, .. } => {
                let command = std::iter::once(command).chain(args).map(|part| redact(part).into_owned()).collect();
                (command, None, Vec::new())
            }
            Target::Http { endpoint, token, .. } => {
                let mut headers: Vec<String> = endpoint.headers.iter().map(|(name, _)| name.clone()).collect();
                if token.is_some() {
                    headers.push("Authorization".to_owned());
                }
                (Vec::new(), Some(redact(endpoint.url.as_str()).into_owned()), headers)
            }
        };
        Report {
            server: options.server.clone(),
            transport: options.target.transport(),
            command,
            url,
            headers,
            verdict,
            counts,
            checks,
            call_policy: options.calls,
            plan: Vec::new(),
            notes,
        }
    }

    /// The report with its call plan (tool names and reasons redacted like reasons).
    pub fn with_plan(mut self, plan: Vec<PlannedCall>) -> Report {
        self.plan = plan
            .into_iter()
            .map(|planned| PlannedCall {
                tool: redact(&planned.tool).into_owned(),
                call: planned.call,
                reason: cut(&redact(&planned.reason), MAX_REASON_BYTES),
            })
            .collect();
        self
    }

    /// The verdict line, e.g. `verdict: fail (2 failed, 1 warning, 20 passed, 3 skipped)`.
    pub fn verdict_line(&self) -> String {
        let Counts { pass, warn, fail, skip } = self.counts;
        let word = match self.verdict {
            Verdict::Pass => "pass",
            Verdict::Warn => "pass with warnings",
            Verdict::Fail => "fail",
        };
        format!("verdict: {word} ({fail} failed, {warn} warning(s), {pass} passed, {skip} skipped)")
    }

    /// What was checked: the command line, or the URL with its transport and header names.
    fn target(&self) -> String {
        let Some(url) = &self.url else { return self.command.join(" ") };
        let transport = if self.transport == "http+sse" { "HTTP+SSE" } else { "Streamable HTTP" };
        if self.headers.is_empty() {
            format!("{url} ({transport})")
        } else {
            format!("{url} ({transport}; headers: {})", self.headers.join(", "))
        }
    }

    /// The terminal form: a header, one line per check grouped by phase with the call plan
    /// before the calls, the notes, the verdict.
    pub fn render_text(&self) -> String {
        let mut out = format!(
            "odek ext check: server {:?}: {}\n",
            self.server,
            sanitise_for_terminal(&self.target(), Layout::Lines)
        );
        let mut group = "";
        let mut plan_shown = false;
        for result in &self.checks {
            if !plan_shown && matches!(result.group, "calls" | "load" | "shutdown") {
                out.push_str(&render_plan(self.call_policy, &self.plan));
                plan_shown = true;
            }
            if result.group != group {
                group = result.group;
                out.push_str(group);
                out.push('\n');
            }
            let tool = result.tool.as_deref().map_or_else(String::new, |tool| format!(" [{}]", one_line(tool)));
            out.push_str(&format!(
                "  {:<4}  {}{tool}: {}\n",
                result.status.as_str(),
                result.check,
                one_line(&result.reason)
            ));
            if let Some(evidence) = &result.evidence {
                out.push_str(&format!("        evidence: {}\n", one_line(evidence)));
            }
        }
        if !plan_shown {
            out.push_str(&render_plan(self.call_policy, &self.plan));
        }
        for note in &self.notes {
            out.push_str(&format!("note: {}\n", sanitise_for_terminal(note, Layout::Lines)));
        }
        out.push_str(&self.verdict_line());
        out.push('\n');
        out
    }
}

/// The call plan for a terminal: `plan (--calls <policy>): <n> of <m> tool(s) called`, then
/// `  call  <tool>: <reason>` or `  skip  <tool>: <reason>` per tool, redacted and one line each;
/// nothing when no tool was listed. The report shows it before the calls, and `odek ext check`
/// prints it on stderr before making them.
pub fn render_plan(call_policy: CallPolicy, plan: &[PlannedCall]) -> String {
    if plan.is_empty() {
        return String::new();
    }
    let called = plan.iter().filter(|planned| planned.call).count();
    let mut out = format!("plan (--calls {}): {called} of {} tool(s) called\n", call_policy.as_str(), plan.len());
    for planned in plan {
        let word = if planned.call { "call" } else { "skip" };
        let reason = cut(&redact(&planned.reason), MAX_REASON_BYTES);
        out.push_str(&format!("  {word}  {}: {}\n", one_line(&redact(&planned.tool)), one_line(&reason)));
    }
    out
}

/// Server text on one terminal line: line feeds shown as `\n`, then terminal-safe as one line.
fn one_line(text: &str) -> String {
    sanitise_for_terminal(&text.replace('\n', "\\n"), Layout::Line).into_owned()
}

#[cfg(test)]
mod tests {
    use odek_mcp::remote::check_endpoint;
    use odek_mcp::server_config::SecretValue;

    use super::*;

    fn result(check: &'static str, status: Status) -> CheckResult {
        CheckResult { group: "tools", check, tool: None, status, reason: "why".into(), evidence: None }
    }

    fn options() -> CheckOptions {
        CheckOptions {
            timeout: std::time::Duration::from_secs(1),
            max_response_bytes: 1024,
            max_result_chars: 1000,
            concurrency: 1,
            ..CheckOptions::new(
                "srv".into(),
                Target::Stdio { command: "/bin/srv".into(), args: vec!["--x".into()], env: Default::default() },
            )
        }
    }

    #[test]
    fn verdicts() {
        let verdict = |statuses: &[Status]| {
            let checks = statuses.iter().map(|status| result("c", *status)).collect();
            Report::new(&options(), checks, Vec::new()).verdict
        };
        assert_eq!(verdict(&[Status::Pass, Status::Skip]), Verdict::Pass);
        assert_eq!(verdict(&[Status::Pass, Status::Warn]), Verdict::Warn);
        assert_eq!(verdict(&[Status::Warn, Status::Fail]), Verdict::Fail);
    }

    #[test]
    fn text_report_groups_checks_and_ends_with_the_verdict() {
        let mut failing = result("tool_names_valid", Status::Fail);
        failing.evidence = Some("a\nb\u{1b}[31m".into());
        let report = Report::new(
            &options(),
            vec![result("tools_list_answers", Status::Pass), failing],
            vec!["restarted".into()],
        );
        assert_eq!(
            report.render_text(),
            "odek ext check: server \"srv\": /bin/srv --x\n\
             tools\n  \
             pass  tools_list_answers: why\n  \
             fail  tool_names_valid: why\n        \
             evidence: a\\nb\n\
             note: restarted\n\
             verdict: fail (1 failed, 0 warning(s), 1 passed, 0 skipped)\n"
        );
    }

    /// Before: a U+202E in the command, a tool name or evidence reached the terminal unchanged,
    /// and only the ESC of an escape sequence was replaced.
    #[test]
    fn server_text_in_the_report_never_reaches_the_terminal_raw_red() {
        let hostile = "\u{202E}evil\u{1b}[31m\u{1b}]0;title\u{7}\u{1b}]8;;http://x\u{1b}\\link";
        let mut options = options();
        options.target =
            Target::Stdio { command: "/bin/srv".into(), args: vec![hostile.into()], env: Default::default() };
        let mut failing = result("tool_names_valid", Status::Fail);
        failing.tool = Some(hostile.into());
        failing.reason = hostile.into();
        failing.evidence = Some(hostile.into());
        let plan = vec![PlannedCall { tool: hostile.into(), call: false, reason: hostile.into() }];
        let report = Report::new(&options, vec![failing], vec![hostile.into()]).with_plan(plan);
        let text = report.render_text();
        assert!(!text.contains(['\u{1b}', '\u{7}', '\u{202E}']), "{text:?}");
        assert!(text.contains("/bin/srv \u{FFFD}evillink\n"), "{text:?}");
        assert!(text.contains("  fail  tool_names_valid [\u{FFFD}evillink]: \u{FFFD}evillink\n"), "{text:?}");
        assert!(text.contains("  skip  \u{FFFD}evillink: \u{FFFD}evillink\n"), "{text:?}");
    }

    #[test]
    fn the_plan_is_shown_before_the_calls() {
        let mut calls = result("call_answers", Status::Pass);
        calls.group = "calls";
        let plan = vec![
            PlannedCall { tool: "get".into(), call: true, reason: "annotated readOnlyHint: true".into() },
            PlannedCall { tool: "rm".into(), call: false, reason: "annotated destructiveHint: true".into() },
        ];
        let mut read_only = options();
        read_only.calls = CallPolicy::ReadOnly;
        let report = Report::new(&read_only, vec![result("tools_list_answers", Status::Pass), calls], Vec::new())
            .with_plan(plan);
        assert_eq!(
            report.render_text(),
            "odek ext check: server \"srv\": /bin/srv --x\n\
             tools\n  \
             pass  tools_list_answers: why\n\
             plan (--calls read-only): 1 of 2 tool(s) called\n  \
             call  get: annotated readOnlyHint: true\n  \
             skip  rm: annotated destructiveHint: true\n\
             calls\n  \
             pass  call_answers: why\n\
             verdict: pass (0 failed, 0 warning(s), 2 passed, 0 skipped)\n"
        );
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["call_policy"], "read-only");
        assert_eq!(
            json["plan"][1],
            serde_json::json!({"tool": "rm", "call": false, "reason": "annotated destructiveHint: true"})
        );
    }

    #[test]
    fn reasons_are_kept_whole_up_to_a_generous_cap() {
        let mut long = result("call_answers", Status::Pass);
        long.reason = format!("{}\nsecond line", "r".repeat(300));
        let report = Report::new(&options(), vec![long.clone()], Vec::new());
        assert_eq!(report.checks[0].reason, long.reason, "not cut at 100 characters");
        assert!(report.render_text().contains("\\nsecond line\n"), "one line per check");
        long.reason = "r".repeat(MAX_REASON_BYTES * 2);
        let report = Report::new(&options(), vec![long], Vec::new());
        assert_eq!(report.checks[0].reason.len(), MAX_REASON_BYTES + '\u{2026}'.len_utf8());
    }

    #[test]
    fn secrets_in_the_command_line_and_evidence_are_redacted_red() {
        let token = format!("ghp_{}", "a".repeat(36));
        let mut leaky = options();
        leaky.target = Target::Stdio {
            command: "/bin/srv".into(),
            args: vec![format!("--token={token}")],
            env: Default::default(),
        };
        let mut failing = result("stdout_only_json_rpc", Status::Fail);
        failing.reason = format!("saw {token}");
        failing.evidence = Some(format!("debug: token {token}"));
        let report = Report::new(&leaky, vec![failing], Vec::new());
        let json = serde_json::to_string(&report).unwrap();
        assert!(!json.contains(&token), "{json}");
        assert!(!report.render_text().contains(&token));
        assert!(report.render_text().contains("[REDACTED]"));
    }

    /// A remote server's report names the URL and its headers, never a header's value or the
    /// token, and has no command line.
    #[test]
    fn a_remote_report_shows_header_names_never_values_red() {
        let headers = [("X-Team".to_owned(), SecretValue::new("team-secret-value-42"))].into_iter().collect();
        let endpoint = check_endpoint("web", "http://127.0.0.1:8/mcp", &headers, "WEB_TOKEN", false).unwrap();
        let token = Some(SecretValue::new("token-value-never-shown-7"));
        let mut remote = options();
        remote.target = Target::Http { endpoint, token, legacy_sse: false };
        let report = Report::new(&remote, vec![result("tools_list_answers", Status::Pass)], Vec::new());
        let text = report.render_text();
        assert!(
            text.starts_with(
                "odek ext check: server \"srv\": http://127.0.0.1:8/mcp (Streamable HTTP; headers: X-Team, Authorization)\n"
            ),
            "{text}"
        );
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["transport"], "streamable-http");
        assert_eq!(json["url"], "http://127.0.0.1:8/mcp");
        assert_eq!(json["headers"], serde_json::json!(["X-Team", "Authorization"]));
        assert!(json.get("command").is_none(), "{json}");
        for shown in [text, json.to_string()] {
            assert!(!shown.contains("team-secret-value-42") && !shown.contains("token-value-never-shown-7"), "{shown}");
        }
    }
}
