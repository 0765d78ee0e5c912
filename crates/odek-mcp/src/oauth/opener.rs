//! How a login shows the authorization URL: the program `$BROWSER` names (the usual convention:
//! the first of its `:`-separated commands, `%s` replaced by the URL or the URL appended), else
//! the desktop's opener (`xdg-open`, `open`) when installed, else the URL printed; `Print` always
//! prints; `Custom` hands it to the embedder (the conformance adapter's in-process browser).
//!
//! Start at [`Opener::open`]. A program started here is reaped by a task of its own while the
//! login waits.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use url::Url;

/// What an embedder's opener returns.
pub type OpenFuture = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;

/// Where the authorization URL goes.
#[derive(Clone)]
pub enum Opener {
    /// `$BROWSER`, else the desktop's opener, else printed.
    Browser,
    /// Printed only (`--no-browser`).
    Print,
    /// Handed to the embedder, which visits it.
    Custom(Arc<dyn Fn(Url) -> OpenFuture + Send + Sync>),
}

impl std::fmt::Debug for Opener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Opener::Browser => "Browser",
            Opener::Print => "Print",
            Opener::Custom(_) => "Custom",
        })
    }
}

impl Opener {
    /// Shows `url` to the user; `say` prints a line on stderr (the URL when nothing opened it).
    /// A program that cannot be started falls back to printing.
    pub(crate) async fn open(
        &self,
        url: &Url,
        env: &[(String, String)],
        say: &(dyn Fn(&str) + Send + Sync),
        limit: Duration,
    ) {
        let printed = || say(&format!("open this URL in a browser to authorize odek: {url}"));
        match self {
            Opener::Print => printed(),
            Opener::Custom(open) => {
                if let Err(error) = open(url.clone()).await {
                    say(&format!("the opener failed: {error}"));
                    printed();
                }
            }
            Opener::Browser => match browser_for(env, url) {
                Some((program, args)) => {
                    say(&format!("opening the authorization page with {}", program.display()));
                    if let Err(error) = start_reaped(&program, &args, limit) {
                        say(&format!("could not start {}: {error}", program.display()));
                        printed();
                    }
                }
                None => printed(),
            },
        }
    }
}

/// Most redirects [`in_process_browser`] follows.
const MAX_VISIT_REDIRECTS: usize = 5;

/// \[beyond\] An opener for a login nobody watches (the conformance adapter, tests): it GETs the
/// authorization URL and follows its redirects (at most 5, each answer's body dropped), so an
/// authorization server that redirects at once delivers the code to the loopback listener.
/// Every hop obeys [`crate::remote`]'s link-local rule; each waits at most `limit`.
pub fn in_process_browser(limit: Duration) -> Opener {
    Opener::Custom(Arc::new(move |url: Url| -> OpenFuture {
        Box::pin(async move {
            let client = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .dns_resolver(Arc::new(crate::remote::GuardedResolver))
                .timeout(limit)
                .build()
                .map_err(|error| error.to_string())?;
            let mut next = url;
            for _ in 0..=MAX_VISIT_REDIRECTS {
                let response =
                    client.get(next.clone()).send().await.map_err(|error| error.without_url().to_string())?;
                let location = response.headers().get(reqwest::header::LOCATION).and_then(|value| value.to_str().ok());
                match location.filter(|_| response.status().is_redirection()) {
                    Some(location) => next = next.join(location).map_err(|error| error.to_string())?,
                    None => return Ok(()),
                }
            }
            Err(format!("more than {MAX_VISIT_REDIRECTS} redirects"))
        })
    }))
}

/// The command that shows `url` in a browser, by the usual convention: `$BROWSER`'s first
/// command (`%s` replaced by the URL, else the URL appended), else `xdg-open` or `open` when on
/// `PATH`; `None` when there is neither. `env` is odek's environment. Every face that opens a
/// page for the person (a login, an elicitation's URL) starts what this names, without a shell.
pub fn browser_for(env: &[(String, String)], url: &Url) -> Option<(PathBuf, Vec<String>)> {
    browser_command(env, url).or_else(|| desktop_command(env, url))
}

/// `$BROWSER`'s first command with the URL.
fn browser_command(env: &[(String, String)], url: &Url) -> Option<(PathBuf, Vec<String>)> {
    let value = env.iter().find(|(name, _)| name == "BROWSER").map(|(_, value)| value.as_str())?;
    let first = value.split(':').map(str::trim).find(|command| !command.is_empty())?;
    let mut words = first.split_whitespace();
    let program = PathBuf::from(words.next()?);
    let mut args: Vec<String> = words.map(str::to_owned).collect();
    if args.iter().any(|arg| arg.contains("%s")) {
        for arg in &mut args {
            *arg = arg.replace("%s", url.as_str());
        }
    } else {
        args.push(url.to_string());
    }
    Some((program, args))
}

/// `xdg-open` or `open`, when one is on `PATH`.
fn desktop_command(env: &[(String, String)], url: &Url) -> Option<(PathBuf, Vec<String>)> {
    let path = env.iter().find(|(name, _)| name == "PATH").map(|(_, value)| value.as_str())?;
    ["xdg-open", "open"].iter().find_map(|name| {
        std::env::split_paths(path)
            .map(|dir| dir.join(name))
            .find(|candidate| candidate.is_file())
            .map(|program| (program, vec![url.to_string()]))
    })
}

/// Starts the program without a shell, its output discarded, and reaps it when it ends within
/// `limit`. It is never killed: a browser the user goes on using may outlive odek.
fn start_reaped(program: &std::path::Path, args: &[String], limit: Duration) -> std::io::Result<()> {
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    tokio::spawn(async move {
        let _ = tokio::time::timeout(limit, child.wait()).await;
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browser_names_the_first_command_and_takes_the_url_in_place_of_percent_s() {
        let url = Url::parse("https://auth.example.com/authorize?x=1").unwrap();
        let env = |value: &str| vec![("BROWSER".to_owned(), value.to_owned())];
        assert_eq!(browser_command(&env("firefox"), &url), Some((PathBuf::from("firefox"), vec![url.to_string()])));
        assert_eq!(
            browser_command(&env("w3m -o x=%s:lynx"), &url),
            Some((PathBuf::from("w3m"), vec!["-o".to_owned(), format!("x={url}")]))
        );
        assert_eq!(browser_command(&env(""), &url), None);
        assert_eq!(browser_command(&[], &url), None);
    }
}
