//! End-to-end tests of `odek session list/show/delete/trim`: the real binary with `HOME` in a
//! temporary directory holding sessions written by the real store.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use odek_agent::session::{ExternalRef, Session, SessionId, SessionStore};
use odek_llm::{Message, ToolCall, Usage};

struct Home {
    _root: tempfile::TempDir,
    home: PathBuf,
}

impl Home {
    fn new() -> Home {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home");
        std::fs::create_dir(&home).unwrap();
        Home { _root: root, home }
    }

    fn sessions(&self) -> PathBuf {
        self.home.join(".odek/sessions")
    }

    fn artifacts(&self) -> PathBuf {
        self.home.join(".odek/artifacts")
    }

    fn store(&self) -> SessionStore {
        SessionStore::new(self.sessions()).unwrap()
    }

    /// Saves a session with a small conversation and returns its ID.
    fn save(&self, task: &str, model: &str) -> SessionId {
        let mut session = Session::new(SessionId::mint().unwrap());
        session.model = model.into();
        session.provider = "deepseek".into();
        let result: String = (1..=10).map(|n| format!("result line {n}\n")).collect();
        session.messages = vec![
            Message::system("You are odek."),
            Message::user(task),
            Message {
                tool_calls: vec![ToolCall::new("call-1", "shell", r#"{"command":"ls -la"}"#)],
                ..Message::assistant("Let me look.")
            },
            Message::tool("call-1", "shell", result),
            Message::assistant("All done."),
        ];
        session.add_usage(Usage::new(1200, 34));
        session.add_external_refs([ExternalRef::new("issue", "https://tracker/42", "cli")]).unwrap();
        self.store().save(&mut session).unwrap();
        session.id
    }

    /// Rewrites a saved session's `updated_at` (the index goes stale and is rebuilt on read).
    fn backdate(&self, id: &SessionId, updated_at: &str) {
        let path = self.sessions().join(format!("{id}.json"));
        let mut value: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        value["updated_at"] = updated_at.into();
        std::fs::write(&path, value.to_string()).unwrap();
        let _ = std::fs::remove_file(self.sessions().join("index.json"));
    }

    fn odek(&self, args: &[&str]) -> Output {
        Command::new(odek_test_support::odek_binary())
            .args(args)
            .current_dir(&self.home)
            .env_clear()
            .env("HOME", &self.home)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn list_shows_sessions_newest_first() {
    let home = Home::new();
    let out = home.odek(&["session", "list"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "no sessions (odek run --session saves one)\n");

    let first = home.save("fix the flaky test in the parser", "deepseek-v4-flash");
    let second = home.save(&format!("refactor {}", "x".repeat(100)), "deepseek-v4-pro");
    let out = home.odek(&["session", "list"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[0].starts_with("ID ") && lines[0].contains("TITLE"), "{text}");
    assert!(lines[1].starts_with(second.as_str()), "{text}");
    assert!(lines[1].contains("deepseek-v4-pro") && lines[1].contains("1200/34"), "{text}");
    assert!(lines[1].ends_with(&format!("refactor {}…", "x".repeat(51))), "{text}");
    assert!(lines[2].starts_with(first.as_str()) && lines[2].ends_with("fix the flaky test in the parser"), "{text}");

    let out = home.odek(&["session", "list", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let value: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let sessions = value["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2);
    assert_eq!(sessions[0]["id"], second.as_str());
    assert_eq!(sessions[1]["title"], "fix the flaky test in the parser");
    assert_eq!(sessions[1]["turns"], 1);
    assert_eq!(sessions[1]["input_tokens"], 1200);
}

#[test]
fn show_renders_the_conversation() {
    let home = Home::new();
    let id = home.save("list the files", "deepseek-v4-flash");
    let out = home.odek(&["session", "show", id.as_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    for expected in [
        format!("session   {id}\n"),
        "task      list the files\n".to_owned(),
        "model     deepseek-v4-flash\n".to_owned(),
        "tokens    1200 in, 34 out\n".to_owned(),
        "external refs:\n  issue https://tracker/42 (by cli, ".to_owned(),
        "── system ──\nYou are odek.\n".to_owned(),
        "── user ──\nlist the files\n".to_owned(),
        "── assistant ──\nLet me look.\n→ shell {\"command\":\"ls -la\"}\n".to_owned(),
        "── tool shell (call-1) ──\nresult line 1\n".to_owned(),
        "result line 6\n… 4 more line(s)\n".to_owned(),
        "── assistant ──\nAll done.\n".to_owned(),
    ] {
        assert!(text.contains(&expected), "missing {expected:?} in\n{text}");
    }
    assert!(!text.contains("result line 7"), "{text}");

    let out = home.odek(&["session", "show", id.as_str(), "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let file = std::fs::read_to_string(home.sessions().join(format!("{id}.json"))).unwrap();
    assert_eq!(stdout(&out), format!("{file}\n"));
}

#[test]
fn show_and_delete_report_bad_ids() {
    let home = Home::new();
    for args in [["session", "show", "../etc"], ["session", "delete", "a/b"]] {
        let out = home.odek(&args);
        assert_eq!(out.status.code(), Some(1));
        assert_eq!(stderr(&out), format!("odek: session: invalid session ID \"{}\"\n", args[2]));
        assert!(out.stdout.is_empty());
    }
    let out = home.odek(&["session", "show", "20250101-missing"]);
    assert_eq!(
        (stderr(&out).as_str(), out.status.code()),
        ("odek: session: load \"20250101-missing\": no such session\n", Some(1))
    );
    let out = home.odek(&["session", "delete", "20250101-missing"]);
    assert_eq!(
        (stderr(&out).as_str(), out.status.code()),
        ("odek: session: delete \"20250101-missing\": no such session\n", Some(1))
    );
}

#[test]
fn delete_removes_the_session_and_its_artifacts() {
    let home = Home::new();
    let kept = home.save("kept", "m");
    let gone = home.save("gone", "m");
    let artifacts = home.artifacts().join(gone.as_str()).join("task-1");
    std::fs::create_dir_all(&artifacts).unwrap();
    std::fs::write(artifacts.join("report.md"), "# report").unwrap();

    let out = home.odek(&["session", "delete", gone.as_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("deleted session {gone}\n"));
    assert!(!home.sessions().join(format!("{gone}.json")).exists());
    assert!(!home.artifacts().join(gone.as_str()).exists());
    let listed = stdout(&home.odek(&["session", "list"]));
    assert!(listed.contains(kept.as_str()) && !listed.contains(gone.as_str()), "{listed}");
}

#[test]
fn trim_by_count_and_age() {
    let home = Home::new();
    let oldest = home.save("oldest", "m");
    let old = home.save("old", "m");
    let recent = home.save("recent", "m");
    let newest = home.save("newest", "m");
    home.backdate(&oldest, "2020-01-01T00:00:00Z");
    home.backdate(&old, "2020-06-01T00:00:00Z");

    let out = home.odek(&["session", "trim"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out), "odek: session trim: give --keep <n>, --older-than <days>d, or both\n");
    let out = home.odek(&["session", "trim", "--older-than", "30"]);
    assert_eq!(
        (stderr(&out).as_str(), out.status.code()),
        ("odek: invalid --older-than \"30\": want <days>d, e.g. 30d\n", Some(1))
    );

    // Both criteria must select a session: keeping 3 protects `old` although it is old.
    let out = home.odek(&["session", "trim", "--keep", "3", "--older-than", "30d"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("removed {oldest}  oldest\nremoved 1 session(s)\n"));

    let out = home.odek(&["session", "trim", "--older-than", "30d"]);
    assert_eq!(stdout(&out), format!("removed {old}  old\nremoved 1 session(s)\n"));
    let out = home.odek(&["session", "trim", "--older-than", "30d"]);
    assert_eq!(stdout(&out), "no sessions to remove\n");

    let out = home.odek(&["session", "trim", "--keep", "1"]);
    assert_eq!(stdout(&out), format!("removed {recent}  recent\nremoved 1 session(s)\n"));
    let remaining: Vec<String> = home.store().list().unwrap().into_iter().map(|entry| entry.id).collect();
    assert_eq!(remaining, vec![newest.to_string()]);
}

#[test]
fn unknown_session_subcommand() {
    let home = Home::new();
    let out = home.odek(&["session", "nope"]);
    assert_eq!((stderr(&out).as_str(), out.status.code()), ("odek: unknown command \"nope\"\n", Some(1)));
}
