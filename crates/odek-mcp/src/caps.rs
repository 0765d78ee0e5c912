//! The fixed caps on what one server's listing may make odek hold (spec `mcp-client.md` §4 and
//! §6, [beyond] where marked). A leaf: discovery enforces them, the errors name them, and the
//! output-schema compiler bounds a schema by the same size as an input schema.

/// Most `tools/list` pages read from one server.
pub(crate) const MAX_TOOL_PAGES: usize = 100;
/// [beyond] Largest sum of `tools/list` results across pages, in bytes (4 MiB). Real servers
/// list well under 1 MiB; the cap bounds what a paginating server can make odek hold.
pub(crate) const MAX_TOOL_LIST_BYTES: usize = 4 * 1024 * 1024;
/// [beyond] Most tools one server may list, all pages together (1,000). Counted while a page is
/// parsed: odek never builds more than this many tools of one listing.
pub(crate) const MAX_TOOLS_PER_SERVER: usize = 1000;
/// Largest canonical JSON of an input schema (256 KiB).
pub(crate) const MAX_SCHEMA_BYTES: usize = 262_144;
