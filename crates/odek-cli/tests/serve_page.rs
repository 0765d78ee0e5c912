//! The page `odek serve` shows a person, in a real browser: Debian's headless Chromium driven
//! over WebDriver (`chromedriver`, through fantoccini) against the real `odek serve` answering
//! from a replay script. The page signs in from its `?token=` address, shows a refused budget's
//! error, starts a run from its form, shows the run's plan and tool calls as they stream in,
//! answers an approval card, and shows the outcome; text a model or tool wrote — markup
//! included — appears as text, never as elements; the selected run survives a reload; a
//! phone-wide window does not scroll sideways; the system's dark preference is followed.
//! Screenshots land in `target/serve-page/` for review.
//!
//! Without Chromium and chromedriver the test prints a notice and passes, except under
//! `CI=true`, where it fails (the rule of `interop.rs`); `.ci/run` installs both.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use odek_test_support::serve::Replayed;
use serde_json::{Value, json};

/// Debian's `chromium` and `chromium-driver` packages.
const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// How long any one wait of this test may take.
const DEADLINE: Duration = Duration::from_secs(30);

/// Markup a model or tool might write: it must show as these characters, never become an element.
const MARKUP: &str = "<img src=x onerror=document.body.dataset.pwned=1>";

/// A failed step: what the test was doing and what it saw.
type Failed = Box<dyn std::error::Error + Send + Sync>;

macro_rules! ensure {
    ($condition:expr, $($message:tt)+) => {
        if !$condition {
            return Err(format!($($message)+).into());
        }
    };
}

/// Whether the browser is installed; a notice when not (a failure under `CI=true`).
fn browser_installed(test: &str) -> bool {
    let missing: Vec<&str> = [CHROMIUM, CHROMEDRIVER].into_iter().filter(|path| !Path::new(path).is_file()).collect();
    if missing.is_empty() {
        return true;
    }
    let message = format!(
        "headless Chromium not installed (missing {}); apt-get install chromium chromium-driver",
        missing.join(", ")
    );
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{test}: {message}");
    // Past libtest's capture, so the notice shows in a passing run.
    let _ = writeln!(std::io::stderr(), "odek serve page test skipped: {message}");
    false
}

/// Where the screenshots go: `target/serve-page/`.
fn screenshot_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/serve-page");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A port nobody listens on now (the driver binds it a moment later).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Signals the process group `child` leads, then waits (bounded); killed past the deadline.
fn stop_group(child: &mut Child) {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    let _ = nix::sys::signal::killpg(pid, nix::sys::signal::Signal::SIGTERM);
    let started = Instant::now();
    loop {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        if started.elapsed() > DEADLINE {
            let _ = nix::sys::signal::killpg(pid, nix::sys::signal::Signal::SIGKILL);
            let _ = child.wait();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // What the driver started (Chromium and its helpers) shares its group; Chromium's crash
    // handler, in a session of its own, ends when its browser does.
    let _ = nix::sys::signal::killpg(pid, nix::sys::signal::Signal::SIGKILL);
}

/// `chromedriver` on a loopback port, in a process group of its own so that it and every
/// browser it started are signalled together when the guard drops.
struct Driver {
    child: Child,
    url: String,
}

impl Driver {
    async fn start() -> Driver {
        let port = free_port();
        let mut command = Command::new(CHROMEDRIVER);
        command.arg(format!("--port={port}")).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut driver = Driver { child: command.spawn().unwrap(), url: format!("http://127.0.0.1:{port}") };
        let client = reqwest::Client::builder().timeout(Duration::from_secs(2)).build().unwrap();
        let started = Instant::now();
        loop {
            let status = client.get(format!("{}/status", driver.url)).send().await;
            if let Ok(response) = status
                && let Ok(body) = response.json::<Value>().await
                && body["value"]["ready"] == true
            {
                return driver;
            }
            assert!(driver.child.try_wait().unwrap().is_none(), "chromedriver exited before it was ready");
            assert!(started.elapsed() < DEADLINE, "chromedriver not ready within {DEADLINE:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// A fresh headless browser with `extra` flags, in a profile of its own.
    async fn browser(&self, profile: &Path, extra: &[&str]) -> Client {
        let mut args = vec![
            "--headless".to_owned(),
            "--no-sandbox".to_owned(),
            "--disable-gpu".to_owned(),
            "--disable-quic".to_owned(),
            "--no-first-run".to_owned(),
            "--disable-background-networking".to_owned(),
            "--disable-component-update".to_owned(),
            "--disable-sync".to_owned(),
            "--disable-dev-shm-usage".to_owned(),
            "--hide-scrollbars".to_owned(),
            format!("--user-data-dir={}", profile.display()),
        ];
        args.extend(extra.iter().map(|flag| (*flag).to_owned()));
        let mut capabilities = serde_json::Map::new();
        capabilities.insert("goog:chromeOptions".to_owned(), json!({"binary": CHROMIUM, "args": args}));
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        ClientBuilder::new(connector).capabilities(capabilities).connect(&self.url).await.unwrap()
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        stop_group(&mut self.child);
    }
}

/// From here on, every breach of the page's Content-Security-Policy lands in `window.violations`.
async fn record_policy_violations(client: &Client) -> Result<(), Failed> {
    client
        .execute(
            "window.violations = []; document.addEventListener('securitypolicyviolation', \
             e => window.violations.push(e.violatedDirective + ' ' + e.blockedURI))",
            Vec::new(),
        )
        .await?;
    Ok(())
}

/// Runs `script` (a function body) until it returns something other than null or false.
async fn wait_for(client: &Client, what: &str, script: &str) -> Result<Value, Failed> {
    let started = Instant::now();
    loop {
        let value = client.execute(script, Vec::new()).await?;
        if !value.is_null() && value != Value::Bool(false) {
            return Ok(value);
        }
        if started.elapsed() > DEADLINE {
            return Err(format!("timed out after {DEADLINE:?} waiting for {what}").into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The visible text of the first element `css` finds.
/// Clicks the first element `css` selects, found again if the page re-rendered it between the
/// find and the click.
async fn click(client: &Client, css: &str) -> Result<(), Failed> {
    let started = std::time::Instant::now();
    loop {
        let clicked = match client.find(Locator::Css(css)).await {
            Ok(element) => element.click().await.map(drop),
            Err(error) => Err(error),
        };
        match clicked {
            Ok(()) => return Ok(()),
            Err(error) if error.to_string().contains("stale element") && started.elapsed() < DEADLINE => {}
            Err(error) => return Err(format!("clicking {css}: {error}").into()),
        }
    }
}

/// The rendered text of the first element `css` selects, read in one script (the page re-renders
/// live parts as events arrive, so an element found in one call may be gone by the next).
async fn text_of(client: &Client, css: &str) -> Result<String, Failed> {
    let text = client
        .execute("const e = document.querySelector(arguments[0]); return e ? e.innerText : null", vec![json!(css)])
        .await?;
    match text {
        Value::String(text) => Ok(text),
        _ => Err(format!("nothing on the page matches {css}").into()),
    }
}

async fn screenshot(client: &Client, name: &str) -> Result<PathBuf, Failed> {
    let path = screenshot_dir().join(name);
    std::fs::write(&path, client.screenshot().await?)?;
    Ok(path)
}

/// Sizes the window so its viewport is `width` wide and shows the document's whole height (up
/// to `at_most`), for a full-page picture: the window's own frame is measured and added.
async fn fit_viewport(client: &Client, width: u32, at_most: u32) -> Result<(), Failed> {
    let measure = "return [window.outerWidth - window.innerWidth, window.outerHeight - window.innerHeight, \
                   document.documentElement.scrollHeight]";
    let sizes = client.execute(measure, Vec::new()).await?;
    let number = |index: usize| u32::try_from(sizes[index].as_u64().unwrap_or(0)).unwrap_or(0);
    let height = number(2).clamp(600, at_most);
    client.set_window_size(width + number(0), height + number(1)).await?;
    Ok(())
}

fn shell(id: &str, command: &str) -> Value {
    json!({"tool_calls": [{"id": id, "name": "shell", "arguments": {"command": command}}]})
}

/// The model's script: a plan, a sub-agent, two harmless commands, one that asks (code
/// execution, its command carrying markup), the plan completed, and an answer carrying markup;
/// then, for a follow-up run in the same session, a command that waits to be cancelled.
fn script() -> Value {
    let turns = json!([
        {"tool_calls": [{"id": "p1", "name": "plan", "arguments": {"verb": "create", "steps": [
            {"id": "look", "title": "Look around the project"},
            {"id": "greet", "title": "Print a greeting"}]}}]},
        {"tool_calls": [{"id": "d1", "name": "delegate_tasks", "arguments": {"tasks": [{"goal": "Count the files"}]}}]},
        {"tool_calls": [
            {"id": "s1", "name": "shell", "arguments": {"command": "echo hello"}},
            {"id": "s2", "name": "shell", "arguments": {"command": "ls -la"}}]},
        {"tool_calls": [{"id": "p2", "name": "plan", "arguments": {"verb": "update", "updates": [
            {"id": "look", "status": "done"}, {"id": "greet", "status": "in_progress"}]}}]},
        shell("x1", &format!("sh -c 'echo \"{MARKUP}\"'")),
        {"tool_calls": [{"id": "p3", "name": "plan", "arguments": {"verb": "complete", "step_id": "greet"}}]},
        {"content": format!("Greeted. The command printed {MARKUP} and that is all.")},
        shell("w1", "sleep 60")
    ]);
    let mut turns = turns.as_array().unwrap().clone();
    // Growing usage per call, as a real model reports.
    for (index, turn) in turns.iter_mut().enumerate() {
        turn["usage"] = json!({"input_tokens": 1400 + 350 * index, "output_tokens": 40 + 15 * index});
    }
    json!({
        "schema": "odek.replay/v1",
        "turns": turns,
        "subagents": [{"goal": "Count the files", "turns": [{"content": "There are no files yet."}], "subagents": []}]
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_runs_a_task_live_answers_an_approval_and_shows_markup_as_text_red() {
    if !browser_installed("the_page_runs_a_task_live_answers_an_approval_and_shows_markup_as_text_red") {
        return;
    }
    let config = json!({
        "approval_timeout_seconds": 120,
        "limits": {"max_tool_calls": 20, "max_input_tokens": 100000, "max_output_tokens": 2000}
    });
    let binary = Path::new(env!("CARGO_BIN_EXE_odek"));
    let mut served = Replayed::start(binary, &script(), &config, &["--max-concurrent-runs", "1"]);
    let driver = Driver::start().await;
    let profiles = tempfile::tempdir().unwrap();
    let client = driver.browser(&profiles.path().join("light"), &["--window-size=1280,1000"]).await;
    let outcome = scenario(&client, &served).await;
    if let Err(failed) = &outcome {
        let _ = screenshot(&client, "failure.png").await;
        let text = client.execute("return document.body.innerText", Vec::new()).await;
        eprintln!(
            "the page when it failed:\n{}",
            text.ok().and_then(|text| text.as_str().map(str::to_owned)).unwrap_or_default()
        );
        let _ = client.clone().close().await;
        panic!("{failed}");
    }
    client.close().await.unwrap();

    // The system's dark preference: the page's colours follow it.
    let dark = driver.browser(&profiles.path().join("dark"), &["--window-size=1280,1000", "--force-dark-mode"]).await;
    let checked = dark_scheme(&dark, &mut served, outcome.unwrap()).await;
    if checked.is_err() {
        let _ = screenshot(&dark, "failure-dark.png").await;
    }
    dark.close().await.unwrap();
    checked.unwrap();
}

/// The whole walk through the page; the run's id at the end.
async fn scenario(client: &Client, served: &Replayed) -> Result<String, Failed> {
    // The token from the address becomes a cookie, and leaves the address bar.
    client.goto(&format!("{}/?token={}", served.base, served.token)).await?;
    ensure!(client.current_url().await?.as_str() == format!("{}/", served.base), "the token stayed in the address");
    client.wait().at_most(DEADLINE).for_element(Locator::Css("#task")).await?;
    // Whatever the page renders from here on must keep to its Content-Security-Policy.
    record_policy_violations(client).await?;
    wait_for(client, "the connection badge", "return document.querySelector('#connection .badge.ok') !== null").await?;

    // A budget above the operator's: the server's 400 shows beside the form, the run does not start.
    client.find(Locator::Css(".options summary")).await?.click().await?;
    let tool_calls = client.find(Locator::Css("input[data-limit=max_tool_calls]")).await?;
    ensure!(tool_calls.attr("placeholder").await?.as_deref() == Some("≤ 20"), "the operator's budget is not shown");
    tool_calls.send_keys("100").await?;
    client.find(Locator::Css("#task")).await?.send_keys("Greet the project").await?;
    client.find(Locator::Css("#start-button")).await?.click().await?;
    wait_for(
        client,
        "the refused budget's error",
        "const e = document.getElementById('form-error'); return !e.hidden && e.textContent",
    )
    .await?;
    let refused = text_of(client, "#form-error").await?;
    ensure!(
        refused.contains("limits.max_tool_calls 100 is above the operator's (20)"),
        "the 400 is not shown: {refused:?}"
    );
    ensure!(client.find_all(Locator::Css("#run-list li")).await?.is_empty(), "a refused run is listed");

    // A budget below it: the run starts, is selected, and its id goes to the address.
    tool_calls.clear().await?;
    tool_calls.send_keys("10").await?;
    client.find(Locator::Css("#start-button")).await?.click().await?;
    client.find(Locator::Css(".options summary")).await?.click().await?;
    let hash =
        wait_for(client, "the run in the address", "return location.hash.startsWith('#run=') && location.hash").await?;
    let run_id = hash.as_str().unwrap_or_default().trim_start_matches("#run=").to_owned();
    ensure!(run_id.len() == 32, "not a run id: {run_id:?}");
    wait_for(
        client,
        "the run view naming the task",
        "return document.querySelector('.run-title')?.textContent === 'Greet the project'",
    )
    .await?;

    // The run waits for the approval: its plan and tool calls are already on the page.
    wait_for(
        client,
        "the approval card",
        "return document.querySelector('.approval button[data-decision=allow]') !== null",
    )
    .await?;
    wait_for(client, "the plan's titles", "return document.querySelectorAll('.plan .step').length === 2").await?;
    let plan = text_of(client, ".plan").await?;
    ensure!(plan.contains("Look around the project") && plan.contains("Print a greeting"), "plan: {plan:?}");
    wait_for(client, "the plan's progress", "return [...document.querySelectorAll('.plan .step-status')].map(s => s.textContent).join() === 'Done,In progress'").await?;
    let calls = client.execute("return [...document.querySelectorAll('.calls .call')].map(c => [c.querySelector('.call-tool').textContent, c.querySelector('.badge').textContent, c.querySelector('.call-meta code').textContent])", Vec::new()).await?;
    ensure!(
        calls
            == json!([
                ["plan", "OK", "p1"],
                ["delegate_tasks", "OK", "d1"],
                ["shell", "OK", "s1"],
                ["shell", "OK", "s2"],
                ["plan", "OK", "p2"],
                ["shell", "Approval", "x1"]
            ]),
        "the tool calls as they stand: {calls}"
    );
    let echo = text_of(client, ".calls .call:nth-child(3)").await?;
    ensure!(
        echo.contains("argv0=echo") && echo.contains(" B"),
        "a completed call shows its arguments and result size: {echo:?}"
    );
    wait_for(
        client,
        "the run's status while it waits",
        "return document.querySelector('.run-status')?.textContent === 'Needs approval'",
    )
    .await?;
    let subagent = text_of(client, ".subagents .subagent").await?;
    ensure!(subagent.starts_with("Succeeded") && subagent.contains("depth 1"), "the sub-agent: {subagent:?}");
    let card = text_of(client, ".approval").await?;
    ensure!(card.contains("shell") && card.contains("code_execution") && card.contains(MARKUP), "the card: {card:?}");
    let shown = "const b = document.querySelector('[data-action=cancel]'); return !!b && b.offsetParent !== null";
    ensure!(client.execute(shown, Vec::new()).await? == json!(true), "no Cancel while running");
    screenshot(client, "approval.png").await?;

    // Allowed: the run goes on to its answer.
    click(client, ".approval button[data-decision=allow]").await?;
    wait_for(
        client,
        "the outcome",
        "const o = document.querySelector('.outcome'); return o && !o.hidden && o.textContent.includes('Succeeded')",
    )
    .await?;
    let answer = text_of(client, ".answer").await?;
    ensure!(answer == format!("Greeted. The command printed {MARKUP} and that is all."), "the answer: {answer:?}");
    wait_for(client, "the approval's resolution", "return document.querySelector('.approval.resolved') !== null")
        .await?;
    ensure!(text_of(client, ".approval .badge").await? == "Allowed", "the resolved card");
    wait_for(
        client,
        "the plan completed",
        "return document.querySelector('[data-section=plan] .section-count')?.textContent === '2 of 2 done'",
    )
    .await?;
    let last = client.execute("const c = document.querySelector('.calls .call:nth-child(6)'); return [c.querySelector('.badge').textContent, c.querySelector('.call-duration').textContent !== '', c.querySelector('.call-size').textContent !== '']", Vec::new()).await?;
    ensure!(last == json!(["OK", true, true]), "the approved call, completed: {last}");
    ensure!(client.find_all(Locator::Css("[data-action=cancel]")).await?.is_empty(), "Cancel after the run ended");
    wait_for(
        client,
        "the run listed as succeeded",
        "return document.querySelector('#run-list li .badge')?.textContent === 'Succeeded'",
    )
    .await?;

    // Markup stayed text: no element was made from it, and its handler never ran.
    let unsafe_dom = client
        .execute(
            "return [document.querySelectorAll('img').length, document.body.dataset.pwned === undefined]",
            Vec::new(),
        )
        .await?;
    ensure!(unsafe_dom == json!([0, true]), "markup became elements: [img count, no handler ran] = {unsafe_dom}");
    let violations = client.execute("return window.violations", Vec::new()).await?;
    ensure!(violations == json!([]), "the page broke its Content-Security-Policy: {violations}");
    let wide = screenshot(client, "wide-viewport.png").await?;
    fit_viewport(client, 1280, 2000).await?;
    screenshot(client, "wide.png").await?;

    // A reload keeps the run, its calls replayed from the server's log.
    client.refresh().await?;
    wait_for(client, "the run after a reload", "const o = document.querySelector('.outcome'); return o && !o.hidden && document.querySelectorAll('.calls .call').length === 7").await?;
    ensure!(text_of(client, ".answer").await? == answer, "the answer after a reload");

    // A follow-up in the same session, started from the keyboard. While it runs, a third run is
    // past the bound of one running run: the server's 429 shows beside the form. Cancel stops
    // the follow-up.
    click(client, "[data-action=follow-up]").await?;
    let session = text_of(client, "#session-chip-id").await?;
    ensure!(session.len() > 20, "the follow-up's session: {session:?}");
    let task = client.find(Locator::Css("#task")).await?;
    task.send_keys("Wait a minute").await?;
    task.send_keys("\u{E009}\u{E007}\u{E000}").await?; // Ctrl+Enter, then the keys released.
    let second = format!("return location.hash.startsWith('#run=') && location.hash !== '#run={run_id}'");
    wait_for(client, "the second run", &second).await?;
    wait_for(
        client,
        "its command running",
        "return document.querySelector('.calls .call.run .call-args')?.textContent === 'argv0=sleep  ·  class=safe'",
    )
    .await?;
    task.send_keys("One too many").await?;
    client.find(Locator::Css("#start-button")).await?.click().await?;
    let busy = wait_for(
        client,
        "the 429 beside the form",
        "const e = document.getElementById('form-error'); return !e.hidden && e.textContent",
    )
    .await?;
    ensure!(
        busy == json!("Too many runs at once: 1 runs are running (the limit); retry when one ends. Try again in 5 s."),
        "the 429: {busy}"
    );
    ensure!(text_of(client, ".run-meta").await?.contains(&session), "the follow-up runs in another session");
    click(client, "[data-action=cancel]").await?;
    wait_for(client, "the cancelled outcome", "const o = document.querySelector('.outcome'); return o && !o.hidden && o.querySelector('.badge').textContent === 'Cancelled'").await?;
    ensure!(client.find_all(Locator::Css("[data-action=cancel]")).await?.is_empty(), "Cancel after the run ended");

    // Back to the first run through the list.
    click(client, &format!("#run-list a[href='#run={run_id}']")).await?;
    wait_for(client, "the first run again", "const o = document.querySelector('.outcome'); return o && !o.hidden && document.querySelector('.answer')?.textContent.startsWith('Greeted.')").await?;

    // A phone's width: one column, nothing wider than the screen.
    fit_viewport(client, 375, 812).await?;
    let fits = wait_for(
        client,
        "a 375-px layout",
        "return window.innerWidth === 375 && [window.innerWidth, document.documentElement.scrollWidth]",
    )
    .await?;
    ensure!(
        fits[1].as_u64() <= fits[0].as_u64(),
        "the page scrolls sideways at a phone's width: [innerWidth, scrollWidth] = {fits}"
    );
    let columns = client
        .execute(
            "return getComputedStyle(document.querySelector('.layout')).gridTemplateColumns.split(' ').length",
            Vec::new(),
        )
        .await?;
    ensure!(columns == json!(1), "not one column at a phone's width: {columns}");
    screenshot(client, "phone.png").await?;
    client.execute("document.getElementById('run-view').scrollIntoView()", Vec::new()).await?;
    screenshot(client, "phone-run.png").await?;
    eprintln!("odek serve page screenshots: {}", wide.parent().unwrap_or(&wide).display());
    Ok(run_id)
}

/// The run's page under a dark system preference: dark background, light text; then the
/// server stops, and the page says so.
async fn dark_scheme(client: &Client, served: &mut Replayed, run_id: String) -> Result<(), Failed> {
    client.goto(&format!("{}/?token={}", served.base, served.token)).await?;
    client.goto(&format!("{}/#run={run_id}", served.base)).await?;
    wait_for(client, "the run, dark", "const o = document.querySelector('.outcome'); return o && !o.hidden").await?;
    let prefers = client.execute("return matchMedia('(prefers-color-scheme: dark)').matches", Vec::new()).await?;
    ensure!(prefers == json!(true), "the browser does not prefer dark");
    let background = client.execute("return getComputedStyle(document.body).backgroundColor", Vec::new()).await?;
    ensure!(background == json!("rgb(14, 17, 22)"), "the page ignores the dark preference: background {background}");
    screenshot(client, "dark.png").await?;

    // The server gone: starting a run says so, and so does the connection badge.
    served.stop();
    client.find(Locator::Css("#task")).await?.send_keys("Anyone there?").await?;
    client.find(Locator::Css("#start-button")).await?.click().await?;
    let gone = wait_for(
        client,
        "the lost server",
        "const e = document.getElementById('form-error'); return !e.hidden && e.textContent",
    )
    .await?;
    ensure!(gone == json!("odek serve cannot be reached; is it still running?"), "a lost server: {gone}");
    ensure!(text_of(client, "#connection").await? == "Offline", "the connection badge");
    ensure!(text_of(client, "#banner").await?.contains("Lost the connection to odek serve"), "the banner");
    Ok(())
}

/// An MCP server's form on the page: its fields shown with their defaults, an answer that does
/// not fit refused with the server's reason beside the buttons, a fitting one accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_fills_an_elicitation_form_with_its_defaults_and_shows_a_refused_answer() {
    if !browser_installed("the_page_fills_an_elicitation_form_with_its_defaults_and_shows_a_refused_answer") {
        return;
    }
    let fixture = json!({
        "command": odek_test_support::fixture_server(),
        "args": ["--mode", "elicitation", "--protocol-version", "2025-11-25"],
        "protocol_version": "2025-11-25",
        "auto_approve": true,
    });
    let script = json!({"schema": "odek.replay/v1", "turns": [
        {"tool_calls": [{"id": "e1", "name": "fixture__elicit", "arguments": {"message": format!("Tell me {MARKUP}")}}]},
        {"content": "thanks"},
    ]});
    let binary = Path::new(env!("CARGO_BIN_EXE_odek"));
    let served = Replayed::start(binary, &script, &json!({"mcp_servers": {"fixture": fixture}}), &[]);
    let http = reqwest::Client::builder().timeout(DEADLINE).build().unwrap();
    let started: Value = http
        .post(format!("{}/api/runs", served.base))
        .bearer_auth(&served.token)
        .json(&json!({"task": "ask me"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let run_id = started["run_id"].as_str().unwrap().to_owned();

    let driver = Driver::start().await;
    let profiles = tempfile::tempdir().unwrap();
    let client = driver.browser(&profiles.path().join("form"), &["--window-size=1280,1000"]).await;
    let outcome = elicitation_scenario(&client, &served, &run_id).await;
    if outcome.is_err() {
        let _ = screenshot(&client, "failure-elicitation.png").await;
    }
    client.close().await.unwrap();
    outcome.unwrap();
}

async fn elicitation_scenario(client: &Client, served: &Replayed, run_id: &str) -> Result<(), Failed> {
    client.goto(&format!("{}/?token={}", served.base, served.token)).await?;
    record_policy_violations(client).await?;
    client.execute("location.hash = arguments[0]", vec![json!(format!("#run={run_id}"))]).await?;
    let accept = ".elicitation button[data-elicitation-action=accept]";
    wait_for(client, "the form", &format!("return document.querySelector('{accept}') !== null")).await?;
    let shown = client
        .execute(
            "const f = document.querySelector('.elicitation'); \
             return [f.querySelector('[name=age]').value, f.querySelector('[name=colour]').value, \
                     f.querySelector('[name=name]').value, f.querySelector('.approval-summary').textContent, \
                     f.querySelector('.approval-tool').textContent]",
            Vec::new(),
        )
        .await?;
    ensure!(
        shown == json!(["36", "green", "Ada", format!("Tell me {MARKUP}"), "fixture"]),
        "the form's defaults, message and server: {shown}"
    );
    screenshot(client, "elicitation.png").await?;

    client.execute("document.querySelector('.elicitation [name=age]').value = '200'", Vec::new()).await?;
    click(client, accept).await?;
    wait_for(
        client,
        "the refused answer's reason",
        "return document.querySelector('.elicitation .form-error')?.textContent.includes('age: at most 150')",
    )
    .await?;
    ensure!(
        client.find_all(Locator::Css(".elicitation.resolved")).await?.is_empty(),
        "a refused answer closed the form"
    );

    client.execute("document.querySelector('.elicitation [name=age]').value = '40'", Vec::new()).await?;
    click(client, accept).await?;
    wait_for(client, "the accepted form", "return document.querySelector('.elicitation.resolved') !== null").await?;
    ensure!(text_of(client, ".elicitation .badge").await? == "Accepted", "the resolved card");
    wait_for(client, "the outcome", "return document.querySelector('.answer')?.textContent === 'thanks'").await?;
    let unsafe_dom = client.execute("return document.querySelectorAll('img').length", Vec::new()).await?;
    ensure!(unsafe_dom == json!(0), "markup in the message became an element");
    let violations = client.execute("return window.violations", Vec::new()).await?;
    ensure!(violations == json!([]), "the page broke its Content-Security-Policy: {violations}");
    Ok(())
}
