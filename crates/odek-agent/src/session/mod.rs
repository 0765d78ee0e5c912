//! Sessions (spec `loop-and-sessions.md` §10): persisted conversations under
//! `~/.odek/sessions/` and the external-state refs they carry.
//!
//! - [`SessionId`] mints and validates IDs; every ID reaching a path went through it.
//! - [`Session`] is the file's content; [`Session::add_external_refs`] adds refs.
//! - [`SessionStore`] saves (redacted, safe state, storage cap, atomic), loads (capped, no
//!   symlinks, ID checked), finds the latest, lists and deletes.
//! - [`SessionLock`] keeps a second process from appending to a session in use.
//! - [`safe_state`] is the conversation without a dangling tool call (error and budget paths).
//! - [`parse_external_ref_spec`] reads `--external-ref <spec>`.
//!
//! What is saved when, and the `session_saved` event, belong to the loop; this module only
//! stores.

mod error;
mod external_ref;
pub(crate) mod file;
mod id;
mod index;
mod lock;
mod record;
mod store;
mod trim;

pub(crate) use error::ExternalRefSpecProblem;
pub use error::{ExternalRefError, ExternalRefSpecError, SessionError};
pub use external_ref::{
    ExternalRef, MAX_CREATED_BY_BYTES, MAX_KIND_BYTES, MAX_URI_BYTES, is_same_external_ref, parse_external_ref_spec,
    validate_external_ref,
};
pub use id::SessionId;
pub use index::{IndexEntry, parse_time, session_title};
pub use lock::SessionLock;
pub use record::Session;
pub use store::{MAX_SESSION_FILE_BYTES, SaveReport, SessionStore};
pub use trim::safe_state;
