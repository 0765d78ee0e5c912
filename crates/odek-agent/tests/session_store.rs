//! The session store against a real temporary directory: atomic private writes, save-time
//! redaction, the storage cap, load errors, symlinks, the index and `latest`, delete.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use odek_agent::session::{
    ExternalRef, MAX_SESSION_FILE_BYTES, Session, SessionError, SessionId, SessionStore, safe_state,
};
use odek_llm::{Message, Role, ToolCall, Usage};

struct Home {
    _root: tempfile::TempDir,
    sessions: PathBuf,
    artifacts: PathBuf,
}

impl Home {
    fn new() -> Home {
        let root = tempfile::tempdir().unwrap();
        let sessions = root.path().join("home/.odek/sessions");
        let artifacts = root.path().join("home/.odek/artifacts");
        Home { _root: root, sessions, artifacts }
    }

    fn store(&self) -> SessionStore {
        SessionStore::new(self.sessions.clone()).unwrap().with_artifacts_dir(self.artifacts.clone())
    }

    fn file(&self, id: &str) -> PathBuf {
        self.sessions.join(format!("{id}.json"))
    }

    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.sessions)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }
}

fn call(id: &str, arguments: &str) -> Message {
    Message { tool_calls: vec![ToolCall::new(id, "shell", arguments)], ..Message::assistant("") }
}

fn conversation(task: &str) -> Session {
    let mut session = Session::new(SessionId::mint().unwrap());
    session.model = "deepseek-v4-flash".into();
    session.provider = "deepseek".into();
    session.messages = vec![
        Message::system("You are odek."),
        Message::user(task),
        call("c1", r#"{"command":"ls"}"#),
        Message::tool("c1", "shell", "a\nb"),
        Message::assistant("done"),
    ];
    session
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().mode() & 0o777
}

#[test]
fn save_is_private_atomic_and_round_trips() {
    let home = Home::new();
    let store = home.store();
    assert_eq!(mode(&home.sessions), 0o700);
    let mut session = conversation("list files");
    session.base_url = "https://api.example/v1".into();
    session.sandbox = true;
    session.add_usage(Usage::new(10, 3));
    let report = store.save(&mut session).unwrap();
    assert_eq!((report.message_count, report.removed_groups, report.warning), (5, 0, None));
    store.save(&mut session).unwrap();

    let id = session.id.to_string();
    assert_eq!(home.names(), vec![format!("{id}.json"), "index.json".to_owned()], "no temp files left");
    assert_eq!(mode(&home.file(&id)), 0o600);
    assert_eq!(mode(&home.sessions.join("index.json")), 0o600);

    let text = std::fs::read_to_string(home.file(&id)).unwrap();
    assert!(!text.contains('\n'), "compact JSON");
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    for field in ["id", "created_at", "updated_at", "model", "provider", "turns", "task", "sandbox", "messages"] {
        assert!(value.get(field).is_some(), "{field} in {text}");
    }
    assert!(value.get("external_refs").is_none());
    assert_eq!(value["messages"][2]["tool_calls"][0]["type"], "function");
    assert_eq!(value["messages"][3]["tool_call_id"], "c1");

    let loaded = store.load(&session.id).unwrap();
    assert_eq!(loaded.messages, session.messages);
    assert_eq!((loaded.turns, loaded.task.as_str(), loaded.sandbox), (1, "list files", true));
    assert_eq!((loaded.input_tokens, loaded.output_tokens), (10, 3));
    assert_eq!(loaded.base_url, "https://api.example/v1");
    assert!(chrono::DateTime::parse_from_rfc3339(&loaded.updated_at).is_ok());
    assert!(loaded.updated_at.ends_with('Z'));
}

#[test]
fn session_file_secret_redacted_red() {
    let home = Home::new();
    let store = home.store();
    let key = format!("sk-{}", "Q7".repeat(24));
    let registered = "hunter2-registered-value";
    odek_contract::redaction::register_secret(registered);
    let mut session = conversation(&format!("deploy with {key}"));
    session.messages.push(Message {
        reasoning_content: Some(format!("the key is {key} and {registered}")),
        ..Message::assistant(format!("I used {key}"))
    });
    session.add_external_refs([ExternalRef::new("api", format!("https://h/?token={key}"), "cli")]).unwrap();
    store.save(&mut session).unwrap();

    let text = std::fs::read_to_string(home.file(session.id.as_str())).unwrap();
    assert!(!text.contains(&key), "{text}");
    assert!(!text.contains(registered), "{text}");
    assert!(text.contains("deploy with [REDACTED]"));
    let index = std::fs::read_to_string(home.sessions.join("index.json")).unwrap();
    assert!(!index.contains(&key), "{index}");
    // The live conversation keeps what the model saw.
    assert!(session.messages[1].content.contains(&key));
    assert!(session.external_refs[0].uri.contains(&key));
}

#[test]
fn saves_keep_only_the_safe_state() {
    let home = Home::new();
    let store = home.store();
    let mut session = conversation("t");
    let complete = session.messages.clone();
    session.messages.push(Message {
        tool_calls: vec![ToolCall::new("c2", "shell", "{}"), ToolCall::new("c3", "shell", "{}")],
        ..Message::assistant("")
    });
    session.messages.push(Message::tool("c2", "shell", "only one result"));
    assert_eq!(safe_state(&session.messages), complete);
    let report = store.save(&mut session).unwrap();
    assert_eq!(report.message_count, complete.len());
    assert_eq!(store.load(&session.id).unwrap().messages, complete);
    assert_eq!(session.messages.len(), complete.len() + 2, "the live conversation is untouched");
}

fn big_conversation(groups: usize) -> Session {
    let mut session = Session::new(SessionId::mint().unwrap());
    session.messages = vec![Message::system("system prompt"), Message::user("the task")];
    for n in 0..groups {
        let id = format!("call-{n}");
        session.messages.push(call(&id, &format!(r#"{{"n":{n}}}"#)));
        session.messages.push(Message::tool(&id, "shell", format!("{n}:{}", "x".repeat(200))));
        session.messages.push(Message::assistant(format!("step {n} done")));
    }
    session
}

/// Every tool message follows its assistant call message (directly or after sibling results).
fn assert_groups_intact(messages: &[Message]) {
    for (index, message) in messages.iter().enumerate() {
        if message.role != Role::Tool {
            continue;
        }
        let call_id = message.tool_call_id.as_deref().unwrap();
        let owner = messages[..index].iter().rev().find(|m| m.role != Role::Tool).unwrap();
        assert!(owner.tool_calls.iter().any(|call| call.id == call_id), "orphan result {call_id}");
    }
}

#[test]
fn storage_cap_trims_oldest_groups_and_warns_once() {
    let home = Home::new();
    let cap = 4096;
    let store = home.store().with_max_file_bytes(cap);
    let mut session = big_conversation(30);
    let live = session.messages.clone();
    let report = store.save(&mut session).unwrap();
    assert!(report.removed_groups > 0);
    let expected_warning = format!(
        "session {} exceeded {cap} bytes on write — oldest messages trimmed to stay within the load cap",
        session.id
    );
    assert_eq!(report.warning.as_deref(), Some(expected_warning.as_str()));
    assert_eq!(session.messages, live, "trimming applies to the file, not the live conversation");

    let size = std::fs::metadata(home.file(session.id.as_str())).unwrap().len();
    assert!(size <= cap, "{size} > {cap}");
    let loaded = store.load(&session.id).unwrap();
    assert_eq!(loaded.messages[0], Message::system("system prompt"));
    assert_eq!(loaded.messages[1].role, Role::System);
    let notice_start =
        format!("[Session storage limit: {} oldest message group(s) were removed", report.removed_groups);
    assert!(loaded.messages[1].content.starts_with(&notice_start), "{}", loaded.messages[1].content);
    assert_eq!(loaded.messages.last(), live.last());
    assert_groups_intact(&loaded.messages);
    assert_eq!(loaded.turns, 1, "turns count the trimmed task too");

    // Once per session: the next trimming save does not warn again.
    session.messages.push(Message::user("more"));
    let again = store.save(&mut session).unwrap();
    assert!(again.removed_groups > 0);
    assert_eq!(again.warning, None);

    // A resumed session that trims again carries the earlier count into one notice.
    let mut resumed = store.load(&session.id).unwrap();
    let earlier = resumed.messages.len();
    for n in 0..10 {
        resumed.messages.push(Message::user(format!("{n}: {}", "y".repeat(300))));
    }
    let report = store.save(&mut resumed).unwrap();
    assert!(report.removed_groups > 0 && earlier > 2);
    assert!(report.warning.is_some(), "a new process (a fresh load) warns once");
    let reloaded = store.load(&resumed.id).unwrap();
    let notices = reloaded.messages.iter().filter(|m| m.content.starts_with("[Session storage limit: ")).count();
    assert_eq!(notices, 1);
    assert_eq!(reloaded.turns, 12);
    assert_groups_intact(&reloaded.messages);
}

#[test]
fn a_session_that_cannot_fit_is_an_error_not_a_truncated_file() {
    let home = Home::new();
    let store = home.store().with_max_file_bytes(512);
    let mut session = Session::new(SessionId::mint().unwrap());
    session.messages = vec![Message::system("s".repeat(1000)), Message::user("u")];
    let err = store.save(&mut session).unwrap_err();
    assert!(matches!(err, SessionError::TooLargeToSave { .. }), "{err}");
    assert!(!home.file(session.id.as_str()).exists());
}

#[test]
fn load_errors_are_exact() {
    let home = Home::new();
    let store = home.store();

    let big = home.file("big");
    let file = std::fs::File::create(&big).unwrap();
    file.set_len(MAX_SESSION_FILE_BYTES + 1).unwrap();
    let err = store.load(&SessionId::parse("big").unwrap()).unwrap_err();
    assert_eq!(err.to_string(), r#"session: load "big": file too large (33554433 bytes, max 33554432)"#);

    std::fs::write(home.file("a"), r#"{"id":"b","messages":[]}"#).unwrap();
    let err = store.load(&SessionId::parse("a").unwrap()).unwrap_err();
    assert_eq!(err.to_string(), r#"session: load "a": ID mismatch (file contains "b")"#);

    std::fs::write(home.file("c"), r#"{"id":"c","messages":[{"role":"us"#).unwrap();
    let err = store.load(&SessionId::parse("c").unwrap()).unwrap_err();
    assert!(err.to_string().starts_with(r#"session: load "c": corrupt session file: "#), "{err}");

    std::fs::write(home.file("d"), r#"{"id":"d","messages":"nope"}"#).unwrap();
    let err = store.load(&SessionId::parse("d").unwrap()).unwrap_err();
    assert!(err.to_string().starts_with(r#"session: load "d": corrupt session file: "#), "{err}");

    let err = store.load(&SessionId::parse("missing").unwrap()).unwrap_err();
    assert_eq!(err.to_string(), r#"session: load "missing": no such session"#);

    std::fs::write(home.file("e"), r#"{"id":"e","turns":2,"future_field":[1,2],"messages":[]}"#).unwrap();
    assert_eq!(store.load(&SessionId::parse("e").unwrap()).unwrap().turns, 2);
}

#[test]
fn session_symlink_not_followed_red() {
    let home = Home::new();
    let store = home.store();
    let outside = home.sessions.parent().unwrap().join("outside.json");
    std::fs::write(&outside, r#"{"id":"linked","updated_at":"2999-01-01T00:00:00Z","messages":[]}"#).unwrap();
    std::os::unix::fs::symlink(&outside, home.file("linked")).unwrap();
    let err = store.load(&SessionId::parse("linked").unwrap()).unwrap_err();
    assert!(matches!(err, SessionError::Symlink { .. }), "{err}");
    assert_eq!(err.to_string(), r#"session: load "linked": the session file is a symlink; refusing to follow it"#);
    assert!(store.latest().unwrap().is_none(), "latest skips the symlinked file");
    assert!(store.list().unwrap().is_empty());
}

#[test]
fn latest_uses_the_index_and_survives_a_missing_or_stale_one() {
    let home = Home::new();
    let store = home.store();
    let mut older = conversation("older");
    store.save(&mut older).unwrap();
    let mut newer = conversation("newer");
    store.save(&mut newer).unwrap();
    assert_eq!(store.latest().unwrap().unwrap().id, newer.id);
    let listed: Vec<String> = store.list().unwrap().into_iter().map(|entry| entry.id).collect();
    assert_eq!(listed, vec![newer.id.to_string(), older.id.to_string()]);

    // Missing index: a directory scan.
    std::fs::remove_file(home.sessions.join("index.json")).unwrap();
    assert_eq!(store.latest().unwrap().unwrap().id, newer.id);
    assert!(home.sessions.join("index.json").exists(), "the scan rebuilt the index");

    // Stale index: a session file the index does not know, newest of all.
    let unindexed = SessionId::mint().unwrap();
    let text = format!(r#"{{"id":"{unindexed}","updated_at":"2999-01-01T00:00:00Z","task":"late","messages":[]}}"#);
    std::fs::write(home.file(unindexed.as_str()), text).unwrap();
    assert_eq!(store.latest().unwrap().unwrap().id, unindexed);

    // The newest file no longer loads: skipped.
    std::fs::write(home.file(unindexed.as_str()), "{corrupt").unwrap();
    assert_eq!(store.latest().unwrap().unwrap().id, newer.id);

    // An indexed file that vanished.
    std::fs::remove_file(home.file(unindexed.as_str())).unwrap();
    std::fs::remove_file(home.file(newer.id.as_str())).unwrap();
    assert_eq!(store.latest().unwrap().unwrap().id, older.id);

    // A garbage index counts as missing.
    std::fs::write(home.sessions.join("index.json"), "[{").unwrap();
    assert_eq!(store.latest().unwrap().unwrap().id, older.id);
}

#[test]
fn latest_of_an_empty_store_is_none() {
    let home = Home::new();
    assert!(home.store().latest().unwrap().is_none());
    assert!(home.store().list().unwrap().is_empty());
}

#[test]
fn index_entries_summarise_sessions() {
    let home = Home::new();
    let store = home.store();
    let mut session = conversation(&format!("{}\nsecond line", "a".repeat(80)));
    session.add_usage(Usage::new(7, 2));
    store.save(&mut session).unwrap();
    let entries = store.list().unwrap();
    assert_eq!(entries.len(), 1);
    let entry = &entries[0];
    assert_eq!(entry.title, format!("{}…", "a".repeat(60)));
    assert_eq!((entry.turns, entry.input_tokens, entry.output_tokens), (1, 7, 2));
    assert_eq!(entry.model, "deepseek-v4-flash");
    let index: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(home.sessions.join("index.json")).unwrap()).unwrap();
    let keys: Vec<&str> = index[0].as_object().unwrap().keys().map(String::as_str).collect();
    for key in ["id", "title", "created_at", "updated_at", "turns", "model", "input_tokens", "output_tokens"] {
        assert!(keys.contains(&key), "{key} in {keys:?}");
    }
}

#[test]
fn delete_removes_file_index_entry_and_artifacts() {
    let home = Home::new();
    let store = home.store();
    let mut kept = conversation("kept");
    store.save(&mut kept).unwrap();
    let mut gone = conversation("gone");
    store.save(&mut gone).unwrap();
    let artifacts = home.artifacts.join(gone.id.as_str()).join("task-1");
    std::fs::create_dir_all(&artifacts).unwrap();
    std::fs::write(artifacts.join("out.txt"), "x").unwrap();
    let other_artifacts = home.artifacts.join(kept.id.as_str());
    std::fs::create_dir_all(&other_artifacts).unwrap();

    store.delete(&gone.id).unwrap();
    assert!(!home.file(gone.id.as_str()).exists());
    assert!(!home.artifacts.join(gone.id.as_str()).exists());
    assert!(other_artifacts.exists());
    let index = std::fs::read_to_string(home.sessions.join("index.json")).unwrap();
    assert!(!index.contains(gone.id.as_str()) && index.contains(kept.id.as_str()));

    let err = store.delete(&gone.id).unwrap_err();
    assert_eq!(err.to_string(), format!(r#"session: delete "{}": no such session"#, gone.id));
}

#[test]
fn store_dir_mode_is_0700_only_when_created() {
    let root = tempfile::tempdir().unwrap();
    let existing = root.path().join("existing");
    std::fs::create_dir(&existing).unwrap();
    std::fs::set_permissions(&existing, std::fs::Permissions::from_mode(0o755)).unwrap();
    SessionStore::new(existing.clone()).unwrap();
    assert_eq!(mode(&existing), 0o755);
}

#[test]
fn a_file_only_save_leaves_the_index_behind_and_readers_still_see_the_newest_state() {
    let home = Home::new();
    let store = home.store();
    let mut session = conversation("first task");
    store.save(&mut session).unwrap();
    let index = home.sessions.join("index.json");
    let indexed = std::fs::read(&index).unwrap();

    // A later step: the file changes, the index does not.
    session.messages.push(Message::user("second task"));
    session.add_usage(Usage::new(7, 2));
    store.save_file(&mut session).unwrap();
    assert_eq!(std::fs::read(&index).unwrap(), indexed, "the step left index.json as it was");
    // File times are as coarse as the kernel's clock tick: the step lands in a later one.
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(2);
    std::fs::File::options().write(true).open(home.file(session.id.as_str())).unwrap().set_modified(later).unwrap();
    let listed = store.list().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!((listed[0].turns, listed[0].input_tokens), (2, 7), "the stale index was not trusted");

    store.save_file(&mut session).unwrap();
    store.index(&session);
    let entries: serde_json::Value = serde_json::from_slice(&std::fs::read(&index).unwrap()).unwrap();
    assert_eq!(entries[0]["turns"], 2);
    assert_eq!(entries[0]["updated_at"], session.updated_at.as_str());
}

#[test]
fn an_index_title_is_cut_from_the_redacted_task() {
    let home = Home::new();
    let store = home.store();
    let mut session = conversation(&format!("use sk-{} now", "a".repeat(40)));
    session.task.clear();
    store.save_file(&mut session).unwrap();
    store.index(&session);
    assert_eq!(store.list().unwrap()[0].title, "use [REDACTED] now");
}
