//! The REPL's slash commands: which input is one ([`parse`]) and what the read-only ones print
//! ([`HELP`], [`tools_text`], [`usage_text`], [`session_text`]). An input whose first character
//! is `/` is always a command, so a mistyped one never reaches the model; `//` at the start
//! sends the rest, starting with one `/`, as a task.

use odek::{BudgetLimits, Catalogue, Spent};
use odek_contract::quoting::quote;

use crate::terminal::one_line;

/// What `/help` prints.
pub const HELP: &str = "\
/help          this list
/tools         the built-in tools and the MCP servers with their status
/plan          the current plan
/usage         tokens in and out, the estimated cost and what is left of each budget
/model [<id>]  show the model, or use <id> from the next turn on
/session       the session's id, turns and file
/new           start a fresh session (the MCP servers keep running)
/exit          leave (so do Ctrl-D and Ctrl-C twice at the prompt)
A line ending in \\ continues on the next; //text sends /text as a task.";

/// Longest name shown in `/tools` (characters).
const NAME_CHARS: usize = 80;

/// A slash command.
#[derive(Debug, PartialEq, Eq)]
pub enum Slash<'a> {
    Help,
    Tools,
    Plan,
    Usage,
    Model(Option<&'a str>),
    Session,
    New,
    Exit,
    /// Not a command the REPL knows (the word as typed).
    Unknown(&'a str),
    /// A known command given an argument it does not take.
    Extra(&'a str),
}

/// What an input is: a command, or the task to send (`//text` sends `/text`).
#[derive(Debug, PartialEq, Eq)]
pub enum Entered<'a> {
    Command(Slash<'a>),
    Task(&'a str),
}

pub fn parse(input: &str) -> Entered<'_> {
    let trimmed = input.trim();
    if let Some(task) = trimmed.strip_prefix("//") {
        return Entered::Task(&trimmed[trimmed.len() - task.len() - 1..]);
    }
    if !trimmed.starts_with('/') {
        return Entered::Task(input);
    }
    let (word, rest) = match trimmed.split_once(char::is_whitespace) {
        Some((word, rest)) => (word, rest.trim()),
        None => (trimmed, ""),
    };
    let command = match word {
        "/help" => Slash::Help,
        "/tools" => Slash::Tools,
        "/plan" => Slash::Plan,
        "/usage" => Slash::Usage,
        "/model" => return Entered::Command(Slash::Model((!rest.is_empty()).then_some(rest))),
        "/session" => Slash::Session,
        "/new" => Slash::New,
        "/exit" | "/quit" => Slash::Exit,
        unknown => return Entered::Command(Slash::Unknown(unknown)),
    };
    Entered::Command(if rest.is_empty() { command } else { Slash::Extra(word) })
}

/// The error line of an unknown command (without `odek: `).
pub fn unknown_text(word: &str) -> String {
    format!("unknown command {} (type /help for the list; nothing was sent)", quote(&one_line(word, NAME_CHARS)))
}

/// `/tools`.
pub fn tools_text(catalogue: &Catalogue) -> String {
    let builtins: Vec<String> = catalogue.builtins.iter().map(|name| one_line(name, NAME_CHARS)).collect();
    let mut text = format!("built-in: {}\n", if builtins.is_empty() { "none".to_owned() } else { builtins.join(", ") });
    match &catalogue.servers {
        None => text.push_str("MCP servers: not started\n"),
        Some(servers) if servers.is_empty() => text.push_str("MCP servers: none configured\n"),
        Some(servers) => {
            text.push_str("MCP servers:\n");
            for server in servers {
                let name = one_line(&server.name, NAME_CHARS);
                let status = if server.disabled {
                    "disabled".to_owned()
                } else {
                    let tools: Vec<String> =
                        server.tools.iter().map(|tool| one_line(tool.as_str(), NAME_CHARS)).collect();
                    let restarts = match server.restarts {
                        0 => String::new(),
                        n => format!(", restarted {n} time(s)"),
                    };
                    let resources = if server.resources { ", resources" } else { "" };
                    format!("running, {} tool(s){restarts}{resources}: {}", tools.len(), tools.join(", "))
                };
                text.push_str(&format!("  {name}: {status}\n"));
            }
        }
    }
    text
}

/// `/usage`: what the REPL's turns spent (what its token, cost and tool-call budgets count),
/// the estimated cost with the configured prices, and what is left of each budget.
pub fn usage_text(spent: Spent, limits: &BudgetLimits) -> String {
    let usage = spent.usage;
    let mut text =
        format!("tokens: {} in / {} out ({} turn(s))\n", usage.input_tokens, usage.output_tokens, spent.turns);
    let priced = limits.input_price_per_million > 0.0 || limits.output_price_per_million > 0.0;
    if priced {
        text.push_str(&format!("estimated cost: ${:.6}\n", limits.cost_usd(usage)));
    } else {
        text.push_str("estimated cost: no prices configured\n");
    }
    let mut budgets = Vec::new();
    let count = |name: &str, used: u64, limit: u64| {
        format!("  {name}: {used} of {limit} used, {} left", limit.saturating_sub(used))
    };
    if limits.max_input_tokens > 0 {
        budgets.push(count("input tokens", usage.input_tokens, limits.max_input_tokens));
    }
    if limits.max_output_tokens > 0 {
        budgets.push(count("output tokens", usage.output_tokens, limits.max_output_tokens));
    }
    if limits.max_tool_calls > 0 {
        budgets.push(count("tool calls", spent.tool_calls, limits.max_tool_calls));
    }
    if limits.max_cost_usd > 0.0 {
        if limits.cost_enforced() {
            let cost = limits.cost_usd(usage);
            budgets.push(format!(
                "  cost: ${cost:.6} of ${:.6} used, ${:.6} left",
                limits.max_cost_usd,
                (limits.max_cost_usd - cost).max(0.0)
            ));
        } else {
            budgets.push(format!("  cost: ${:.6} (not enforced: no prices configured)", limits.max_cost_usd));
        }
    }
    if limits.max_runtime_seconds > 0 {
        budgets.push(format!("  runtime: {} s per turn", limits.max_runtime_seconds));
    }
    if budgets.is_empty() {
        text.push_str("budgets: none configured\n");
    } else {
        text.push_str("budgets:\n");
        for budget in budgets {
            text.push_str(&budget);
            text.push('\n');
        }
    }
    text
}

/// `/session`.
pub fn session_text(id: &str, turns: usize, path: &str) -> String {
    format!("session {id}\nturns: {turns}\nfile: {path}\n")
}

#[cfg(test)]
mod tests {
    use odek::Usage;

    use super::*;

    #[test]
    fn commands_and_tasks() {
        assert_eq!(parse("/help"), Entered::Command(Slash::Help));
        assert_eq!(parse("  /usage  "), Entered::Command(Slash::Usage));
        assert_eq!(parse("/model gpt-x"), Entered::Command(Slash::Model(Some("gpt-x"))));
        assert_eq!(parse("/model"), Entered::Command(Slash::Model(None)));
        assert_eq!(parse("/new now"), Entered::Command(Slash::Extra("/new")));
        assert_eq!(parse("/etc/passwd?"), Entered::Command(Slash::Unknown("/etc/passwd?")));
        assert_eq!(parse("//etc/passwd?"), Entered::Task("/etc/passwd?"));
        assert_eq!(parse("what is /tmp"), Entered::Task("what is /tmp"));
    }

    #[test]
    fn an_unknown_command_is_named_terminal_safe_red() {
        assert_eq!(
            unknown_text("/fo\u{1b}[2Jo"),
            "unknown command \"/foo\" (type /help for the list; nothing was sent)"
        );
    }

    #[test]
    fn usage_with_and_without_prices_and_budgets() {
        let spent = Spent { turns: 2, usage: Usage::new(1500, 40), tool_calls: 3 };
        let none = usage_text(spent, &BudgetLimits::default());
        assert_eq!(
            none,
            "tokens: 1500 in / 40 out (2 turn(s))\nestimated cost: no prices configured\nbudgets: none configured\n"
        );
        let limits = BudgetLimits {
            max_input_tokens: 2000,
            max_tool_calls: 5,
            max_cost_usd: 1.0,
            input_price_per_million: 2.0,
            output_price_per_million: 10.0,
            ..BudgetLimits::default()
        };
        let priced = usage_text(spent, &limits);
        assert!(priced.contains("estimated cost: $0.003400\n"), "{priced}");
        assert!(priced.contains("  input tokens: 1500 of 2000 used, 500 left\n"), "{priced}");
        assert!(priced.contains("  tool calls: 3 of 5 used, 2 left\n"), "{priced}");
        assert!(priced.contains("  cost: $0.003400 of $1.000000 used, $0.996600 left\n"), "{priced}");
    }
}
