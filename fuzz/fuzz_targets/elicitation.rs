//! A server's `elicitation/create` params (MCP 2025-06-18 form mode, 2025-11-25 URL mode), read
//! by odek's bounded reader, then a form's defaults and an answer checked against it: no panic,
//! no more fields than the cap, and a form's own defaults always fit it.
//!
//! Input: `[split, params…, answer…]`: the bytes before `split`'s position (scaled) are the
//! params, the rest is the answer object.

#![no_main]

use libfuzzer_sys::fuzz_target;
use odek_mcp::elicitation::{ElicitationKind, MAX_FORM_FIELDS, read_elicitation};

fuzz_target!(|data: &[u8]| {
    let Some((split, rest)) = data.split_first() else { return };
    let at = rest.len() * usize::from(*split) / 256;
    let (params, answer) = rest.split_at(at);
    let params = String::from_utf8_lossy(params);
    let Ok(request) = read_elicitation("fuzz", Some(&params)) else { return };
    let ElicitationKind::Form(form) = &request.kind else { return };
    assert!(form.fields.len() <= MAX_FORM_FIELDS);
    if let Some(defaults) = form.filled_with_defaults() {
        assert_eq!(form.check_answer(&defaults), Ok(()), "a form's own defaults must fit it");
    }
    if let Ok(serde_json::Value::Object(content)) = serde_json::from_slice(answer) {
        let _ = form.check_answer(&content);
    }
    for field in &form.fields {
        let _ = field.parse_answer(&String::from_utf8_lossy(answer));
        let _ = field.label();
    }
});
