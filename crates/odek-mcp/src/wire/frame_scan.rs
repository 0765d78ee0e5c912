//! The routing pass over one stdout line: a single validating JSON scan that accepts exactly the
//! lines the spec lets through (a JSON object; `mcp-client.md` §7) and records where the
//! top-level members the router needs sit, without building anything.
//!
//! It mirrors what serde_json accepts when it reads the frame struct: RFC 8259 syntax, any
//! nesting depth, a known member given twice rejected. Lines it does not handle itself (a key
//! with escapes, bytes that are not UTF-8) are reported as [`Scan::Unusual`] for the serde path.
//! The same scanner reads a `tools/call` result's members ([`read_call_result`]), so the usual
//! response is decoded without serde. Start at [`index_frame`].

use std::borrow::Cow;
use std::ops::Range;

use odek_contract::content_lines::MAX_CONTENT_ITEM_LINES;
use serde::Deserialize;
use serde_json::value::RawValue;

/// Where the members the router reads sit in the line (the raw JSON text of each value).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FrameIndex {
    pub id: Option<Range<usize>>,
    pub method: Option<Range<usize>>,
    pub result: Option<Range<usize>>,
    pub error: Option<Range<usize>>,
    pub params: Option<Range<usize>>,
}

/// What the scan decided about a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scan {
    Frame(FrameIndex),
    /// Not a JSON object, or a known member twice: the line is skipped.
    Invalid,
    /// Valid or not, this scanner leaves it to serde_json.
    Unusual,
}

/// Where the router's members sit in one line, or `None` when the line is to be skipped: the
/// scan's answer, or serde_json's for the lines the scan leaves to it.
pub fn index_frame(line: &[u8]) -> Option<FrameIndex> {
    match scan_frame(line) {
        Scan::Frame(index) => Some(index),
        Scan::Invalid => None,
        Scan::Unusual => serde_index(line),
    }
}

/// The fields of a frame as serde_json reads them, borrowed from the line.
#[derive(Deserialize)]
struct WireFrame<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
}

/// The frame read by serde_json (`null` members read as absent).
fn serde_index(line: &[u8]) -> Option<FrameIndex> {
    // Only objects: serde would happily read an array like `[1,2]` into the struct.
    let frame = super::parse_object::<WireFrame<'_>>(line).ok()?;
    let range = |raw: Option<&RawValue>| {
        raw.map(|raw| {
            let start = raw.get().as_ptr().addr().saturating_sub(line.as_ptr().addr());
            start..start + raw.get().len()
        })
    };
    Some(FrameIndex {
        id: range(frame.id),
        method: range(frame.method),
        result: range(frame.result),
        error: range(frame.error),
        params: range(frame.params),
    })
}

/// Scans one line (without its newline).
pub fn scan_frame(line: &[u8]) -> Scan {
    if std::str::from_utf8(line).is_err() {
        return Scan::Unusual;
    }
    let mut scanner = Scanner { bytes: line, at: 0, nesting: Nesting::default() };
    match scanner.frame() {
        Ok(index) => Scan::Frame(index),
        Err(Outcome::Invalid) => Scan::Invalid,
        Err(Outcome::Unusual) => Scan::Unusual,
    }
}

/// A `tools/call` result as the call pipeline reads it (spec §10, docs/MODEL-VIEW.md).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CallResult<'a> {
    /// Every text item, and the non-text items up to [`MAX_CONTENT_ITEM_LINES`], in order.
    pub content: Vec<ContentItem<'a>>,
    /// Non-text items past [`MAX_CONTENT_ITEM_LINES`]: read and counted, never kept, so a line of
    /// millions of tiny items costs no memory per item.
    pub omitted_items: usize,
    pub is_error: Option<bool>,
    /// `structuredContent` as its raw JSON text (`None` when absent or `null`).
    pub structured: Option<&'a str>,
    /// Non-text items in `content`.
    non_text_kept: usize,
}

impl<'a> CallResult<'a> {
    /// Appends an item read in order, or only counts it past the cap: the one way `content` is
    /// filled.
    pub fn push_item(&mut self, mut item: ContentItem<'a>) {
        if item.is_text() {
            // Only a text item's `text` is ever read.
            item.members = None;
        } else if self.non_text_kept >= MAX_CONTENT_ITEM_LINES {
            self.omitted_items += 1;
            return;
        } else {
            self.non_text_kept += 1;
        }
        self.content.push(item);
    }
}

/// One content item: its `type` and `text`, and the members only a non-text item's metadata line
/// reads, each a raw JSON literal (`None` when absent or `null`). Small (48 bytes): a text item
/// never carries the rest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContentItem<'a> {
    /// `type` (`None` when absent or `null`; any other non-string is a parse error).
    pub kind: Option<Cow<'a, str>>,
    pub text: Option<&'a str>,
    /// `None` for a text item, and for an item that gives none of them.
    pub members: Option<Box<ItemMembers<'a>>>,
}

/// The members of a non-text item the model view reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ItemMembers<'a> {
    pub data: Option<&'a str>,
    pub mime_type: Option<&'a str>,
    pub uri: Option<&'a str>,
    pub name: Option<&'a str>,
    pub size: Option<&'a str>,
    pub resource: Option<&'a str>,
}

impl<'a> ContentItem<'a> {
    /// Whether the item's `type` is `text`.
    pub fn is_text(&self) -> bool {
        self.kind.as_deref() == Some("text")
    }

    /// The non-text members (all absent when none was given).
    pub fn members(&self) -> ItemMembers<'a> {
        self.members.as_deref().cloned().unwrap_or_default()
    }

    /// The non-text members, to fill in while the item is read.
    pub(crate) fn members_mut(&mut self) -> &mut ItemMembers<'a> {
        self.members.get_or_insert_with(Box::default)
    }
}

/// Reads a `tools/call` result with the scanner, or `None` for the results it leaves to
/// serde_json (escaped keys, a member twice, anything serde might read differently or reject).
pub fn scan_call_result(json: &[u8]) -> Option<CallResult<'_>> {
    std::str::from_utf8(json).ok()?;
    let mut scanner = Scanner { bytes: json, at: 0, nesting: Nesting::default() };
    scanner.call_result().ok()
}

/// A member serde's derived structs read may appear once; a second one is serde's error to give.
fn once(seen: &mut bool) -> Step<()> {
    if std::mem::replace(seen, true) { Err(Outcome::Unusual) } else { Ok(()) }
}

enum Outcome {
    Invalid,
    Unusual,
}

type Step<T> = Result<T, Outcome>;

/// Open containers, innermost last: one bit each (object = 1), spilling past 128 levels.
#[derive(Default)]
struct Nesting {
    bits: u128,
    depth: usize,
    spill: Vec<bool>,
}

impl Nesting {
    fn push(&mut self, object: bool) {
        if self.depth < 128 {
            self.bits = (self.bits & !(1 << self.depth)) | (u128::from(object) << self.depth);
        } else {
            self.spill.push(object);
        }
        self.depth += 1;
    }

    /// Whether the innermost open container is an object; `None` at top level.
    fn top(&self) -> Option<bool> {
        match self.depth {
            0 => None,
            depth if depth <= 128 => Some(self.bits & (1 << (depth - 1)) != 0),
            _ => self.spill.last().copied(),
        }
    }

    fn pop(&mut self) {
        if self.depth > 128 {
            self.spill.pop();
        }
        self.depth = self.depth.saturating_sub(1);
    }
}

struct Scanner<'l> {
    bytes: &'l [u8],
    at: usize,
    nesting: Nesting,
}

impl<'l> Scanner<'l> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        let matched = self.peek() == Some(byte);
        self.at += usize::from(matched);
        matched
    }

    fn expect(&mut self, byte: u8) -> Step<()> {
        if self.eat(byte) { Ok(()) } else { Err(Outcome::Invalid) }
    }

    fn whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// The top-level object and its members.
    fn frame(&mut self) -> Step<FrameIndex> {
        let mut index = FrameIndex::default();
        self.whitespace();
        self.object(|scanner, key| {
            let start = scanner.at;
            scanner.value()?;
            let slot = match key {
                b"id" => &mut index.id,
                b"method" => &mut index.method,
                b"result" => &mut index.result,
                b"error" => &mut index.error,
                b"params" => &mut index.params,
                _ => return Ok(()),
            };
            if slot.is_some() {
                return Err(Outcome::Invalid);
            }
            *slot = Some(start..scanner.at);
            Ok(())
        })?;
        self.end()?;
        Ok(index)
    }

    /// Only whitespace may follow the top-level value.
    fn end(&mut self) -> Step<()> {
        self.whitespace();
        if self.at == self.bytes.len() { Ok(()) } else { Err(Outcome::Invalid) }
    }

    /// An object at the cursor: `member` is called after each key's `:` and whitespace, with the
    /// key's bytes (keys with escapes are [`Outcome::Unusual`]), and must consume the value.
    fn object(&mut self, mut member: impl FnMut(&mut Self, &[u8]) -> Step<()>) -> Step<()> {
        let bytes = self.bytes;
        self.expect(b'{')?;
        self.whitespace();
        if self.eat(b'}') {
            return Ok(());
        }
        loop {
            self.whitespace();
            let key = self.string()?.ok_or(Outcome::Unusual)?;
            self.whitespace();
            self.expect(b':')?;
            self.whitespace();
            member(self, &bytes[key])?;
            self.whitespace();
            if self.eat(b'}') {
                return Ok(());
            }
            self.expect(b',')?;
        }
    }

    /// An array at the cursor: `element` is called at each element (after whitespace) and must
    /// consume it.
    fn array(&mut self, mut element: impl FnMut(&mut Self) -> Step<()>) -> Step<()> {
        self.expect(b'[')?;
        self.whitespace();
        if self.eat(b']') {
            return Ok(());
        }
        loop {
            self.whitespace();
            element(self)?;
            self.whitespace();
            if self.eat(b']') {
                return Ok(());
            }
            self.expect(b',')?;
        }
    }

    /// `{"content":[{"type","text",…}…],"isError","structuredContent"}` as serde_json reads it
    /// into the call result's structs; any member twice, a non-object item, an escaped key or
    /// `type`, or a shape serde would reject is left to serde ([`Outcome::Unusual`] or
    /// [`Outcome::Invalid`]).
    fn call_result(&mut self) -> Step<CallResult<'l>> {
        let bytes: &'l [u8] = self.bytes;
        let text = |range: Range<usize>| std::str::from_utf8(&bytes[range]).map_err(|_| Outcome::Unusual);
        let mut result = CallResult::default();
        let (mut seen_content, mut seen_is_error, mut seen_structured) = (false, false, false);
        self.whitespace();
        self.object(|scanner, key| match key {
            b"content" => {
                once(&mut seen_content)?;
                if scanner.peek() == Some(b'n') {
                    return scanner.literal(b"null");
                }
                scanner.array(|scanner| {
                    let mut item = ContentItem::default();
                    let mut seen_type = false;
                    let mut seen = [false; 7];
                    scanner.object(|scanner, key| {
                        let index = match key {
                            b"type" => {
                                once(&mut seen_type)?;
                                if scanner.peek() == Some(b'n') {
                                    return scanner.literal(b"null");
                                }
                                let kind = scanner.string()?.ok_or(Outcome::Unusual)?;
                                item.kind = Some(Cow::Borrowed(text(kind)?));
                                return Ok(());
                            }
                            b"text" => 0,
                            b"data" => 1,
                            b"mimeType" => 2,
                            b"uri" => 3,
                            b"name" => 4,
                            b"size" => 5,
                            b"resource" => 6,
                            _ => return scanner.value(),
                        };
                        once(&mut seen[index])?;
                        let start = scanner.at;
                        scanner.value()?;
                        let literal = text(start..scanner.at)?;
                        let Some(literal) = (literal != "null").then_some(literal) else { return Ok(()) };
                        let slot = match index {
                            0 => &mut item.text,
                            1 => &mut item.members_mut().data,
                            2 => &mut item.members_mut().mime_type,
                            3 => &mut item.members_mut().uri,
                            4 => &mut item.members_mut().name,
                            5 => &mut item.members_mut().size,
                            _ => &mut item.members_mut().resource,
                        };
                        *slot = Some(literal);
                        Ok(())
                    })?;
                    result.push_item(item);
                    Ok(())
                })
            }
            b"isError" => {
                once(&mut seen_is_error)?;
                result.is_error = match scanner.peek() {
                    Some(b't') => Some(scanner.literal(b"true").map(|()| true)?),
                    Some(b'f') => Some(scanner.literal(b"false").map(|()| false)?),
                    _ => scanner.literal(b"null").map(|()| None)?,
                };
                Ok(())
            }
            b"structuredContent" => {
                once(&mut seen_structured)?;
                let start = scanner.at;
                scanner.value()?;
                let literal = text(start..scanner.at)?;
                result.structured = (literal != "null").then_some(literal);
                Ok(())
            }
            _ => scanner.value(),
        })?;
        self.end()?;
        Ok(result)
    }

    /// One complete value, however deep, without recursion.
    fn value(&mut self) -> Step<()> {
        loop {
            self.whitespace();
            match self.peek().ok_or(Outcome::Invalid)? {
                b'{' => {
                    self.at += 1;
                    self.whitespace();
                    if !self.eat(b'}') {
                        self.nesting.push(true);
                        self.member_key()?;
                        continue;
                    }
                }
                b'[' => {
                    self.at += 1;
                    self.whitespace();
                    if !self.eat(b']') {
                        self.nesting.push(false);
                        continue;
                    }
                }
                b'"' => {
                    self.string()?;
                }
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'n' => self.literal(b"null")?,
                b'-' | b'0'..=b'9' => self.number()?,
                _ => return Err(Outcome::Invalid),
            }
            // A value ended: close what it ends, or move to the next element.
            loop {
                let Some(object) = self.nesting.top() else { return Ok(()) };
                self.whitespace();
                if self.eat(b',') {
                    if object {
                        self.member_key()?;
                    }
                    break;
                }
                self.expect(if object { b'}' } else { b']' })?;
                self.nesting.pop();
            }
        }
    }

    /// `"key" :` inside a nested object.
    fn member_key(&mut self) -> Step<()> {
        self.whitespace();
        self.string()?;
        self.whitespace();
        self.expect(b':')
    }

    /// A string; its content range when it has no escapes (`None` when it has some).
    fn string(&mut self) -> Step<Option<Range<usize>>> {
        self.expect(b'"')?;
        let start = self.at;
        let mut escaped = false;
        loop {
            let byte = self.peek().ok_or(Outcome::Invalid)?;
            self.at += 1;
            match byte {
                b'"' => return Ok((!escaped).then_some(start..self.at - 1)),
                b'\\' => {
                    escaped = true;
                    match self.peek().ok_or(Outcome::Invalid)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.at += 1,
                        b'u' => {
                            let hex = self.bytes.get(self.at + 1..self.at + 5).ok_or(Outcome::Invalid)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return Err(Outcome::Invalid);
                            }
                            self.at += 5;
                        }
                        _ => return Err(Outcome::Invalid),
                    }
                }
                0x00..=0x1f => return Err(Outcome::Invalid),
                _ => {}
            }
        }
    }

    fn literal(&mut self, word: &[u8]) -> Step<()> {
        if self.bytes[self.at..].starts_with(word) {
            self.at += word.len();
            Ok(())
        } else {
            Err(Outcome::Invalid)
        }
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
    fn number(&mut self) -> Step<()> {
        self.eat(b'-');
        match self.peek() {
            Some(b'0') => self.at += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(Outcome::Invalid),
        }
        if self.eat(b'.') {
            self.required_digits()?;
        }
        if self.eat(b'e') || self.eat(b'E') {
            if !self.eat(b'+') {
                self.eat(b'-');
            }
            self.required_digits()?;
        }
        Ok(())
    }

    fn digits(&mut self) {
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
    }

    fn required_digits(&mut self) -> Step<()> {
        let start = self.at;
        self.digits();
        if self.at > start { Ok(()) } else { Err(Outcome::Invalid) }
    }
}

/// `count` random mutations (1–3 deleted, inserted or replaced bytes) of a JSON text, from a
/// fixed seed: the same cases on every run.
#[cfg(test)]
pub(crate) fn mutations(seed: &[u8], count: usize) -> impl Iterator<Item = Vec<u8>> {
    let alphabet = b"{}[]:,\"\\ 0123456789-+.eEtrufalsn\tux";
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move |bound: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        usize::try_from(state % bound as u64).unwrap_or(0)
    };
    let seed = seed.to_vec();
    (0..count).map(move |_| {
        let mut line = seed.clone();
        for _ in 0..=next(3) {
            let at = next(line.len() + 1);
            match next(3) {
                0 if at < line.len() => {
                    line.remove(at);
                }
                1 => line.insert(at, alphabet[next(alphabet.len())]),
                _ if at < line.len() => line[at] = alphabet[next(alphabet.len())],
                _ => {}
            }
        }
        line
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// serde_json's reading of a line, the one the scanner must agree with.
    fn serde_reading(line: &[u8]) -> Option<[Option<String>; 5]> {
        let index = serde_index(line)?;
        let text = |range: Option<Range<usize>>| range.map(|range| String::from_utf8_lossy(&line[range]).into_owned());
        Some([text(index.id), text(index.method), text(index.result), text(index.error), text(index.params)])
    }

    fn scanner_reading(line: &[u8]) -> Option<Option<[Option<String>; 5]>> {
        match scan_frame(line) {
            Scan::Unusual => None,
            Scan::Invalid => Some(None),
            Scan::Frame(index) => {
                let text = |range: Option<Range<usize>>| {
                    range.map(|range| String::from_utf8_lossy(&line[range]).into_owned()).filter(|text| text != "null")
                };
                Some(Some([
                    text(index.id),
                    text(index.method),
                    text(index.result),
                    text(index.error),
                    text(index.params),
                ]))
            }
        }
    }

    fn agree(line: &[u8]) {
        if let Some(scanned) = scanner_reading(line) {
            assert_eq!(scanned, serde_reading(line), "{:?}", String::from_utf8_lossy(line));
        }
    }

    #[test]
    fn typical_frames() {
        let line = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}]}}"#;
        let Scan::Frame(index) = scan_frame(line) else { panic!("not a frame") };
        assert_eq!(&line[index.id.unwrap()], b"7");
        assert_eq!(&line[index.result.unwrap()], br#"{"content":[{"type":"text","text":"hi"}]}"#);
        for line in [
            &br#"{"result":{},"jsonrpc":"2.0","id":1}"#[..],
            br#" {"jsonrpc":"2.0","method":"ping","id":"srv-ping"} "#,
            br#"{"id":1,"error":{"code":-32601,"message":"m\u00e9\n"}}"#,
            br#"{"method":"notifications/progress","params":{"progressToken":3,"progress":1.5e3}}"#,
            b"{}",
            br#"{"id":null,"result":null}"#,
        ] {
            agree(line);
            assert!(matches!(scan_frame(line), Scan::Frame(_)));
        }
    }

    #[test]
    fn rejections_match_serde() {
        for line in [
            &b""[..],
            b"   ",
            b"[1,2]",
            b"42",
            b"\"x\"",
            b"not json",
            br#"{"id":1,"id":2}"#,
            br#"{"id":01}"#,
            br#"{"id":-}"#,
            br#"{"id":1.}"#,
            br#"{"id":1e}"#,
            br#"{"a":"tab	inside"}"#,
            br#"{"a":"\x"}"#,
            br#"{"a":"\u12"}"#,
            br#"{"a":[1,]}"#,
            br#"{"a":{"b":1,}}"#,
            br#"{"a":1,}"#,
            br#"{"a":1} x"#,
            br#"{"a" 1}"#,
            br#"{"a":tru}"#,
            br#"{"a":[}"#,
            br#"{"a":{]}"#,
            br#"{"x":1,"x":2}"#,
            br#"{"result":[[[[]]]],"id":3}"#,
        ] {
            agree(line);
        }
    }

    #[test]
    fn deep_nesting_needs_no_stack() {
        for depth in [127, 128, 129, 100_000] {
            let line = format!("{{\"id\":1,\"result\":{}1{}}}", "[{\"a\":".repeat(depth), "}]".repeat(depth));
            agree(line.as_bytes());
            assert!(matches!(scan_frame(line.as_bytes()), Scan::Frame(_)), "{depth}");
            let broken = format!("{{\"id\":1,\"result\":{}{}}}", "[".repeat(depth), "]".repeat(depth - 1));
            assert_eq!(scan_frame(broken.as_bytes()), Scan::Invalid);
        }
    }

    #[test]
    fn escaped_keys_and_bad_utf8_go_to_serde() {
        assert_eq!(scan_frame(br#"{"\u0069d":1}"#), Scan::Unusual);
        assert_eq!(scan_frame(b"{\"a\":\"\xff\"}"), Scan::Unusual);
    }

    /// Mutations of valid frames: wherever the scanner decides, serde decides the same.
    #[test]
    fn agrees_with_serde_on_mutated_frames() {
        let seeds: [&[u8]; 5] = [
            br#"{"jsonrpc":"2.0","id":12,"result":{"content":[{"type":"text","text":"a\"b\\c\u00e9"}],"isError":false}}"#,
            br#"{"id":-3,"error":{"code":-32000,"message":"x","data":[1.5e-3,true,null,{}]}}"#,
            br#"{"method":"notifications/message","params":{"level":"info","data":{"k":[[],[{}]]}}}"#,
            br#" { "id" : 1 , "result" : [ 0 , -0.0 , 1E+2 ] } "#,
            br#"{"jsonrpc":"2.0","id":"x","method":"ping"}"#,
        ];
        for seed in seeds {
            agree(seed);
            for line in mutations(seed, 4000) {
                agree(&line);
            }
        }
    }
}
