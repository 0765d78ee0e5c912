//! Proxies for remote MCP servers, through the real `odek` and a forward proxy on 127.0.0.1
//! (issue 19): odek's HTTP client takes the proxy from the environment as curl does
//! (`HTTP_PROXY` for `http` URLs, `ALL_PROXY` when that is unset, lowercase names too, never
//! `HTTPS_PROXY` for them), `NO_PROXY` sends a host around it, and loopback is not exempt. Behind
//! a proxy the server's name is the proxy's to resolve, while a link-local address written in the
//! URL is still refused before anything is sent.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use std::process::Command;

use odek_test_support::forward_proxy::ForwardProxy;
use odek_test_support::listening::ListeningServer;
use run_support::*;
use serde_json::json;

const TOKEN: &str = "proxy-test-token-0a1b2c3d4e5f";

/// The fixture serving Streamable HTTP at a port the kernel picks, wanting `TOKEN`.
fn http_fixture() -> ListeningServer {
    let mut command = Command::new(odek_test_support::fixture_server());
    command.args(["--http", "127.0.0.1:0", "--bearer-token", TOKEN]);
    ListeningServer::start(command)
}

/// `odek ext call fx__echo` with `url` as the server "fx" and `env` added to odek's
/// environment: what it printed, and whether it succeeded.
fn echo_through(sandbox: &Sandbox, url: &str, env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    sandbox.global_config(&json!({"mcp_servers": {"fx": {
        "url": url, "token_env": "FX_TOKEN", "allow_insecure_http": true, "auto_approve": true,
    }}}));
    let mut command = sandbox.command(&["ext", "call", "fx__echo", r#"{"text":"through"}"#]);
    command.env("FX_TOKEN", TOKEN).envs(env.iter().copied());
    let output = command.output().unwrap();
    (output.status.code(), stdout(&output), stderr(&output))
}

#[test]
fn the_environment_s_proxy_carries_mcp_requests_and_no_proxy_sends_them_around_it() {
    let sandbox = Sandbox::new();
    let fixture = http_fixture();
    let proxy = ForwardProxy::start();
    let via = proxy.url();
    let cases: [(&[(&str, &str)], bool); 8] = [
        (&[("HTTP_PROXY", &via)], true),
        (&[("http_proxy", &via)], true),
        (&[("ALL_PROXY", &via)], true),
        // HTTPS_PROXY is for https URLs only.
        (&[("HTTPS_PROXY", &via)], false),
        (&[("HTTP_PROXY", &via), ("NO_PROXY", "127.0.0.1")], false),
        (&[("HTTP_PROXY", &via), ("NO_PROXY", "localhost, 127.0.0.0/8")], false),
        (&[("HTTP_PROXY", &via), ("no_proxy", "127.0.0.1")], false),
        // `*` matches every name, and no address: a URL naming 127.0.0.1 still goes through.
        (&[("HTTP_PROXY", &via), ("NO_PROXY", "*")], true),
    ];
    for (env, proxied) in cases {
        let before = proxy.requests().len();
        let (code, out, err) = echo_through(&sandbox, &fixture.url, env);
        assert_eq!((code, out.as_str()), (Some(0), "through\n"), "{env:?}: {err}");
        let requests = proxy.requests().split_off(before);
        if !proxied {
            assert!(requests.is_empty(), "{env:?} went through the proxy: {requests:?}");
            continue;
        }
        // Every request of the session, the closing DELETE included, went through the proxy to
        // the URL odek was given; over plain http the proxy sees the bearer token.
        let methods: Vec<&str> = requests.iter().map(|request| request.method.as_str()).collect();
        assert!(methods.iter().filter(|method| **method == "POST").count() >= 4, "{env:?}: {methods:?}");
        assert!(methods.contains(&"DELETE"), "{env:?}: {methods:?}");
        for request in &requests {
            assert_eq!(request.target, fixture.url, "{env:?}");
            assert_eq!(request.header("authorization"), Some(format!("Bearer {TOKEN}").as_str()), "{env:?}");
        }
    }
}

#[test]
fn behind_a_proxy_the_server_s_name_is_the_proxy_s_to_resolve_and_a_link_local_url_is_still_refused_red() {
    let sandbox = Sandbox::new();
    let fixture = http_fixture();
    let proxy = ForwardProxy::start();
    let port = fixture.url.trim_end_matches("/mcp").rsplit(':').next().unwrap();
    // `.invalid` never resolves (RFC 6761): the call works only because odek handed the name to
    // the proxy (which takes every name to 127.0.0.1) without resolving it.
    let named = format!("http://mcp.invalid:{port}/mcp");
    let (code, out, err) = echo_through(&sandbox, &named, &[("HTTP_PROXY", &proxy.url())]);
    assert_eq!((code, out.as_str()), (Some(0), "through\n"), "{err}");
    assert!(proxy.requests().iter().all(|request| request.target == named));

    let before = proxy.requests().len();
    let (code, out, err) = echo_through(&sandbox, "http://169.254.169.254/mcp", &[("HTTP_PROXY", &proxy.url())]);
    assert_eq!((code, out.as_str()), (Some(1), ""));
    assert!(
        err.contains("mcp server \"fx\": mcpclient fx: refusing to connect to link-local address 169.254.169.254"),
        "{err}"
    );
    assert_eq!(proxy.requests().len(), before, "nothing was sent");
}
