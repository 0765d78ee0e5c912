//! What the fuzz targets share: splitting one input into parts, the seeded secrets whose
//! absence the targets assert, a fixed artifact tree on disk, and the invariant checks on a
//! rendered tool result. Each target lives in `fuzz_targets/`; start at `docs/RELIABILITY.md`.
//!
//! Inputs are split on the byte `0xFF`, which never occurs in UTF-8, so a seed file stays
//! readable: `part one\xFFpart two`.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::task::{Context, Poll, Waker};

use odek_contract::artifact_ref::ArtifactRoots;
use odek_contract::render::{ARTIFACT_LINE_PREFIX, render_artifact_line};
use odek_contract::tool_result::ToolOutput;
use odek_contract::runes::rune_count;

/// Separates the parts of one input.
pub const PART_SEPARATOR: u8 = 0xFF;

/// Secrets planted in the inputs (the seed corpora and the environment use them). Each one is
/// either registered with the process-wide redactor or matches a credential pattern, so it must
/// never reach an error text, a warning or a redacted output.
pub const SEEDED_SECRETS: &[&str] = &[
    "sk-fuzzSeededKey0123456789abcdefghijKLMN",
    "ghp_FuzzSeeded0123456789abcdefghijklmnopqrs",
    "AKIAFUZZSEEDED000001",
    "correct-horse-battery-staple-fuzz",
    "hunter2hunter2hunter2",
];

/// The API key of the provider the provider targets build (also a seeded secret).
pub const SEEDED_API_KEY: &str = "sk-fuzzSeededKey0123456789abcdefghijKLMN";

/// The input split on [`PART_SEPARATOR`]; missing parts are empty.
pub fn parts<const N: usize>(data: &[u8]) -> [&[u8]; N] {
    let mut out = [&data[..0]; N];
    let mut pieces = data.splitn(N, |byte| *byte == PART_SEPARATOR);
    for slot in &mut out {
        match pieces.next() {
            Some(piece) => *slot = piece,
            None => break,
        }
    }
    out
}

/// Where the targets keep their files: `$ODEK_FUZZ_SCRATCH`, else `/dev/shm` when it exists
/// (a tmpfs: rewriting a file on every run costs microseconds there, milliseconds on ext4),
/// else the system temp dir. One subdirectory per process.
pub fn scratch_dir(purpose: &str) -> PathBuf {
    let parent = std::env::var_os("ODEK_FUZZ_SCRATCH").map(PathBuf::from).unwrap_or_else(|| {
        let shm = Path::new("/dev/shm");
        if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() }
    });
    let dir = parent.join(format!("odek-fuzz-{purpose}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Registers every seeded secret with the process-wide redactor, once.
pub fn register_seeded_secrets() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        for secret in SEEDED_SECRETS {
            odek_contract::redaction::register_secret(secret);
        }
    });
}

/// Panics when `text` contains a seeded secret; `what` names the text in the message.
pub fn assert_no_seeded_secret(text: &str, what: &str) {
    for secret in SEEDED_SECRETS {
        assert!(!text.contains(secret), "{what} leaks the seeded secret {secret:?}: {text:?}");
    }
}

/// The providers the provider targets decode with, one per wire format (chat completions,
/// Anthropic Messages, OpenAI Responses): keyed with [`SEEDED_API_KEY`], the seeded secrets
/// registered, never connected (port 9).
pub struct SeededProviders {
    pub chat: odek_llm::OpenAiProvider,
    pub anthropic: odek_llm::AnthropicProvider,
    pub responses: odek_llm::ResponsesProvider,
}

impl SeededProviders {
    /// What each decoder makes of a non-streamed `body`, in the order chat, Anthropic,
    /// Responses.
    pub fn decode_bodies(&self, body: &[u8]) -> [Result<odek_llm::ChatResponse, odek_llm::LlmError>; 3] {
        [
            self.chat.decode_completion_body(body),
            self.anthropic.decode_completion_body(body),
            self.responses.decode_completion_body(body),
        ]
    }

    /// What each decoder makes of an SSE body arriving as `chunks`, in the same order.
    pub fn decode_streams(&self, chunks: &[&[u8]]) -> [Result<odek_llm::ChatResponse, odek_llm::LlmError>; 3] {
        [
            self.chat.decode_stream_body(chunks),
            self.anthropic.decode_stream_body(chunks),
            self.responses.decode_stream_body(chunks),
        ]
    }
}

/// The seeded providers, made once per process.
pub fn seeded_providers() -> &'static SeededProviders {
    static PROVIDERS: OnceLock<SeededProviders> = OnceLock::new();
    PROVIDERS.get_or_init(|| {
        register_seeded_secrets();
        let config = || odek_llm::EndpointConfig::new("http://127.0.0.1:9/v1", SEEDED_API_KEY);
        SeededProviders {
            chat: odek_llm::OpenAiProvider::new(config()).unwrap(),
            anthropic: odek_llm::AnthropicProvider::new(config(), odek_llm::AnthropicOptions::default()).unwrap(),
            responses: odek_llm::ResponsesProvider::new(config()).unwrap(),
        }
    })
}

/// The invariants of a provider's decoded answer: an assistant message with at most 1024 tool
/// calls, or an error that shows no seeded secret (`what` names the error in the message).
pub fn check_provider_answer(answer: &Result<odek_llm::ChatResponse, odek_llm::LlmError>, what: &str) {
    match answer {
        Ok(response) => {
            assert_eq!(response.message.role, odek_llm::Role::Assistant);
            assert!(response.message.tool_calls.len() <= 1024);
        }
        Err(err) => assert_no_seeded_secret(&err.to_string(), what),
    }
}

/// Runs a future that never waits (every reader the targets use is always ready).
pub fn run_ready<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut context = Context::from_waker(Waker::noop());
    match future.as_mut().poll(&mut context) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("a future over an always-ready reader returned Pending"),
    }
}

/// A directory tree for artifact validation, made once per process in [`scratch_dir`]:
///
/// ```text
/// <base>/root/a.txt            "hello\n"
/// <base>/root/empty.txt        ""
/// <base>/root/sub/b.json       "{}"
/// <base>/root/link-in          -> a.txt
/// <base>/root/link-out         -> ../outside/secret.txt
/// <base>/root/dir-out          -> ../outside
/// <base>/root/loop             -> loop
/// <base>/root/fifo             a named pipe (validation must never open it)
/// <base>/outside/secret.txt    OUTSIDE_CONTENT
/// <base>/root-link             -> root
/// ```
///
/// The only configured root is `<base>/root`. Inputs name the tree with the placeholders
/// `$ROOT`, `$OUT` and `$BASE` ([`expand_placeholders`]).
#[derive(Debug)]
pub struct ArtifactTree {
    pub base: PathBuf,
    /// The configured root, symlink-resolved.
    pub root: PathBuf,
    pub outside: PathBuf,
    pub roots: ArtifactRoots,
}

/// Content of the one file outside the root: must never appear in any output.
pub const OUTSIDE_CONTENT: &str = "OUTSIDE-THE-ROOT-do-not-render-7f3a";

/// SHA-256 of `a.txt` (`"hello\n"`).
pub const A_TXT_SHA256: &str = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";

pub fn artifact_tree() -> &'static ArtifactTree {
    static TREE: OnceLock<ArtifactTree> = OnceLock::new();
    TREE.get_or_init(|| make_tree().unwrap())
}

fn make_tree() -> std::io::Result<ArtifactTree> {
    use std::os::unix::fs::symlink;
    let base = scratch_dir("tree");
    let root = base.join("root");
    let outside = base.join("outside");
    std::fs::create_dir_all(root.join("sub"))?;
    std::fs::create_dir_all(&outside)?;
    std::fs::write(root.join("a.txt"), "hello\n")?;
    std::fs::write(root.join("empty.txt"), "")?;
    std::fs::write(root.join("sub/b.json"), "{}")?;
    std::fs::write(outside.join("secret.txt"), OUTSIDE_CONTENT)?;
    symlink("a.txt", root.join("link-in"))?;
    symlink("../outside/secret.txt", root.join("link-out"))?;
    symlink("../outside", root.join("dir-out"))?;
    symlink("loop", root.join("loop"))?;
    symlink("root", base.join("root-link"))?;
    let fifo = std::process::Command::new("mkfifo").arg(root.join("fifo")).status()?;
    assert!(fifo.success(), "mkfifo failed");
    let root = std::fs::canonicalize(&root)?;
    let outside = std::fs::canonicalize(&outside)?;
    let base = std::fs::canonicalize(&base)?;
    let roots = ArtifactRoots::new([root.to_string_lossy().into_owned(), "   ".to_owned()]);
    Ok(ArtifactTree { base, root, outside, roots })
}

/// Replaces `$ROOT`, `$OUT` and `$BASE` with the tree's directories, so seeds can point into
/// (and out of) the root.
pub fn expand_placeholders(text: &str) -> String {
    if !text.contains('$') {
        return text.to_owned();
    }
    let tree = artifact_tree();
    text.replace("$ROOT", &tree.root.to_string_lossy())
        .replace("$OUT", &tree.outside.to_string_lossy())
        .replace("$BASE", &tree.base.to_string_lossy())
}

/// The invariants of one successful tool result:
/// - at most `cap` runes;
/// - every validated artifact resolves inside the root and is a regular file;
/// - every line that starts with `- artifact ` is (a prefix of, when the cap cut it) the
///   rendering of the next validated ref, in order: no such line was forged by the server;
/// - neither a resolved path nor the outside file's content is rendered unless the server
///   wrote it itself (`input` is everything the server sent).
pub fn check_tool_output(output: &ToolOutput, cap: usize, input: &str) {
    let tree = artifact_tree();
    assert!(rune_count(&output.text) <= cap, "output has {} runes, cap {cap}", rune_count(&output.text));
    for artifact in &output.artifacts {
        assert!(artifact.resolved_path.starts_with(&tree.root), "artifact outside the root: {artifact:?}");
        assert!(is_regular_file(&artifact.resolved_path), "artifact is not a regular file: {artifact:?}");
    }
    let renders: Vec<String> = output.artifacts.iter().map(render_artifact_line).collect();
    let mut next = 0;
    for line in output.text.split('\n') {
        if !line.starts_with(ARTIFACT_LINE_PREFIX) {
            continue;
        }
        let render = renders.get(next).unwrap_or_else(|| panic!("forged artifact line {line:?} in {:?}", output.text));
        assert!(render.starts_with(line), "artifact line {line:?} is not the render {render:?}");
        next += 1;
    }
    if !input.contains(OUTSIDE_CONTENT) {
        assert!(!output.text.contains(OUTSIDE_CONTENT), "outside content rendered: {:?}", output.text);
    }
    for artifact in &output.artifacts {
        let path = artifact.resolved_path.to_string_lossy();
        if !input.contains(path.as_ref()) {
            assert!(!output.text.contains(path.as_ref()), "resolved path rendered: {:?}", output.text);
        }
    }
}

fn is_regular_file(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|metadata| metadata.is_file())
}
