//! The token file: every grant odek holds, one record per (issuer, resource, client), and each
//! issuer's dynamic client registration, in `<dir>/credentials.json` (the directory `0700`, the
//! file `0600`, written whole through a temporary file and a rename). A file others can read is
//! refused, as is a corrupt one, each with a line naming the fix. Every token read or written is
//! registered for redaction.
//!
//! Start at [`TokenStore::load`]. Not here: when a token is used or refreshed (`super`).

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use super::error::OAuthError;

/// The file's name inside the store directory.
pub(crate) const FILE_NAME: &str = "credentials.json";
/// Largest token file read (bytes).
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// The lock file beside it.
const LOCK_NAME: &str = ".lock";
/// Most records kept; the oldest go first.
const MAX_RECORDS: usize = 512;

/// One grant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TokenRecord {
    pub issuer: String,
    /// The server's canonical URL (the key).
    pub resource: String,
    /// The `resource` sent to the authorization server when the server's metadata names
    /// another (a parent path of the same origin).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
    pub client_id: String,
    pub access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// Seconds since the Unix epoch; `None`: the server did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    pub token_endpoint: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revocation_endpoint: Option<String>,
    /// `none`, `client_secret_basic`, `client_secret_post` or `private_key_jwt`.
    pub auth_method: String,
}

/// A client registered dynamically with one issuer (RFC 7591), kept so the next login reuses it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Registration {
    pub issuer: String,
    pub client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    pub redirect_uri: String,
    pub auth_method: String,
}

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Credentials {
    #[serde(default)]
    pub tokens: Vec<TokenRecord>,
    #[serde(default)]
    pub registrations: Vec<Registration>,
}

impl Credentials {
    /// The newest grant for `resource` (and `client_id` when the entry pins one).
    pub(crate) fn token_for(&self, resource: &str, client_id: Option<&str>) -> Option<&TokenRecord> {
        self.tokens
            .iter()
            .rev()
            .find(|record| record.resource == resource && client_id.is_none_or(|id| id == record.client_id))
    }

    /// Keeps `record`, replacing the grant of the same (issuer, resource, client).
    pub(crate) fn put_token(&mut self, record: TokenRecord) {
        self.tokens.retain(|old| {
            (old.issuer.as_str(), old.resource.as_str(), old.client_id.as_str())
                != (record.issuer.as_str(), record.resource.as_str(), record.client_id.as_str())
        });
        self.tokens.push(record);
        let excess = self.tokens.len().saturating_sub(MAX_RECORDS);
        self.tokens.drain(..excess);
    }

    /// Forgets every grant for `resource`; whether there was one.
    pub(crate) fn forget_resource(&mut self, resource: &str) -> Vec<TokenRecord> {
        let (gone, kept) = std::mem::take(&mut self.tokens).into_iter().partition(|record| record.resource == resource);
        self.tokens = kept;
        gone
    }

    pub(crate) fn registration_for(&self, issuer: &str) -> Option<&Registration> {
        self.registrations.iter().rev().find(|registration| registration.issuer == issuer)
    }

    pub(crate) fn put_registration(&mut self, registration: Registration) {
        self.registrations.retain(|old| old.issuer != registration.issuer);
        self.registrations.push(registration);
        let excess = self.registrations.len().saturating_sub(MAX_RECORDS);
        self.registrations.drain(..excess);
    }

    /// Registers every secret of the file for redaction.
    fn register_secrets(&self) {
        for record in &self.tokens {
            odek_contract::redaction::register_secret(&record.access_token);
            if let Some(refresh) = &record.refresh_token {
                odek_contract::redaction::register_secret(refresh);
            }
        }
        for registration in &self.registrations {
            if let Some(secret) = &registration.client_secret {
                odek_contract::redaction::register_secret(secret);
            }
        }
    }
}

/// The token file of one directory.
#[derive(Debug, Clone)]
pub(crate) struct TokenStore {
    dir: PathBuf,
}

impl TokenStore {
    pub(crate) fn new(dir: impl Into<PathBuf>) -> TokenStore {
        TokenStore { dir: dir.into() }
    }

    pub(crate) fn path(&self) -> PathBuf {
        self.dir.join(FILE_NAME)
    }

    /// The file's contents; empty when there is no file yet.
    pub(crate) fn load(&self) -> Result<Credentials, OAuthError> {
        let path = self.path();
        let file = match std::fs::File::open(&path) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Credentials::default()),
            Err(error) => return Err(store_error(&path, &format!("cannot be read: {error}"))),
        };
        let metadata = file.metadata().map_err(|error| store_error(&path, &format!("cannot be read: {error}")))?;
        check_private(&path, &metadata)?;
        if metadata.len() > MAX_FILE_BYTES {
            return Err(store_error(
                &path,
                &format!("is larger than {MAX_FILE_BYTES} bytes; delete it and log in again"),
            ));
        }
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::Read::take(file, MAX_FILE_BYTES), &mut bytes)
            .map_err(|error| store_error(&path, &format!("cannot be read: {error}")))?;
        let credentials: Credentials = serde_json::from_slice(&bytes).map_err(|error| {
            store_error(&path, &format!("is not a valid token file ({error}); delete it and log in again"))
        })?;
        credentials.register_secrets();
        Ok(credentials)
    }

    /// Reads, changes and writes the file as one step: other threads wait on a lock of this
    /// process and other odek processes on `flock(2)` of `<dir>/.lock`, so no update (a
    /// rotated refresh token above all) is lost to a concurrent one. Never held across an await.
    pub(crate) fn update<T>(&self, change: impl FnOnce(&mut Credentials) -> T) -> Result<T, OAuthError> {
        static UPDATES: Mutex<()> = Mutex::new(());
        let _in_process = UPDATES.lock().unwrap_or_else(PoisonError::into_inner);
        let lock_path = self.dir.join(LOCK_NAME);
        let fail = |error: std::io::Error| store_error(&lock_path, &format!("cannot be locked: {error}"));
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&self.dir).map_err(fail)?;
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&lock_path)
            .map_err(fail)?;
        lock.lock().map_err(fail)?;
        let mut credentials = self.load()?;
        let outcome = change(&mut credentials);
        self.save(&credentials)?;
        Ok(outcome)
    }

    /// Writes the whole file: the directory made `0700` if missing, the file `0600`, replaced
    /// atomically. Callers go through [`TokenStore::update`].
    fn save(&self, credentials: &Credentials) -> Result<(), OAuthError> {
        credentials.register_secrets();
        let path = self.path();
        let fail = |error: std::io::Error| store_error(&path, &format!("cannot be written: {error}"));
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&self.dir).map_err(fail)?;
        let bytes = serde_json::to_vec_pretty(credentials).map_err(|error| fail(std::io::Error::other(error)))?;
        static WRITES: AtomicU64 = AtomicU64::new(0);
        let write = WRITES.fetch_add(1, Ordering::Relaxed);
        let temporary = self.dir.join(format!(".{FILE_NAME}.{}.{write}.tmp", std::process::id()));
        let _ = std::fs::remove_file(&temporary);
        let mut file =
            std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&temporary).map_err(fail)?;
        let written = file.write_all(&bytes).and_then(|()| file.sync_all());
        drop(file);
        if let Err(error) = written.and_then(|()| std::fs::rename(&temporary, &path)) {
            let _ = std::fs::remove_file(&temporary);
            return Err(fail(error));
        }
        Ok(())
    }
}

/// A file group or others can read (or write) is refused: it holds live credentials.
fn check_private(path: &Path, metadata: &std::fs::Metadata) -> Result<(), OAuthError> {
    let mode = metadata.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(OAuthError::Store(format!(
            "{} is readable by group or others (mode {mode:o}); refusing to use it — run chmod 600 {}",
            path.display(),
            path.display()
        )));
    }
    Ok(())
}

fn store_error(path: &Path, what: &str) -> OAuthError {
    OAuthError::Store(format!("token file {} {what}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(resource: &str, token: &str) -> TokenRecord {
        TokenRecord {
            issuer: "https://auth.example.com".into(),
            resource: resource.into(),
            audience: None,
            client_id: "c1".into(),
            access_token: token.into(),
            refresh_token: Some(format!("{token}-refresh")),
            expires_at: Some(100),
            scopes: vec![],
            token_endpoint: "https://auth.example.com/token".into(),
            revocation_endpoint: None,
            auth_method: "none".into(),
        }
    }

    #[test]
    fn the_file_is_private_round_trips_and_keeps_one_grant_per_key() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::new(dir.path().join("oauth"));
        assert_eq!(store.load().unwrap(), Credentials::default());
        store
            .update(|credentials| {
                credentials.put_token(record("https://a.example/mcp", "store-test-token-a1"));
                credentials.put_token(record("https://a.example/mcp", "store-test-token-a2"));
            })
            .unwrap();
        store
            .update(|credentials| credentials.put_token(record("https://b.example/mcp", "store-test-token-b1")))
            .unwrap();
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&store.path()), 0o600);
        assert_eq!(mode(&dir.path().join("oauth")), 0o700);
        let loaded = store.load().unwrap();
        assert_eq!(loaded.tokens.len(), 2);
        assert_eq!(loaded.token_for("https://a.example/mcp", None).unwrap().access_token, "store-test-token-a2");
        assert_eq!(odek_contract::redaction::redact("x store-test-token-b1-refresh"), "x [REDACTED]");
    }

    #[test]
    fn concurrent_updates_are_never_lost() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::new(dir.path());
        std::thread::scope(|scope| {
            for n in 0..16 {
                let store = &store;
                scope.spawn(move || {
                    store
                        .update(|credentials| credentials.put_token(record(&format!("https://{n}.example"), "t")))
                        .unwrap();
                });
            }
        });
        assert_eq!(store.load().unwrap().tokens.len(), 16);
    }

    #[test]
    fn a_world_readable_or_corrupt_file_is_refused_with_the_fix_red() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::new(dir.path());
        store.update(|_| ()).unwrap();
        std::fs::set_permissions(store.path(), std::fs::Permissions::from_mode(0o644)).unwrap();
        let error = store.load().unwrap_err().to_string();
        assert!(
            error.contains("is readable by group or others (mode 644); refusing to use it — run chmod 600"),
            "{error}"
        );
        std::fs::set_permissions(store.path(), std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(store.path(), b"{\"tokens\": [ {\"issuer\": 7").unwrap();
        let error = store.load().unwrap_err().to_string();
        assert!(error.contains("is not a valid token file"), "{error}");
        assert!(error.ends_with("delete it and log in again"), "{error}");
    }
}
