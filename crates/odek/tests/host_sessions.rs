//! The session host's bounds: at the bound on open sessions the one idle the longest is closed
//! to make room (and can be loaded again), while a bound reached by sessions that all run a turn
//! refuses the new one.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use odek::BoxFuture;
use odek::host::{ApprovalAnswer, ApprovalRequest, Host, HostError, HostFace, HostSettings, Update};

struct Quiet;

impl HostFace for Quiet {
    fn update(&self, _session: &str, _update: Update) {}

    fn ask(&self, _request: ApprovalRequest) -> BoxFuture<'static, Option<ApprovalAnswer>> {
        Box::pin(async { None })
    }
}

fn host(home: PathBuf, max_sessions: usize) -> Host {
    let settings = HostSettings {
        home,
        env: BTreeMap::new(),
        overrides: odek::Overrides::default(),
        max_sessions,
        max_running_turns: 1,
    };
    Host::new(settings, Arc::new(Quiet))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_idle_the_longest_makes_room_and_loads_again() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".odek")).unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let host = host(home, 2);
    let first = host.create(cwd.clone(), Default::default()).await.unwrap().id;
    let second = host.create(cwd.clone(), Default::default()).await.unwrap().id;
    // The second gets a turn claimed: the first is now the one idle the longest.
    let claimed = host.begin_turn(&second).unwrap();
    let third = host.create(cwd.clone(), Default::default()).await.unwrap().id;
    let mut open = host.open_sessions();
    open.sort();
    let mut expected = vec![second.clone(), third.clone()];
    expected.sort();
    assert_eq!(open, expected, "{first} should have made room");

    // Both remaining sessions busy: nothing can make room.
    let _also_claimed = host.begin_turn(&third).unwrap();
    let refused = host.load(&first, cwd.clone(), Default::default()).await.unwrap_err();
    assert!(matches!(refused, HostError::TooManySessions(2)), "{refused}");
    drop(claimed);
    // Once the second is idle again, it is the one idle the longest, and a new session takes
    // its place.
    let fourth = host.create(cwd, Default::default()).await.unwrap().id;
    assert!(host.open_sessions().contains(&fourth));
    assert!(!host.open_sessions().contains(&second));
    host.close_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_saved_when_opened_and_keeps_its_mode() {
    use odek::host::Mode;
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".odek")).unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let host = host(home.clone(), 4);
    let file = |id: &str| -> serde_json::Value {
        let text = std::fs::read_to_string(home.join(format!(".odek/sessions/{id}.json"))).unwrap();
        serde_json::from_str(&text).unwrap()
    };

    // Never prompted, yet loadable (another process of the same editor loads it).
    let id = host.create(cwd.clone(), Default::default()).await.unwrap().id;
    assert_eq!(file(&id)["messages"][0]["role"], "system");
    host.set_mode(&id, Mode::ReadOnly).unwrap();
    assert_eq!(file(&id)["mode"], "read-only");
    host.close(&id).await.unwrap();

    let loaded = host.load(&id, cwd.clone(), Default::default()).await.unwrap();
    assert_eq!(loaded.mode, Mode::ReadOnly);
    host.set_mode(&id, Mode::Policy).unwrap();
    assert!(file(&id).get("mode").is_none(), "the configured policy is recorded as no mode");
    host.close(&id).await.unwrap();
    assert_eq!(host.load(&id, cwd.clone(), Default::default()).await.unwrap().mode, Mode::Policy);
    host.close(&id).await.unwrap();

    // A model the client names applies to a loaded session as to a new one.
    let options = odek::host::SessionOptions { model: Some("another-model".to_owned()), ..Default::default() };
    host.load_with(&id, cwd, Default::default(), &options).await.unwrap();
    assert_eq!(host.model(&id, None).unwrap(), "another-model");
    host.close_all().await;
}
