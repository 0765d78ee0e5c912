//! OAuth for remote MCP servers (issue 35), end to end: the real `odek` binary against the
//! scripted authorization server of `odek_test_support::oauth_server` and an MCP server that
//! wants its tokens, all on 127.0.0.1. `odek ext login` opens the authorization URL with a
//! `$BROWSER` script that GETs it with curl and follows the redirect to odek's loopback listener.
//! Then runs use, refresh and lose the tokens; and every hostile answer gets a clear error, in
//! bounded time, without a token in any output.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use odek_test_support::mcp_http::{McpHttpServer, McpScript, ToolAnswer};
use odek_test_support::oauth_server::{AsScript, Iss, OAuthServer, decode_base64};
use odek_test_support::openai::{Reply, ScriptedServer};
use run_support::*;
use serde_json::{Value, json};

/// Longest any command here may take: everything is bounded well below it.
const LIMIT: Duration = Duration::from_secs(120);

fn protected_server(authorization: &OAuthServer, tool: &str) -> McpHttpServer {
    let descriptor = json!({"name": tool, "description": "Search.", "inputSchema": {
        "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}});
    let script = McpScript::new().guard(authorization.guard()).tool(descriptor, |args: &Value| {
        ToolAnswer::text(format!("found {}", args["query"].as_str().unwrap_or_default()))
    });
    McpHttpServer::start(script)
}

/// A `$BROWSER` that visits the URL as a browser would: a GET, redirects followed.
fn browser(sandbox: &Sandbox) -> PathBuf {
    script(sandbox, "browser.sh", "#!/bin/sh\nexec curl -sS -L --max-redirs 3 --max-time 30 -o /dev/null \"$1\"\n")
}

fn script(sandbox: &Sandbox, name: &str, text: &str) -> PathBuf {
    let path = sandbox.home.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn configure(sandbox: &Sandbox, model: &ScriptedServer, servers: Value) {
    sandbox.global_config(&json!({"base_url": model.base_url(), "model": "test-model", "mcp_servers": servers}));
}

fn remote(server: &McpHttpServer) -> Value {
    json!({"url": server.url(), "auto_approve": true})
}

fn login(sandbox: &Sandbox, server: &str, browser: &PathBuf) -> std::process::Output {
    let mut command = sandbox.command(&["ext", "login", server, "--timeout", "60"]);
    command.env("BROWSER", browser);
    output_within(command, LIMIT)
}

fn token_file(sandbox: &Sandbox) -> PathBuf {
    sandbox.home.join(".odek").join("oauth").join("credentials.json")
}

/// One protected server `issues` of one authorization server, a model and a home.
struct Scene {
    authorization: OAuthServer,
    issues: McpHttpServer,
    model: ScriptedServer,
    sandbox: Sandbox,
}

impl Scene {
    fn new(script: AsScript, replies: Vec<Reply>) -> Scene {
        Scene::with_oauth(script, replies, None)
    }

    /// As [`Scene::new`], the entry's `oauth` object set.
    fn with_oauth(script: AsScript, replies: Vec<Reply>, oauth: Option<Value>) -> Scene {
        let authorization = OAuthServer::start(script);
        let issues = protected_server(&authorization, "search");
        let model = ScriptedServer::start(replies);
        let sandbox = Sandbox::new();
        let mut entry = remote(&issues);
        if let Some(oauth) = oauth {
            entry["oauth"] = oauth;
        }
        configure(&sandbox, &model, json!({"issues": entry}));
        Scene { authorization, issues, model, sandbox }
    }

    fn login(&self) -> std::process::Output {
        login(&self.sandbox, "issues", &browser(&self.sandbox))
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        output_within(self.sandbox.command(args), LIMIT)
    }
}

/// No token the authorization server issued appears in any of `texts`.
fn assert_no_token(authorization: &OAuthServer, texts: &[&str]) {
    let issued = authorization.issued_tokens();
    assert!(!issued.is_empty());
    for token in issued {
        for text in texts {
            assert!(!text.contains(&token), "a token leaked: {text}");
        }
    }
}

#[test]
fn login_then_a_run_uses_the_token_and_it_is_never_shown_red() {
    let scene = Scene::new(
        AsScript::new(),
        vec![Reply::tool_calls(vec![("call_1", "issues__search", r#"{"query":"crash"}"#)]), Reply::text("found them")],
    );
    let Scene { authorization, issues, model, sandbox } = &scene;
    let logged_in = scene.login();
    let (out, err) = (stdout(&logged_in), stderr(&logged_in));
    assert_eq!(logged_in.status.code(), Some(0), "{err}");
    assert_eq!(out, "logged in to \"issues\": logged in (expires in 60 min)\n");
    assert!(err.contains("odek: opening the authorization page with"), "{err}");
    assert_eq!((authorization.registrations(), authorization.authorizations()), (1, 1));
    assert_eq!(authorization.token_requests(), ["authorization_code"]);
    let mode = |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&token_file(sandbox)), 0o600);
    assert_eq!(mode(token_file(sandbox).parent().unwrap()), 0o700);

    let output =
        sandbox.command(&["run", "--session", "--events-jsonl", "e.jsonl", "find", "crashes"]).output().unwrap();
    sandbox.check_events(&["--events-jsonl", "e.jsonl"], &output);
    let (run_out, run_err) = (stdout(&output), stderr(&output));
    assert_eq!(output.status.code(), Some(0), "{run_err}");
    assert_eq!(run_out, "found them\n");
    assert!(tool_contents(&model.requests()[1])[0].contains("found crash"));
    let requests = issues.requests();
    let calls: Vec<_> = requests.iter().filter(|request| request.rpc_method() == Some("tools/call")).collect();
    assert_eq!(calls.len(), 1);
    assert!(calls[0].header("authorization").is_some_and(|value| value.starts_with("Bearer at-")));
    assert_eq!(authorization.token_requests(), ["authorization_code"], "the stored token was used as it is");

    let list = sandbox.command(&["ext", "list", "--json"]).output().unwrap();
    let listed: Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(listed["servers"][0]["auth"], "oauth: logged in (expires in 60 min)");
    let text_list = sandbox.command(&["ext", "list"]).output().unwrap();
    assert!(stdout(&text_list).contains("  auth: oauth: logged in (expires in 60 min)\n"), "{}", stdout(&text_list));

    let events = std::fs::read_to_string(sandbox.project.join("e.jsonl")).unwrap();
    let sessions: Vec<String> =
        sandbox.session_files().iter().map(|path| std::fs::read_to_string(path).unwrap()).collect();
    let mut texts = vec![out.as_str(), err.as_str(), run_out.as_str(), run_err.as_str(), events.as_str()];
    let (list_out, list_err) = (stdout(&list), stderr(&list));
    texts.extend([list_out.as_str(), list_err.as_str()]);
    texts.extend(sessions.iter().map(String::as_str));
    assert_no_token(authorization, &texts);
    // What went to the model never held it either.
    let sent_to_model = serde_json::to_string(&model.requests().iter().map(messages).collect::<Vec<_>>()).unwrap();
    assert_no_token(authorization, &[&sent_to_model]);
}

#[test]
fn expiry_during_a_run_with_ten_concurrent_calls_is_one_refresh() {
    let calls: Vec<(String, String)> =
        (0..10).map(|n| (format!("call_{n}"), format!(r#"{{"query":"q{n}"}}"#))).collect();
    let scene = Scene::new(
        AsScript::new(),
        vec![
            Reply::tool_calls(calls.iter().map(|(id, args)| (id.as_str(), "issues__search", args.as_str())).collect()),
            Reply::text("done"),
        ],
    );
    let Scene { authorization, model, .. } = &scene;
    assert_eq!(scene.login().status.code(), Some(0));
    authorization.invalidate_tokens_at_next_call();

    let output = scene.run(&["run", "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let results = tool_contents(&model.requests()[1]);
    assert_eq!(results.len(), 10);
    for (n, result) in results.iter().enumerate() {
        assert!(result.contains(&format!("found q{n}")), "{result}");
    }
    assert_eq!(authorization.token_requests(), ["authorization_code", "refresh_token"], "exactly one refresh");
    assert_no_token(authorization, &[&stdout(&output), &stderr(&output)]);
}

#[test]
fn a_revoked_refresh_token_fails_the_run_with_one_line_naming_login_red() {
    // Tokens that are about to expire: the run refreshes before its first request.
    let scene = Scene::new(AsScript::new().expires_in(Some(1)), vec![Reply::text("never")]);
    let Scene { authorization, model, sandbox, .. } = &scene;
    assert_eq!(scene.login().status.code(), Some(0));
    authorization.revoke_refresh_tokens();

    let output = scene.run(&["run", "go"]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(
        err.contains("mcp server \"issues\": mcpclient issues: initialize: authorization: the refresh token was refused (revoked or expired); run odek ext login issues"),
        "{err}"
    );
    assert!(model.requests().is_empty());
    assert_no_token(authorization, &[&stdout(&output), &err]);
    let list = sandbox.command(&["ext", "list", "--json"]).output().unwrap();
    let listed: Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(listed["servers"][0]["auth"], "oauth: not logged in — run odek ext login issues");
}

#[test]
fn a_headless_run_never_opens_a_browser_and_names_login_red() {
    let scene = Scene::new(AsScript::new(), vec![Reply::text("never")]);
    let Scene { authorization, sandbox, .. } = &scene;
    let marker = sandbox.home.join("browser-was-opened");
    let browser = script(sandbox, "browser.sh", &format!("#!/bin/sh\ntouch {}\n", marker.display()));

    let mut command = sandbox.command(&["run", "go"]);
    command.env("BROWSER", &browser);
    let output = output_within(command, LIMIT);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(
        err.contains("mcp server \"issues\": mcpclient issues: initialize: authorization: not logged in; run odek ext login issues"),
        "{err}"
    );
    assert!(!marker.exists(), "a headless run opened a browser");
    assert_eq!(authorization.authorizations(), 0);
}

#[test]
fn a_call_that_needs_more_scope_fails_headless_naming_the_scope_and_login_red() {
    let scene = Scene::new(
        AsScript::new().calls_need_scope("issues:write"),
        vec![Reply::tool_calls(vec![("call_1", "issues__search", r#"{"query":"a"}"#)]), Reply::text("stepped up")],
    );
    assert_eq!(scene.login().status.code(), Some(0));
    let output = scene.run(&["run", "go"]);
    let (out, err) = (stdout(&output), stderr(&output));
    let results = tool_contents(&scene.model.requests()[1]);
    assert!(
        results[0].contains("authorization: the server asks for scope \"issues:write\"; run odek ext login issues"),
        "{results:?} {out} {err}"
    );
    let calls = scene.issues.requests().iter().filter(|request| request.rpc_method() == Some("tools/call")).count();
    assert_eq!(calls, 1, "the call was not retried without the scope");
    assert_no_token(&scene.authorization, &[&out, &err]);
}

#[test]
fn two_servers_on_one_issuer_register_once_and_keep_their_own_tokens() {
    let authorization = OAuthServer::start(AsScript::new());
    let issues = protected_server(&authorization, "search");
    let wiki = protected_server(&authorization, "lookup");
    let model = ScriptedServer::start(vec![
        Reply::tool_calls(vec![
            ("call_1", "issues__search", r#"{"query":"a"}"#),
            ("call_2", "wiki__lookup", r#"{"query":"b"}"#),
        ]),
        Reply::text("both"),
    ]);
    let sandbox = Sandbox::new();
    configure(&sandbox, &model, json!({"issues": remote(&issues), "wiki": remote(&wiki)}));
    let browser = browser(&sandbox);
    for server in ["issues", "wiki"] {
        let output = login(&sandbox, server, &browser);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    }
    assert_eq!(authorization.registrations(), 1, "the registration with the issuer is reused");
    assert_eq!(authorization.token_requests(), ["authorization_code", "authorization_code"]);
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(token_file(&sandbox)).unwrap()).unwrap();
    let resources: Vec<&str> =
        stored["tokens"].as_array().unwrap().iter().map(|t| t["resource"].as_str().unwrap()).collect();
    assert_eq!(resources, [issues.url().as_str(), wiki.url().as_str()]);

    let output = output_within(sandbox.command(&["run", "go"]), LIMIT);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let results = tool_contents(&model.requests()[1]);
    assert!(results[0].contains("found a") && results[1].contains("found b"), "{results:?}");
}

#[test]
fn ci_uses_client_credentials_without_a_browser_red() {
    const SECRET: &str = "ci-client-secret-5f4e3d2c1b0a9988";
    let scene = Scene::with_oauth(
        AsScript::new().client("ci-bot", SECRET),
        vec![Reply::tool_calls(vec![("call_1", "issues__search", r#"{"query":"ci"}"#)]), Reply::text("ok")],
        Some(json!({"client_id": "ci-bot", "client_secret_env": "CI_SECRET", "grant": "client_credentials"})),
    );
    let Scene { authorization, sandbox, .. } = &scene;
    let mut command = sandbox.command(&["run", "--events-jsonl", "e.jsonl", "go"]);
    command.env("CI_SECRET", SECRET);
    let output = output_within(command, LIMIT);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert_eq!(authorization.token_requests(), ["client_credentials"]);
    assert_eq!(authorization.authorizations(), 0);
    let events = std::fs::read_to_string(sandbox.project.join("e.jsonl")).unwrap();
    for text in [stdout(&output), err, events] {
        assert!(!text.contains(SECRET), "the client secret leaked: {text}");
    }
    assert_no_token(authorization, &[&stdout(&output)]);
}

#[test]
fn ci_signs_a_private_key_jwt_assertion_with_an_ec_or_rsa_key() {
    for (algorithm, option, signed_with) in
        [("EC", "ec_paramgen_curve:P-256", "ES256"), ("RSA", "rsa_keygen_bits:2048", "RS256")]
    {
        let key_dir = tempfile::tempdir().unwrap();
        let key = key_dir.path().join("ci-key.pem");
        let generated = std::process::Command::new("openssl")
            .args(["genpkey", "-algorithm", algorithm, "-pkeyopt", option, "-out"])
            .arg(&key)
            .output()
            .unwrap();
        assert!(generated.status.success(), "{}", String::from_utf8_lossy(&generated.stderr));
        let scene = Scene::with_oauth(
            AsScript::new().client("ci-jwt", "unused-secret-value"),
            vec![Reply::text("ok")],
            Some(json!({"client_id": "ci-jwt", "private_key_file": key, "grant": "client_credentials"})),
        );
        let authorization = &scene.authorization;
        let output = scene.run(&["run", "go"]);
        assert_eq!(output.status.code(), Some(0), "{algorithm}: {}", stderr(&output));
        let token_request = authorization.requests().into_iter().find(|request| request.path == "/token").unwrap();
        let body = String::from_utf8_lossy(&token_request.body).into_owned();
        assert!(
            body.contains("client_assertion_type=urn%3Aietf%3Aparams%3Aoauth%3Aclient-assertion-type%3Ajwt-bearer"),
            "{body}"
        );
        let assertion = body.split('&').find_map(|pair| pair.strip_prefix("client_assertion=")).unwrap();
        let claims = assertion.split('.').nth(1).unwrap();
        let claims: Value = serde_json::from_slice(&decode_base64(claims)).unwrap();
        assert_eq!((claims["iss"].as_str(), claims["sub"].as_str()), (Some("ci-jwt"), Some("ci-jwt")));
        assert_eq!(claims["aud"], authorization.issuer());
        assert!(claims["exp"].as_u64() > claims["iat"].as_u64() && claims["jti"].is_string());
        let header: Value = serde_json::from_slice(&decode_base64(assertion.split('.').next().unwrap())).unwrap();
        assert_eq!(header["alg"], signed_with);
        assert!(!stderr(&output).contains("PRIVATE KEY"));
    }
}

#[test]
fn logout_forgets_and_revokes() {
    let scene = Scene::new(AsScript::new(), vec![Reply::text("never")]);
    assert_eq!(scene.login().status.code(), Some(0));
    let output = scene.run(&["ext", "logout", "issues"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "logged out of \"issues\"\n");
    assert_eq!(scene.authorization.revocations(), 2, "the refresh and the access token");
    let again = scene.run(&["ext", "logout", "issues"]);
    assert_eq!(stdout(&again), "\"issues\" had no stored tokens\n");
}

/// `odek ext login` against a hostile authorization server: its error line, in bounded time.
fn failed_login(server_script: AsScript, browser_text: Option<&str>) -> (String, OAuthServer) {
    let scene = Scene::new(server_script, vec![Reply::text("never")]);
    let sandbox = &scene.sandbox;
    let browser = match browser_text {
        Some(text) => script(sandbox, "browser.sh", text),
        None => browser(sandbox),
    };
    let output = login(sandbox, "issues", &browser);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert_eq!(stdout(&output), "");
    assert!(!token_file(sandbox).exists() || !std::fs::read_to_string(token_file(sandbox)).unwrap().contains("at-"));
    let issued = scene.authorization.issued_tokens();
    for token in issued {
        assert!(!err.contains(&token), "a token leaked: {err}");
    }
    (err, scene.authorization)
}

#[test]
fn huge_metadata_is_refused_red() {
    let (err, _) = failed_login(AsScript::new().metadata_answer(200, "application/json", vec![b' '; 4 << 20]), None);
    assert!(
        err.contains("authorization server metadata at ") && err.contains("the answer exceeds 262144 bytes"),
        "{err}"
    );
}

#[test]
fn malformed_metadata_is_refused_red() {
    let (err, _) = failed_login(AsScript::new().metadata_answer(200, "application/json", "{\"issuer\": [1"), None);
    assert!(err.contains("not a valid document"), "{err}");
}

#[test]
fn metadata_naming_another_issuer_is_refused_red() {
    let lying = json!({"issuer": "https://evil.example", "authorization_endpoint": "https://evil.example/a",
        "token_endpoint": "https://evil.example/t", "code_challenge_methods_supported": ["S256"]});
    let (err, _) = failed_login(AsScript::new().metadata_answer(200, "application/json", lying.to_string()), None);
    assert!(err.contains("issuer \"https://evil.example\" is not \"http://127.0.0.1:"), "{err}");
}

#[test]
fn a_metadata_redirect_to_another_host_is_not_followed_red() {
    let (err, _) = failed_login(AsScript::new().metadata_answer(302, "text/plain", "moved"), None);
    assert!(err.contains("http 302: a redirect (to \"http://127.0.0.2:9/elsewhere\") is not followed"), "{err}");
}

#[test]
fn an_authorization_server_on_a_link_local_address_is_refused_red() {
    let prm = json!({"authorization_servers": ["http://169.254.169.254/"]});
    let (err, _) = failed_login(AsScript::new().prm_answer(200, "application/json", prm.to_string()), None);
    assert!(err.contains("refusing \"http://169.254.169.254/\": a link-local address"), "{err}");
}

#[test]
fn a_token_answer_without_access_token_is_refused_red() {
    let (err, _) = failed_login(AsScript::new().without_access_token(), None);
    assert!(err.ends_with("mcp server \"issues\": token request: the answer has no access_token\n"), "{err}");
}

#[test]
fn a_redirect_from_another_issuer_is_refused_red() {
    let (err, _) = failed_login(AsScript::new().redirect_iss(Iss::Wrong("https://evil.example".into())), None);
    assert!(err.contains("authorization redirect: the issuer \"https://evil.example\" is not"), "{err}");
}

#[test]
fn a_redirect_with_a_wrong_state_is_refused_red() {
    let (err, authorization) = failed_login(AsScript::new().redirect_state_wrong(), None);
    assert!(err.contains("authorization redirect: the state does not match this login (refused)"), "{err}");
    assert!(authorization.token_requests().is_empty(), "the code was never exchanged");
}

#[test]
fn the_callback_hit_a_thousand_times_ends_the_login_red() {
    // The "browser" hammers odek's listener instead of authorizing.
    let hammer = "#!/bin/sh\nport=$(printf '%s' \"$1\" | sed -e 's/.*redirect_uri=http%3A%2F%2F127.0.0.1%3A\\([0-9]*\\).*/\\1/')\n\
        i=0\nwhile [ $i -lt 1000 ]; do curl -s -o /dev/null --max-time 5 \"http://127.0.0.1:$port/favicon.ico\"; i=$((i+1)); done\n";
    let (err, _) = failed_login(AsScript::new(), Some(hammer));
    assert!(err.contains("authorization redirect: more than 32 requests to other paths than the callback"), "{err}");
}

#[test]
fn a_corrupt_or_world_readable_token_file_is_refused_with_the_fix_red() {
    let scene = Scene::new(AsScript::new(), vec![Reply::text("never")]);
    let Scene { authorization, model, sandbox, .. } = &scene;
    assert_eq!(scene.login().status.code(), Some(0));
    let file = token_file(sandbox);

    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let output = output_within(sandbox.command(&["run", "go"]), LIMIT);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "{} is readable by group or others (mode 644); refusing to use it — run chmod 600 {}",
            file.display(),
            file.display()
        )),
        "{err}"
    );
    assert_no_token(authorization, &[&err]);

    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(&file, "{\"tokens\": [{\"access_token\": 12").unwrap();
    let output = scene.run(&["run", "go"]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(err.contains("is not a valid token file (") && err.contains("delete it and log in again"), "{err}");
    assert!(model.requests().is_empty());
}
