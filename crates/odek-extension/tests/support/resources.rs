//! One resources scenario for both transports: a server with `instructions`, four static
//! resources (text and blob), one made on each read, a reader for unlisted `dyn://` uris and
//! pages of two, and the checks that run against it through a function sending one request and
//! returning its JSON-RPC response.

use odek_extension::{
    MAX_SHOWN_URI_RUNES, ResourceBody, ResourceContents, ResourceDef, RpcError, Server, ToolDef, ToolResponse,
};
use serde_json::{Value, json};

pub const INSTRUCTIONS: &str = "Read docs://guide first; the logo is docs://logo.";

/// A 1x1 transparent PNG, base64.
pub const PIXEL_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

/// Sends one request (`method`, `params`) and returns the whole response.
pub type Rpc<'a> = dyn FnMut(&str, Option<Value>) -> Value + 'a;

/// The server of [`check_resources`].
pub fn resource_server() -> Server {
    Server::new("resources-test", "1.0.0")
        .page_size(2)
        .instructions(INSTRUCTIONS)
        .tool(ToolDef::new("echo", "Echoes text", json!({"type":"object"})), |_, arguments| async move {
            ToolResponse::text(arguments["text"].as_str().unwrap_or_default())
        })
        .resource(
            ResourceDef::new("docs://guide", "guide")
                .with_title("The guide")
                .with_description("How to use this server")
                .with_mime_type("text/markdown")
                .with_size(9),
            ResourceBody::text("# Guide\nA"),
        )
        .resource(
            ResourceDef::new("docs://logo", "logo").with_mime_type("image/png"),
            ResourceBody::blob_base64(PIXEL_PNG),
        )
        .resource(ResourceDef::new("docs://plain", "plain"), ResourceBody::text("no media type"))
        .resource(ResourceDef::new("docs://four", "four"), ResourceBody::text("4"))
        .dynamic_resource(ResourceDef::new("docs://live", "live"), |context, uri| async move {
            let text = format!("made for request {}", context.request_id());
            Ok(vec![ResourceContents::new(uri, ResourceBody::text(text))])
        })
        .resource_reader(|context, uri| async move {
            match uri.strip_prefix("dyn://echo/") {
                Some(rest) => Ok(vec![
                    ResourceContents::new(uri.clone(), ResourceBody::text(format!("{rest} via {}", context.method())))
                        .with_mime_type("text/plain"),
                ]),
                None => Err(RpcError::resource_not_found(&uri)),
            }
        })
}

fn read(rpc: &mut Rpc<'_>, uri: Value) -> Value {
    rpc("resources/read", Some(json!({"uri": uri})))
}

/// Everything the resources of [`resource_server`] answer, over whatever `rpc` talks to.
pub fn check_resources(rpc: &mut Rpc<'_>) {
    let initialized = rpc(
        "initialize",
        Some(json!({"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"0"}})),
    );
    assert_eq!(initialized["result"]["instructions"], json!(INSTRUCTIONS));
    assert_eq!(
        initialized["result"]["capabilities"],
        json!({"tools":{"listChanged":true},"resources":{"listChanged":false}})
    );

    // Pages of two with opaque cursors, as tools/list.
    let mut uris = Vec::new();
    let mut cursor: Option<Value> = None;
    let mut pages = Vec::new();
    loop {
        let response = rpc("resources/list", cursor.take().map(|cursor| json!({"cursor": cursor})));
        let page = response["result"].clone();
        for resource in page["resources"].as_array().expect("a resources array") {
            uris.push(resource["uri"].as_str().expect("a uri").to_owned());
        }
        pages.push(page.clone());
        match page.get("nextCursor") {
            Some(next) => cursor = Some(next.clone()),
            None => break,
        }
    }
    assert_eq!(uris, ["docs://guide", "docs://logo", "docs://plain", "docs://four", "docs://live"]);
    assert_eq!(pages.len(), 3);
    assert_eq!(
        pages[0]["resources"][0],
        json!({"uri":"docs://guide","name":"guide","title":"The guide","description":"How to use this server","mimeType":"text/markdown","size":9})
    );
    assert_eq!(pages[0]["resources"][1], json!({"uri":"docs://logo","name":"logo","mimeType":"image/png"}));
    assert_eq!(rpc("resources/list", Some(json!({"cursor":"offset-1000"})))["result"], json!({"resources":[]}));

    // Reads: text, blob, no media type, the reader.
    assert_eq!(
        read(rpc, json!("docs://guide"))["result"],
        json!({"contents":[{"uri":"docs://guide","mimeType":"text/markdown","text":"# Guide\nA"}]})
    );
    assert_eq!(
        read(rpc, json!("docs://logo"))["result"],
        json!({"contents":[{"uri":"docs://logo","mimeType":"image/png","blob":PIXEL_PNG}]})
    );
    assert_eq!(
        read(rpc, json!("docs://plain"))["result"],
        json!({"contents":[{"uri":"docs://plain","text":"no media type"}]})
    );
    let live = read(rpc, json!("docs://live"));
    assert_eq!(
        live["result"],
        json!({"contents":[{"uri":"docs://live","text":format!("made for request {}", live["id"])}]})
    );
    assert_eq!(
        read(rpc, json!("dyn://echo/abc"))["result"],
        json!({"contents":[{"uri":"dyn://echo/abc","mimeType":"text/plain","text":"abc via resources/read"}]})
    );

    // Unknown uris, from the server and from the reader; bad params.
    assert_eq!(
        read(rpc, json!("nope://x\u{1b}[31m"))["error"],
        json!({"code":-32002,"message":"Resource not found: \"nope://x [31m\"","data":{"uri":"nope://x\u{1b}[31m"}})
    );
    assert_eq!(
        read(rpc, json!("dyn://other"))["error"],
        json!({"code":-32002,"message":"Resource not found: \"dyn://other\"","data":{"uri":"dyn://other"}})
    );
    for (params, message) in [
        (Some(json!({"uri": 42})), "resources/read params.uri must be a string"),
        (Some(json!({"uri": null})), "resources/read params.uri must be a string"),
        (Some(json!({"name": "docs://guide"})), "resources/read params.uri must be a string"),
        (Some(json!(["docs://guide"])), "resources/read params must be an object"),
        (None, "resources/read params must be an object"),
    ] {
        assert_eq!(rpc("resources/read", params)["error"], json!({"code":-32602,"message":message}));
    }
    for cursor in [json!("bogus"), json!(7), json!(format!("offset-{}", "9".repeat(1024 * 1024)))] {
        let response = rpc("resources/list", Some(json!({"cursor": cursor})));
        assert_eq!(response["error"], json!({"code":-32602,"message":"invalid cursor"}));
    }
    assert_eq!(rpc("ping", None)["result"], json!({}), "still serving");
}

/// A uri of a megabyte is not found without being echoed whole (`…_red`: the message and the
/// `data` would otherwise double whatever the client sent).
pub fn check_huge_uri_is_not_echoed(rpc: &mut Rpc<'_>) {
    rpc("initialize", Some(json!({"protocolVersion":"2025-03-26"})));
    let huge = "h".repeat(1024 * 1024);
    let response = read(rpc, Value::from(huge));
    assert_eq!(
        response["error"],
        json!({"code":-32002,"message":format!("Resource not found: \"{}…\"", "h".repeat(MAX_SHOWN_URI_RUNES))})
    );
    assert!(response.to_string().len() < 1024, "the answer stays small");
}

/// A server without resources: no capability, no instructions, `-32601` for the methods.
pub fn check_no_resources(rpc: &mut Rpc<'_>) {
    let initialized = rpc("initialize", Some(json!({"protocolVersion":"2025-03-26"})));
    assert_eq!(initialized["result"]["capabilities"], json!({"tools":{"listChanged":true}}));
    assert!(initialized["result"].get("instructions").is_none());
    for method in ["resources/list", "resources/read", "resources/templates/list"] {
        assert_eq!(
            rpc(method, Some(json!({"uri":"docs://guide"})))["error"],
            json!({"code":-32601,"message":"method not found"}),
            "{method}"
        );
    }
}

/// The server of [`check_no_resources`]: one tool, nothing else.
pub fn plain_server() -> Server {
    Server::new("plain-test", "1.0.0")
        .tool(ToolDef::new("echo", "Echoes text", json!({"type":"object"})), |_, _| async { ToolResponse::text("") })
}
