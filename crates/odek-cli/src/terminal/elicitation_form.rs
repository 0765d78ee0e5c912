//! \[beyond\] An MCP server's elicitation asked on the REPL's terminal ([`TerminalElicitor`]): the
//! server's message, then the form field by field with each default shown (Enter keeps it) and
//! each answer checked as it is typed (a wrong one is asked again); or, for a URL, the URL with
//! its host set apart, opened only when the person says so. Every text is the server's, so it is
//! made terminal-safe before it is shown. One form at a time; the status line is hidden while it
//! is on the screen. `odek run` never asks: its elicitations follow the config's policy.

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};

use odek::mcp::Elicitor;
use odek::mcp::elicitation::{
    Choice, ElicitFuture, ElicitationAnswer, ElicitationKind, ElicitationRequest, Elicited, FieldKind, Form, FormField,
};
use odek::mcp::oauth::browser_for;
use odek_contract::quoting::quote;
use odek_contract::terminal_text::{Layout, sanitise_for_terminal};
use serde_json::{Map, Value};

use super::batch_gate::read_key;
use super::console::read_answer_line;
use super::status::StatusDisplay;

/// The running turn's status display, as the terminal face holds it.
pub type SharedDisplay = Arc<Mutex<Option<Arc<StatusDisplay>>>>;

/// Asks elicitations on the process's terminal (stdin a terminal), on stderr.
pub struct TerminalElicitor {
    display: SharedDisplay,
}

impl TerminalElicitor {
    /// `None` when stdin is not a terminal.
    pub fn new(display: SharedDisplay) -> Option<TerminalElicitor> {
        std::io::IsTerminal::is_terminal(&std::io::stdin()).then_some(TerminalElicitor { display })
    }
}

/// One form on the screen at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

impl Elicitor for TerminalElicitor {
    fn elicit(&self, request: ElicitationRequest) -> ElicitFuture {
        let display = self.display.lock().unwrap_or_else(PoisonError::into_inner).clone();
        Box::pin(async move {
            let asked = tokio::task::spawn_blocking(move || {
                let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
                match &display {
                    Some(display) => display.suspend(|| ask(&request)),
                    None => ask(&request),
                }
            });
            Elicited::Answered(asked.await.unwrap_or(ElicitationAnswer::Cancel))
        })
    }
}

fn ask(request: &ElicitationRequest) -> ElicitationAnswer {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(heading(request).as_bytes());
    let legend = match &request.kind {
        ElicitationKind::Form(_) => "[y] fill in  [n] decline  [c] cancel: ",
        ElicitationKind::Url { .. } => "[y] open it  [n] decline  [c] cancel: ",
    };
    let key = read_key(|| {
        stderr.write_all(legend.as_bytes())?;
        stderr.flush()
    });
    let echo = key.map(char::from).filter(char::is_ascii_graphic).unwrap_or('-');
    let _ = writeln!(stderr, "{echo}");
    match key {
        Some(b'y' | b'Y') => {}
        Some(b'n' | b'N') => return ElicitationAnswer::Decline,
        _ => return ElicitationAnswer::Cancel,
    }
    drop(stderr);
    match &request.kind {
        ElicitationKind::Form(form) => fill_in(form).map_or(ElicitationAnswer::Cancel, ElicitationAnswer::Accept),
        ElicitationKind::Url { url, .. } => {
            open_url(url);
            ElicitationAnswer::Accept(Map::new())
        }
    }
}

/// Who asks, and what: the server's message, and for a URL the host on a line of its own.
pub fn heading(request: &ElicitationRequest) -> String {
    let server = quote(&request.server);
    let message = indent(&sanitise_for_terminal(&request.message, Layout::Lines));
    match &request.kind {
        ElicitationKind::Form(form) => format!(
            "❓ MCP server {server} asks for input ({} field(s); Enter keeps the [default], Ctrl-D cancels):\n{message}",
            form.fields.len()
        ),
        ElicitationKind::Url { url, .. } => format!(
            "🔗 MCP server {server} asks you to open a page:\n{message}  host: {}\n  url:  {}\n",
            sanitise_for_terminal(url.host_str().unwrap_or_default(), Layout::Line),
            sanitise_for_terminal(url.as_str(), Layout::Line)
        ),
    }
}

fn indent(text: &str) -> String {
    text.lines().map(|line| format!("  {line}\n")).collect()
}

/// Asks each field in turn until its answer fits; `None` when the input ends (Ctrl-D) or a
/// stop signal arrives.
fn fill_in(form: &Form) -> Option<Map<String, Value>> {
    let mut content = Map::new();
    for field in &form.fields {
        loop {
            let typed = prompt_line(&field_prompt(field))?;
            let typed = typed.trim_end_matches(['\n', '\r']);
            match answer_for(field, typed) {
                Ok(Some(value)) => {
                    content.insert(field.name.clone(), value);
                    break;
                }
                Ok(None) => break,
                Err(problem) => {
                    let _ = writeln!(std::io::stderr(), "  ✗ {}", sanitise_for_terminal(&problem, Layout::Line));
                }
            }
        }
    }
    Some(content)
}

/// What typing `typed` for `field` gives: its value, `None` to leave an optional field out, or
/// why it does not fit. An empty line keeps the default; a required field without one must be
/// answered.
pub fn answer_for(field: &FormField, typed: &str) -> Result<Option<Value>, String> {
    if !typed.trim().is_empty() {
        return field.parse_answer(typed).map(Some);
    }
    match (&field.default, &field.kind) {
        (Some(default), _) => Ok(Some(default.clone())),
        // No option chosen is an answer of its own, which `minItems` may refuse.
        (None, FieldKind::Choices { .. }) => field.parse_answer("").map(Some),
        (None, _) if field.required => Err("required".to_owned()),
        (None, _) => Ok(None),
    }
}

/// The lines asking for `field`: its label (and `*` when required), its description, its
/// options, and the default in brackets.
pub fn field_prompt(field: &FormField) -> String {
    let safe = |text: &str| sanitise_for_terminal(text, Layout::Line).into_owned();
    let mut prompt = String::new();
    if let Some(description) = field.description.as_deref().filter(|text| !text.trim().is_empty()) {
        prompt.push_str(&format!("  ({})\n", safe(description)));
    }
    match &field.kind {
        FieldKind::Choice { options } | FieldKind::Choices { options, .. } => {
            prompt.push_str(&format!("  {}\n", options_line(options)));
        }
        _ => {}
    }
    let hint = match &field.kind {
        FieldKind::Boolean => " (y/n)",
        FieldKind::Choices { .. } => " (numbers or values, comma-separated)",
        FieldKind::Number { integer: true, .. } => " (a whole number)",
        FieldKind::Number { .. } => " (a number)",
        FieldKind::Text { format: Some(format), .. } => match format.as_str() {
            "email" => " (an email address)",
            "uri" => " (a URI)",
            "date" => " (YYYY-MM-DD)",
            _ => " (YYYY-MM-DDTHH:MM:SSZ)",
        },
        _ => "",
    };
    let required = if field.required { " *" } else { "" };
    let default =
        field.default.as_ref().map(|default| format!(" [{}]", safe(&shown_value(default)))).unwrap_or_default();
    prompt.push_str(&format!("  {}{required}{hint}{default}: ", safe(field.label())));
    prompt
}

fn options_line(options: &[Choice]) -> String {
    let shown: Vec<String> = options
        .iter()
        .enumerate()
        .map(|(index, option)| {
            let label = option.title.as_deref().unwrap_or(&option.value);
            format!("{}. {}", index + 1, sanitise_for_terminal(label, Layout::Line))
        })
        .collect();
    shown.join("  ")
}

/// A default as a person would type it: text as it is, a list comma-separated.
fn shown_value(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Bool(true) => "y".to_owned(),
        Value::Bool(false) => "n".to_owned(),
        Value::Array(items) => items.iter().map(shown_value).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

fn prompt_line(prompt: &str) -> Option<String> {
    {
        let mut stderr = std::io::stderr().lock();
        stderr.write_all(prompt.as_bytes()).ok()?;
        stderr.flush().ok()?;
    }
    read_answer_line()
}

/// Opens `url` in the person's browser ([`browser_for`]: `$BROWSER`, else the desktop's opener);
/// says so when it cannot (the URL is on the screen to open by hand). Never through a shell.
fn open_url(url: &url::Url) {
    let env: Vec<(String, String)> = std::env::vars().filter(|(name, _)| name == "BROWSER" || name == "PATH").collect();
    let Some((program, args)) = browser_for(&env, url) else {
        let _ = writeln!(std::io::stderr(), "  no browser to open it with; open the URL above yourself");
        return;
    };
    let started = std::process::Command::new(&program)
        .args(&args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match started {
        // The opener is reaped off this thread; the person's browser is not waited for.
        Ok(mut child) => drop(std::thread::spawn(move || child.wait())),
        Err(error) => {
            let _ = writeln!(
                std::io::stderr(),
                "  could not start {}: {error}; open the URL above yourself",
                quote(&program.display().to_string())
            );
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use odek::mcp::elicitation::read_elicitation;
    use serde_json::json;

    use super::*;

    fn request(params: Value) -> ElicitationRequest {
        read_elicitation("docs", Some(&params.to_string())).unwrap()
    }

    fn form(schema: Value) -> Form {
        match request(json!({"message": "m", "requestedSchema": schema})).kind {
            ElicitationKind::Form(form) => form,
            ElicitationKind::Url { .. } => panic!("a form"),
        }
    }

    #[test]
    fn a_field_shows_its_options_and_default_and_enter_keeps_it() {
        let form = form(json!({"type": "object", "properties": {
            "colour": {"type": "string", "title": "Colour", "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}], "default": "g"},
            "age": {"type": "integer", "description": "in years"},
            "ok": {"type": "boolean", "default": true}
        }, "required": ["age"]}));
        let field = |name: &str| form.fields.iter().find(|field| field.name == name).unwrap();
        assert_eq!(field_prompt(field("colour")), "  1. Red  2. Green\n  Colour [g]: ");
        assert_eq!(field_prompt(field("age")), "  (in years)\n  age * (a whole number): ");
        assert_eq!(field_prompt(field("ok")), "  ok (y/n) [y]: ");
        assert_eq!(answer_for(field("colour"), ""), Ok(Some(json!("g"))));
        assert_eq!(answer_for(field("colour"), "1"), Ok(Some(json!("r"))));
        assert_eq!(answer_for(field("age"), ""), Err("required".to_owned()));
        assert_eq!(answer_for(field("age"), "abc"), Err("not a whole number".to_owned()));
        assert_eq!(answer_for(field("age"), "41"), Ok(Some(json!(41))));
    }

    #[test]
    fn an_optional_field_left_empty_is_left_out() {
        let form = form(json!({"type": "object", "properties": {"note": {"type": "string"}}}));
        assert_eq!(answer_for(&form.fields[0], "  "), Ok(None));
    }

    #[test]
    fn server_text_cannot_repaint_the_form_red() {
        let request = request(
            json!({"message": "hi\u{1b}[2J\u{202E}there", "requestedSchema": {"type": "object", "properties": {
                "x\u{1b}]0;t\u{7}": {"type": "string", "title": "a\u{1b}[31mb", "default": "d\u{1b}[Ke"}
            }}}),
        );
        let ElicitationKind::Form(form) = &request.kind else { panic!("a form") };
        let shown = format!("{}{}", heading(&request), field_prompt(&form.fields[0]));
        assert!(!shown.contains(['\u{1b}', '\u{7}', '\u{202E}']), "{shown:?}");
    }

    #[test]
    fn a_url_is_shown_with_its_host_apart() {
        let request = request(
            json!({"mode": "url", "message": "Connect your account", "url": "https://login.example.com/a?b=c", "elicitationId": "e"}),
        );
        assert_eq!(
            heading(&request),
            "🔗 MCP server \"docs\" asks you to open a page:\n  Connect your account\n  host: login.example.com\n  url:  https://login.example.com/a?b=c\n"
        );
    }
}
