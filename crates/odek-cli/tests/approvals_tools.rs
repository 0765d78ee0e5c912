//! Per-tool approval (spec `config.md` §13.2) through `CliToolApprover`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns too.

mod approvals_support;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;

use approvals_support::{Fixture, ScriptedConsole, global_server, persisted_keys, project_server, stdio_entry};
use odek::approvals::{
    ToolDecision, decision_for_key, tool_approval_card, tool_approval_key, tool_approval_prompt, tool_decision_prompt,
};
use odek::config::McpServerConfig;
use odek_mcp::approval::{ToolApproval, ToolApprovalRequest, ToolApprover};
use odek_mcp::server_config::ServerEntry;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const REQUIRED_READ_FILE: &str = "MCP tool \"read_file\" from server \"fs\" requires explicit approval\nset ODEK_APPROVE_MCP=1 to approve all tools from all project MCP servers, or run interactively";

fn request(description: &str, schema: Value) -> ToolApprovalRequest {
    ToolApprovalRequest {
        server: "fs".into(),
        tool: "read_file".into(),
        description: description.into(),
        input_schema: schema,
        relist: false,
    }
}

fn read_file() -> ToolApprovalRequest {
    request("Reads a file.", json!({"type": "object", "properties": {"path": {"type": "string"}}}))
}

fn servers() -> Vec<McpServerConfig> {
    vec![project_server("fs", stdio_entry("fs-mcp", &["--root", "/srv"]))]
}

#[test]
fn prompt_text_is_exact() {
    let canonical = r#"{"properties":{"path":{"type":"string"}},"type":"object"}"#;
    let digest = hex::encode(Sha256::digest(canonical.as_bytes()));
    assert_eq!(
        tool_approval_prompt(&read_file()),
        format!(
            "\nMCP server \"fs\" wants to register tool \"read_file\"\n  description: Reads a file.\n  schema: sha256:{} ({} bytes)\nApprove? [y/N] ",
            &digest[..16],
            canonical.len()
        )
    );
}

#[test]
fn prompt_description_is_sanitised_then_cut() {
    let prompt = tool_approval_prompt(&request("Reads \u{1b}[31ma\u{1b}[0m file\u{7}.\tTab\r\nNext", json!({})));
    assert!(prompt.contains("  description: Reads a file\u{fffd}.\tTab\r\nNext\n  schema: sha256:"), "{prompt:?}");

    let long = format!("{}\u{1b}[1m{}", "x".repeat(150), "é".repeat(100));
    let prompt = tool_approval_prompt(&request(&long, json!({})));
    let description = prompt.split("  description: ").nth(1).unwrap().split("\n  schema: ").next().unwrap();
    assert!(description.len() <= 200, "{}", description.len());
    assert!(description.ends_with("..."));
    assert_eq!(description, format!("{}{}...", "x".repeat(150), "é".repeat(23)));
}

#[test]
fn accepted_tool_is_persisted_and_approved_without_asking_next_time() {
    let fixture = Fixture::new();
    let console = ScriptedConsole::interactive(&[Some("y\n")]);
    let approver = fixture.approvals(console.clone()).tool_approver(&servers()).unwrap();
    assert_eq!(approver.approve_tool(&read_file()), ToolApproval::Approved);
    assert_eq!(console.prompts(), vec![tool_approval_prompt(&read_file())]);
    let request = read_file();
    let key = tool_approval_key(
        &fixture.cwd,
        "fs",
        &servers()[0].entry,
        &request.tool,
        &request.input_schema,
        &request.description,
    );
    assert_eq!(persisted_keys(&fixture.tool_approvals_path()), vec![key]);
    assert_eq!(fs::metadata(fixture.tool_approvals_path()).unwrap().permissions().mode() & 0o777, 0o600);

    let quiet = ScriptedConsole::non_interactive();
    let approver = fixture.approvals(quiet.clone()).tool_approver(&servers()).unwrap();
    assert_eq!(approver.approve_tool(&read_file()), ToolApproval::Approved);
    assert!(quiet.prompts().is_empty());
}

#[test]
fn declining_skips_the_tool_only() {
    for answer in [Some("n"), Some(""), None] {
        let fixture = Fixture::new();
        let console = ScriptedConsole::interactive(&[answer, Some("yes")]);
        let approver = fixture.approvals(console).tool_approver(&servers()).unwrap();
        assert_eq!(approver.approve_tool(&read_file()), ToolApproval::Declined, "{answer:?}");
        let other = ToolApprovalRequest { tool: "list_dir".into(), ..read_file() };
        assert_eq!(approver.approve_tool(&other), ToolApproval::Approved);
        assert_eq!(persisted_keys(&fixture.tool_approvals_path()).len(), 1);
    }
}

#[test]
fn a_on_a_single_tool_prompt_approves_that_tool() {
    // What an editor's "Allow" answers (odek::host's console): "this and the rest" of one.
    let fixture = Fixture::new();
    let approver = fixture.approvals(ScriptedConsole::interactive(&[Some("a")])).tool_approver(&servers()).unwrap();
    assert_eq!(approver.approve_tool(&read_file()), ToolApproval::Approved);
    assert_eq!(persisted_keys(&fixture.tool_approvals_path()).len(), 1);
}

#[test]
fn without_a_terminal_the_tool_is_required_at_startup_and_declined_on_relist() {
    let fixture = Fixture::new();
    let approver = fixture.approvals(ScriptedConsole::non_interactive()).tool_approver(&servers()).unwrap();
    assert_eq!(approver.approve_tool(&read_file()), ToolApproval::Required(REQUIRED_READ_FILE.to_owned()));
    let relist = ToolApprovalRequest { relist: true, ..read_file() };
    assert_eq!(approver.approve_tool(&relist), ToolApproval::Declined);
    assert!(!fixture.tool_approvals_path().exists());
}

#[test]
fn relist_at_a_terminal_asks_with_the_same_rules() {
    let fixture = Fixture::new();
    let console = ScriptedConsole::interactive(&[Some("y"), Some("n")]);
    let approver = fixture.approvals(console.clone()).tool_approver(&servers()).unwrap();
    let relist = ToolApprovalRequest { relist: true, ..read_file() };
    assert_eq!(approver.approve_tool(&relist), ToolApproval::Approved);
    let changed = ToolApprovalRequest { description: "Reads a file. Also uploads it.".into(), ..relist };
    assert_eq!(approver.approve_tool(&changed), ToolApproval::Declined);
    assert_eq!(console.prompts().len(), 2);
}

#[test]
fn changed_schema_or_description_asks_again() {
    let fixture = Fixture::new();
    let approver = fixture.approvals(ScriptedConsole::interactive(&[Some("y")])).tool_approver(&servers()).unwrap();
    assert_eq!(approver.approve_tool(&read_file()), ToolApproval::Approved);

    let approver = fixture.approvals(ScriptedConsole::non_interactive()).tool_approver(&servers()).unwrap();
    let reordered = request("Reads a file.", json!({"properties": {"path": {"type": "string"}}, "type": "object"}));
    assert_eq!(approver.approve_tool(&reordered), ToolApproval::Approved, "key order is canonicalised");
    let new_schema = request("Reads a file.", json!({"type": "object", "properties": {"path": {"type": "integer"}}}));
    assert!(matches!(approver.approve_tool(&new_schema), ToolApproval::Required(_)));
    let new_description = request("Reads a file!", read_file().input_schema);
    assert!(matches!(approver.approve_tool(&new_description), ToolApproval::Required(_)));

    let changed_server = vec![project_server("fs", stdio_entry("fs-mcp", &["--root", "/"]))];
    let approver = fixture.approvals(ScriptedConsole::non_interactive()).tool_approver(&changed_server).unwrap();
    assert!(matches!(approver.approve_tool(&read_file()), ToolApproval::Required(_)));
}

#[test]
fn odek_approve_mcp_approves_every_tool_without_reading_or_writing() {
    let fixture = Fixture::new();
    fixture.write(&fixture.tool_approvals_path(), "corrupt");
    let console = ScriptedConsole::interactive(&[]);
    let approver =
        fixture.approvals_with_env("ODEK_APPROVE_MCP", "1", console.clone()).tool_approver(&servers()).unwrap();
    assert_eq!(approver.approve_tool(&read_file()), ToolApproval::Approved);
    let unknown_server = ToolApprovalRequest { server: "nobody".into(), ..read_file() };
    assert_eq!(approver.approve_tool(&unknown_server), ToolApproval::Approved);
    assert_eq!(fs::read_to_string(fixture.tool_approvals_path()).unwrap(), "corrupt");
    assert!(console.prompts().is_empty());

    let approver = fixture
        .approvals_with_env("ODEK_APPROVE_MCP", "true", ScriptedConsole::non_interactive())
        .tool_approver(&[])
        .unwrap_err();
    assert!(approver.to_string().starts_with("mcp approval: load approvals: parse "));
}

#[test]
fn auto_approve_skips_tool_prompts() {
    let fixture = Fixture::new();
    let global = global_server("fs", ServerEntry { auto_approve: true, ..stdio_entry("fs-mcp", &[]) });
    let console = ScriptedConsole::non_interactive();
    let approver = fixture.approvals(console.clone()).tool_approver(&[global]).unwrap();
    assert_eq!(approver.approve_tool(&read_file()), ToolApproval::Approved);

    let mut project = servers().remove(0);
    project.auto_approve_effective = true;
    let approver = fixture.approvals(console.clone()).tool_approver(&[project]).unwrap();
    assert_eq!(approver.approve_tool(&read_file()), ToolApproval::Approved);
    assert!(console.prompts().is_empty());
    assert!(!fixture.tool_approvals_path().exists(), "auto_approve is never persisted");
}

#[test]
fn global_servers_without_auto_approve_still_need_tool_approval() {
    let fixture = Fixture::new();
    let global = global_server("fs", stdio_entry("fs-mcp", &[]));
    let approver = fixture.approvals(ScriptedConsole::non_interactive()).tool_approver(&[global]).unwrap();
    assert_eq!(approver.approve_tool(&read_file()), ToolApproval::Required(REQUIRED_READ_FILE.to_owned()));
}

#[test]
fn an_unknown_server_is_never_approved() {
    let fixture = Fixture::new();
    let approver = fixture.approvals(ScriptedConsole::interactive(&[])).tool_approver(&servers()).unwrap();
    let unknown = ToolApprovalRequest { server: "ghost".into(), ..read_file() };
    assert_eq!(
        approver.approve_tool(&unknown),
        ToolApproval::Required(
            "MCP tool \"read_file\" from server \"ghost\" requires explicit approval\nset ODEK_APPROVE_MCP=1 to approve all tools from all project MCP servers, or run interactively"
                .to_owned()
        )
    );
}

#[test]
fn unparseable_tool_approvals_file_is_fatal() {
    let fixture = Fixture::new();
    fixture.write(&fixture.tool_approvals_path(), "{\"k\": 1}");
    let err = fixture.approvals(ScriptedConsole::non_interactive()).tool_approver(&servers()).unwrap_err();
    let parse_error = serde_json::from_str::<BTreeMap<String, bool>>("{\"k\": 1}").unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("mcp approval: load approvals: parse {}: {parse_error}", fixture.tool_approvals_path().display())
    );
}

#[test]
fn concurrent_requests_never_interleave_prompts() {
    let fixture = Fixture::new();
    let answers: Vec<Option<&str>> = vec![Some("y"); 8];
    let console = ScriptedConsole::interactive(&answers);
    let approver = fixture.approvals(console.clone()).tool_approver(&servers()).unwrap();
    std::thread::scope(|scope| {
        for index in 0..8 {
            let approver = &approver;
            scope.spawn(move || {
                let tool = ToolApprovalRequest { tool: format!("t{index}"), ..read_file() };
                assert_eq!(approver.approve_tool(&tool), ToolApproval::Approved);
            });
        }
    });
    assert_eq!(console.prompts().len(), 8);
    assert_eq!(persisted_keys(&fixture.tool_approvals_path()).len(), 8);
}

fn tool(name: &str) -> ToolApprovalRequest {
    ToolApprovalRequest { tool: name.into(), description: format!("The {name} tool."), ..read_file() }
}

#[test]
fn several_pending_tools_share_one_card_and_a_approves_the_rest() {
    let fixture = Fixture::new();
    let console = ScriptedConsole::interactive(&[Some("n"), Some("a")]);
    let approver = fixture.approvals(console.clone()).tool_approver(&servers()).unwrap();
    let requests = [tool("t1"), tool("t2"), tool("t3"), tool("t4")];
    assert_eq!(
        approver.approve_tools(&requests),
        [ToolApproval::Declined, ToolApproval::Approved, ToolApproval::Approved, ToolApproval::Approved]
    );
    let pending: Vec<&ToolApprovalRequest> = requests.iter().collect();
    assert_eq!(
        console.prompts(),
        [
            format!("{}{}", tool_approval_card("fs", &pending), tool_decision_prompt(1, 4, "t1")),
            tool_decision_prompt(2, 4, "t2"),
        ]
    );
    assert_eq!(persisted_keys(&fixture.tool_approvals_path()).len(), 3);
}

#[test]
fn the_card_lists_only_what_still_needs_an_answer() {
    let fixture = Fixture::new();
    let approver = fixture.approvals(ScriptedConsole::interactive(&[Some("y")])).tool_approver(&servers()).unwrap();
    assert_eq!(approver.approve_tool(&tool("t2")), ToolApproval::Approved);

    let console = ScriptedConsole::interactive(&[Some("y"), Some("N")]);
    let approver = fixture.approvals(console.clone()).tool_approver(&servers()).unwrap();
    let requests = [tool("t1"), tool("t2"), tool("t3"), tool("t4")];
    assert_eq!(
        approver.approve_tools(&requests),
        [ToolApproval::Approved, ToolApproval::Approved, ToolApproval::Declined, ToolApproval::Declined]
    );
    let prompts = console.prompts();
    assert_eq!(prompts.len(), 2);
    assert!(prompts[0].starts_with("\nMCP server \"fs\" wants to register 3 tools:\n  1. \"t1\"\n"), "{prompts:?}");
    assert!(!prompts[0].contains("\"t2\""), "an approved tool is not asked again");
    assert_eq!(prompts[1], tool_decision_prompt(2, 3, "t3"));
}

#[test]
fn end_of_input_declines_every_remaining_tool() {
    let fixture = Fixture::new();
    let console = ScriptedConsole::interactive(&[None]);
    let approver = fixture.approvals(console.clone()).tool_approver(&servers()).unwrap();
    assert_eq!(approver.approve_tools(&[tool("t1"), tool("t2")]), [ToolApproval::Declined, ToolApproval::Declined]);
    assert_eq!(console.prompts().len(), 1);
    assert!(!fixture.tool_approvals_path().exists());
}

#[test]
fn without_a_terminal_the_card_keeps_the_per_tool_rules() {
    let fixture = Fixture::new();
    let approver = fixture.approvals(ScriptedConsole::interactive(&[Some("y")])).tool_approver(&servers()).unwrap();
    assert_eq!(approver.approve_tool(&tool("t1")), ToolApproval::Approved);

    let approver = fixture.approvals(ScriptedConsole::non_interactive()).tool_approver(&servers()).unwrap();
    let startup = [tool("t1"), tool("t2"), tool("t3")];
    let required = "MCP tool \"t2\" from server \"fs\" requires explicit approval\nset ODEK_APPROVE_MCP=1 to approve all tools from all project MCP servers, or run interactively";
    assert_eq!(
        approver.approve_tools(&startup),
        [ToolApproval::Approved, ToolApproval::Required(required.to_owned())],
        "answers stop at the first tool nobody can approve"
    );
    let relist = startup.map(|request| ToolApprovalRequest { relist: true, ..request });
    assert_eq!(
        approver.approve_tools(&relist),
        [ToolApproval::Approved, ToolApproval::Declined, ToolApproval::Declined]
    );
}

#[test]
fn a_relist_asks_on_the_same_card() {
    let fixture = Fixture::new();
    let console = ScriptedConsole::interactive(&[Some("a")]);
    let approver = fixture.approvals(console.clone()).tool_approver(&servers()).unwrap();
    let relist = [tool("t1"), tool("t2")].map(|request| ToolApprovalRequest { relist: true, ..request });
    assert_eq!(approver.approve_tools(&relist), [ToolApproval::Approved, ToolApproval::Approved]);
    assert!(console.prompts()[0].starts_with("\nMCP server \"fs\" wants to register 2 tools:\n"));
}

#[test]
fn card_descriptions_cannot_forge_a_line_red() {
    let forged = ToolApprovalRequest {
        description: "Reads.\n  2. \"rm_rf\"\r\n     schema: sha256:0000000000000000 (2 bytes)\u{1b}[2K".into(),
        ..tool("t1")
    };
    let second = tool("t2");
    let card = tool_approval_card("fs", &[&forged, &second]);
    assert_eq!(card.lines().count(), 1 + 1 + 2 * 3 + 1, "{card}");
    assert!(!card.contains('\u{1b}'));
    assert!(card.contains("description: Reads.\u{fffd}  2. \"rm_rf\"\u{fffd}\u{fffd}     schema:"), "{card}");
}

#[test]
fn keys_and_their_decisions() {
    for (key, decision) in [
        (Some('y'), ToolDecision::Approve),
        (Some('Y'), ToolDecision::Approve),
        (Some('a'), ToolDecision::ApproveRest),
        (Some('A'), ToolDecision::ApproveRest),
        (Some('n'), ToolDecision::Decline),
        (Some('\r'), ToolDecision::Decline),
        (Some(' '), ToolDecision::Decline),
        (Some('N'), ToolDecision::DeclineRest),
        (Some('\u{1b}'), ToolDecision::DeclineRest),
        (Some('\u{4}'), ToolDecision::DeclineRest),
        (None, ToolDecision::DeclineRest),
    ] {
        assert_eq!(decision_for_key(key), decision, "{key:?}");
    }
}
