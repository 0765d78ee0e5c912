//! The `odek-extension/v1` contract as rules: server and tool names, the tool-result envelope,
//! artifact refs (validation, and the `file://` uris servers write), the model view with its
//! rendering and truncation, and, with the default `client` feature, secret redaction,
//! prompt-injection detection, the untrusted-content wrapper and the one rule for opening a file
//! by name. No async, no processes; the only I/O is the filesystem access artifact validation
//! needs and, under `client`, by-name opens. The MCP client, the agent and the extension SDK call
//! in here so each rule lives in exactly one place.
//!
//! Start at [`model_view::model_view`], the rule for everything one `tools/call` result shows
//! the model, and [`tool_result::decode_tool_result`], which composes the spec's rules for its
//! text items.
//!
//! The public modules, one line each:
//! - [`artifact_ref`]: the 20 rules of an artifact ref, [`artifact_ref::file_uri`] (their
//!   inverse) and [`artifact_ref::hash_capped`] (the one hashing pass over an artifact).
//! - [`canonical_json`]: compact JSON with sorted keys, for measuring and hashing values.
//! - [`content_lines`]: the items of a result that are not text, and their metadata lines.
//! - [`envelope`]: detecting an `odek.tool-result/v1` envelope; the schema ids and the ref cap.
//! - [`error`]: [`ContractError`], every rule's failure in the spec's words.
//! - [`error_chain`]: an error and its causes as the one line a transport failure shows.
//! - [`escaped_text`]: capping a text straight from its JSON string literal.
//! - `event_stream` (`client`): server-sent events read incrementally from any chunks, within
//!   a bound; the one parser of odek's model streams and MCP event streams.
//! - [`model_view`]: what the model receives from one `tools/call` result.
//! - [`names`]: server and tool names, and the exposed `<server>__<tool>` name.
//! - [`outcome`]: the words for how a run ended.
//! - [`quoting`]: the spec's `"<x>"` quoting.
//! - [`render`]: the artifact lines, field cleaning and forged-line indentation.
//! - [`runes`]: counting and cutting text in Unicode scalar values.
//! - [`secret_names`]: which environment variable names are secrets.
//! - [`tool_result`]: the decoding pipeline of one successful result's text items.
//! - [`truncation`]: the `max_result_chars` cap and its notice.
//! - `prompt_injection` (`client`): the injection rules for descriptions and schemas.
//! - `redaction` (`client`): secret redaction, known values and patterns.
//! - `regular_file` (`client`): opening and reading a file by name, regular files only, never
//!   blocking, within a cap.
//! - `untrusted` (`client`): the nonce'd wrapper around externally sourced text.

pub mod artifact_ref;
pub mod canonical_json;
pub mod content_lines;
pub mod envelope;
pub mod error;
pub mod error_chain;
pub mod escaped_text;
#[cfg(feature = "client")]
pub mod event_stream;
pub mod model_view;
pub mod names;
pub mod outcome;
#[cfg(feature = "client")]
pub mod prompt_injection;
pub mod quoting;
#[cfg(feature = "client")]
pub mod redaction;
#[cfg(feature = "client")]
pub mod regular_file;
pub mod render;
pub mod runes;
pub mod secret_names;
pub mod terminal_text;
pub mod tool_result;
pub mod truncation;
#[cfg(feature = "client")]
pub mod untrusted;

pub use error::ContractError;

/// The MCP protocol version of `odek-extension/v1`: the one odek sends in `initialize`, and the
/// one a server answers by default.
pub const PROTOCOL_VERSION: &str = "2025-03-26";
