//! The library half of the `odek` binary: everything `main.rs` needs that a test can drive
//! without a real home directory, environment or terminal.
//!
//! - [`config`] loads `~/.odek/secrets.env`, `~/.odek/config.json` and `./odek.json` into one
//!   [`config::Config`] (spec `config.md` §1–§6, §9, §12). Start at [`config::load_config`].
//! - [`approvals`] decides which project MCP servers may be spawned and which MCP tools may be
//!   registered (spec `config.md` §13). Start at [`approvals::McpApprovals`].
//!
//! Neither module prints: warnings come back as data and prompts go through
//! [`approvals::Console`], so `main.rs` owns stdout and stderr.
//!
//! - [`commands`] runs one parsed command ([`cli`]) and returns its typed outcome;
//!   [`outcome::exit_code`] is the one place an exit code is chosen.
//! - [`terminal`] is what `odek run` shows on stderr (status line, call records, the batch
//!   approval card) and the warning printer; [`interrupt`] turns SIGINT, SIGTERM and SIGHUP into
//!   a cancelled run.

pub mod cli;
pub mod commands;
pub mod interrupt;
pub mod outcome;
pub(crate) mod repl_interrupt;
pub mod terminal;
