//! An upper bound of the work a JSON Schema validator does to check one value, computed before
//! the validator runs, so a hostile `outputSchema` can neither hang a call nor exhaust memory
//! (`$ref` chains through `anyOf`/`oneOf` make the validator's work grow exponentially with a
//! schema of a few hundred bytes). Start at [`WorkGraph::compile`] and [`WorkGraph::bound`].
//!
//! The unit is one step: one application of one schema node to one instance node, every
//! applicator child counted whether or not it would match, plus the work an application does
//! itself (an `enum` compared member by member, a string scanned by `pattern`, an array hashed by
//! `uniqueItems`). The count is an over-estimate by design; what matters is that the validator
//! never does more.
//!
//! What cannot be bounded is refused when the schema is compiled, for the registration warning:
//! a `$ref` that is not local (a JSON pointer or an anchor of this document), `$dynamicRef` and
//! `$recursiveRef`, `unevaluatedProperties` and `unevaluatedItems` (whose annotation passes
//! re-run their siblings at every level), an embedded resource (a nested `$id`, against which
//! refs would resolve differently), a cycle of in-place applicators that never descends into the
//! value, and an in-place chain deeper than [`MAX_CHECK_DEPTH`].

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use serde_json::{Map, Value};

/// Most steps one check may take (10^6). Past it the value is not checked and the call fails.
pub const MAX_CHECK_STEPS: u64 = 1_000_000;

/// Most schema applications nested inside one another while a value is checked (512): the
/// validator recurses once per level, and a deeper chain would overflow a thread's stack.
pub const MAX_CHECK_DEPTH: usize = 512;

/// Bytes of a string one step pays for, in the keywords that scan strings.
const STRING_BYTES_PER_STEP: u64 = 64;

/// What `uniqueItems` may cost per node of the array it checks: hashing every element, or up to
/// 15 pairwise comparisons each (the validator's threshold for hashing).
const UNIQUE_ITEMS_STEPS_PER_NODE: u64 = 16;

/// Why a value was not checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unbounded {
    /// More than [`MAX_CHECK_STEPS`] steps.
    TooCostly,
    /// More than [`MAX_CHECK_DEPTH`] nested applications.
    TooDeep,
}

/// A schema compiled for counting: one node per distinct subschema, edges by how each applies.
#[derive(Debug)]
pub(crate) struct WorkGraph {
    nodes: Vec<Node>,
}

#[derive(Debug, Default)]
struct Node {
    /// Steps of one application before its children: 1, plus what its own keywords compare.
    weight: u64,
    /// `pattern`, `minLength`, `maxLength`, `contentEncoding` or `contentMediaType`.
    scans_strings: bool,
    unique_items: bool,
    /// Applied to the same instance: `$ref`, `allOf`, `anyOf`, `oneOf`, `not`, `if`, `then`,
    /// `else`, `dependentSchemas`, schema-valued `dependencies`.
    in_place: Vec<u32>,
    /// `properties`, sorted by name.
    properties: Vec<(String, u32)>,
    /// `patternProperties`: counted for every member, matching or not.
    pattern_properties: Vec<u32>,
    /// `additionalProperties`: counted for every member `properties` does not name.
    additional_properties: Option<u32>,
    property_names: Option<u32>,
    /// Element `i`: `prefixItems[i]` (2020-12) and `items[i]` (`items` given as an array).
    prefix: [Vec<u32>; 2],
    /// Every element from a position on: `items` as a schema (after `prefixItems` in 2020-12),
    /// `additionalItems` (after an array-form `items`).
    rest: Vec<(u32, usize)>,
    /// `contains`: every element.
    contains: Option<u32>,
}

impl Node {
    fn children_touch_members(&self) -> bool {
        !self.properties.is_empty()
            || !self.pattern_properties.is_empty()
            || self.additional_properties.is_some()
            || self.property_names.is_some()
    }
}

/// Keywords whose value is one subschema applied in place.
const IN_PLACE_ONE: [&str; 4] = ["not", "if", "then", "else"];
/// Keywords whose value is an array of subschemas applied in place.
const IN_PLACE_ARRAY: [&str; 3] = ["allOf", "anyOf", "oneOf"];
/// Keywords that scan a string instance.
const STRING_KEYWORDS: [&str; 5] = ["pattern", "minLength", "maxLength", "contentEncoding", "contentMediaType"];
/// Keywords the validator cannot be bounded for.
const UNBOUNDED_KEYWORDS: [&str; 4] = ["$dynamicRef", "$recursiveRef", "unevaluatedProperties", "unevaluatedItems"];

impl WorkGraph {
    /// Compiles `schema` for counting; `Err` is why its work cannot be bounded.
    pub fn compile(schema: &Value) -> Result<WorkGraph, String> {
        let mut compiler =
            Compiler { document: Document::new(schema)?, nodes: Vec::new(), ids: HashMap::new(), queue: Vec::new() };
        compiler.id_of(schema)?;
        let mut next = 0;
        while let Some(&value) = compiler.queue.get(next) {
            compiler.nodes[next] = compiler.compile_node(value)?;
            next += 1;
        }
        let graph = WorkGraph { nodes: compiler.nodes };
        graph.check_in_place_chains()?;
        Ok(graph)
    }

    /// Refuses a cycle of in-place applicators (the same schema applied to the same value
    /// forever) and an in-place chain deeper than [`MAX_CHECK_DEPTH`]. Iterative, linear.
    fn check_in_place_chains(&self) -> Result<(), String> {
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            New,
            Open,
            Done(usize),
        }
        let mut marks = vec![Mark::New; self.nodes.len()];
        for start in 0..self.nodes.len() {
            if marks[start] != Mark::New {
                continue;
            }
            // (node, next child to visit)
            let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
            marks[start] = Mark::Open;
            while let Some((node, child)) = stack.last_mut() {
                let node = *node;
                if let Some(&next) = self.nodes[node].in_place.get(*child) {
                    *child += 1;
                    let next = next as usize;
                    match marks[next] {
                        Mark::Open => return Err("a $ref cycle applies a schema to the same value forever".to_owned()),
                        Mark::New => {
                            marks[next] = Mark::Open;
                            stack.push((next, 0));
                        }
                        Mark::Done(_) => {}
                    }
                    continue;
                }
                let below = self.nodes[node]
                    .in_place
                    .iter()
                    .map(|&child| match marks[child as usize] {
                        Mark::Done(depth) => depth,
                        _ => 0,
                    })
                    .max()
                    .unwrap_or(0);
                if below + 1 > MAX_CHECK_DEPTH {
                    return Err(format!("in-place applicators nest more than {MAX_CHECK_DEPTH} deep"));
                }
                marks[node] = Mark::Done(below + 1);
                stack.pop();
            }
        }
        Ok(())
    }

    /// The steps checking `instance` takes, or why they pass the bounds. Stops as soon as the
    /// running total passes [`MAX_CHECK_STEPS`], so its own memory stays within the cap too.
    pub fn bound(&self, instance: &Value) -> Result<u64, Unbounded> {
        let mut walk =
            Walk { graph: self, spent: 0, pending: 0, memo: HashMap::new(), tasks: Vec::new(), frames: Vec::new() };
        walk.push_apply(0, Instance::Value(instance))?;
        walk.run()?;
        Ok(walk.spent)
    }
}

/// Builds the graph: one node per distinct subschema (by address), queued as it is first met.
struct Compiler<'s> {
    document: Document<'s>,
    nodes: Vec<Node>,
    ids: HashMap<*const Value, u32>,
    queue: Vec<&'s Value>,
}

impl<'s> Compiler<'s> {
    fn id_of(&mut self, value: &'s Value) -> Result<u32, String> {
        let key = std::ptr::from_ref(value);
        if let Some(&id) = self.ids.get(&key) {
            return Ok(id);
        }
        let id = u32::try_from(self.nodes.len()).map_err(|_| "schema too large to bound".to_owned())?;
        self.ids.insert(key, id);
        self.nodes.push(Node::default());
        self.queue.push(value);
        Ok(id)
    }

    /// One node: its weight, flags and edges.
    fn compile_node(&mut self, value: &'s Value) -> Result<Node, String> {
        let mut node = Node { weight: 1, ..Node::default() };
        let Value::Object(members) = value else { return Ok(node) };
        for keyword in UNBOUNDED_KEYWORDS {
            if members.contains_key(keyword) {
                return Err(format!("{keyword} cannot be bounded"));
            }
        }
        if let Some(reference) = members.get("$ref") {
            let reference = reference.as_str().ok_or("$ref is not a string")?;
            let target = self.document.resolve(reference)?;
            node.in_place.push(self.id_of(target)?);
        }
        for keyword in IN_PLACE_ONE {
            if let Some(subschema) = members.get(keyword) {
                node.in_place.push(self.id_of(subschema)?);
            }
        }
        for keyword in IN_PLACE_ARRAY {
            for subschema in members.get(keyword).and_then(Value::as_array).into_iter().flatten() {
                node.in_place.push(self.id_of(subschema)?);
            }
        }
        for keyword in ["dependentSchemas", "dependencies"] {
            for dependency in object_values(members, keyword) {
                match dependency {
                    Value::Array(names) => node.weight += len_u64(names.len()),
                    subschema => node.in_place.push(self.id_of(subschema)?),
                }
            }
        }
        if let Some(Value::Object(properties)) = members.get("properties") {
            for (name, subschema) in properties {
                let id = self.id_of(subschema)?;
                node.properties.push((name.clone(), id));
            }
            node.properties.sort_by(|a, b| a.0.cmp(&b.0));
            node.weight += len_u64(properties.len());
        }
        for subschema in object_values(members, "patternProperties") {
            node.pattern_properties.push(self.id_of(subschema)?);
        }
        if let Some(subschema) = members.get("additionalProperties") {
            node.additional_properties = Some(self.id_of(subschema)?);
        }
        if let Some(subschema) = members.get("propertyNames") {
            node.property_names = Some(self.id_of(subschema)?);
        }
        // As the validator reads them: `prefixItems` only where the draft knows it; schema-form
        // `items` skips it; `additionalItems` only follows an array-form `items`.
        let prefix_items = match members.get("prefixItems") {
            Some(Value::Array(prefix)) if self.document.knows_prefix_items => prefix.as_slice(),
            _ => &[],
        };
        for subschema in prefix_items {
            let id = self.id_of(subschema)?;
            node.prefix[0].push(id);
        }
        match members.get("items") {
            Some(Value::Array(tuple)) => {
                for subschema in tuple {
                    let id = self.id_of(subschema)?;
                    node.prefix[1].push(id);
                }
                if let Some(subschema) = members.get("additionalItems") {
                    node.rest.push((self.id_of(subschema)?, tuple.len()));
                }
            }
            Some(subschema) => node.rest.push((self.id_of(subschema)?, prefix_items.len())),
            None => {}
        }
        if let Some(subschema) = members.get("contains") {
            node.contains = Some(self.id_of(subschema)?);
        }
        for keyword in ["enum", "const"] {
            if let Some(value) = members.get(keyword) {
                node.weight = node.weight.saturating_add(value_nodes(value));
            }
        }
        for keyword in ["required", "type"] {
            if let Some(Value::Array(items)) = members.get(keyword) {
                node.weight += len_u64(items.len());
            }
        }
        for names in object_values(members, "dependentRequired") {
            node.weight += names.as_array().map_or(1, |names| len_u64(names.len()));
        }
        node.scans_strings = STRING_KEYWORDS.iter().any(|keyword| members.contains_key(*keyword));
        node.unique_items = members.get("uniqueItems") == Some(&Value::Bool(true));
        Ok(node)
    }
}

/// Where local refs resolve: the root, its anchors, and the root's own `$id` (a ref may name
/// it).
struct Document<'s> {
    root: &'s Value,
    root_id: Option<&'s str>,
    /// Each anchor and the schema declaring it; `None` for a name declared twice.
    anchors: HashMap<&'s str, Option<&'s Value>>,
    /// Whether the draft has `prefixItems` (2020-12, the default).
    knows_prefix_items: bool,
}

impl<'s> Document<'s> {
    /// Reads the anchors of the whole document (iteratively), and refuses an embedded resource:
    /// under a nested `$id` the validator resolves refs against that resource, not the root.
    fn new(root: &'s Value) -> Result<Self, String> {
        let id_keyword = id_keyword(root);
        let root_id = root.get(id_keyword).and_then(Value::as_str).filter(|id| !id.starts_with('#'));
        let mut anchors: HashMap<&str, Option<&Value>> = HashMap::new();
        let mut pending = vec![root];
        while let Some(value) = pending.pop() {
            match value {
                Value::Object(members) => {
                    let id = members.get(id_keyword).and_then(Value::as_str);
                    if !std::ptr::eq(value, root) && id.is_some_and(|id| !id.starts_with('#')) {
                        return Err(format!("an embedded resource (a nested {id_keyword}) cannot be bounded"));
                    }
                    let declared = [
                        members.get("$anchor").and_then(Value::as_str),
                        members.get("$dynamicAnchor").and_then(Value::as_str),
                        id.and_then(|id| id.strip_prefix('#')),
                    ];
                    for anchor in declared.into_iter().flatten() {
                        anchors.entry(anchor).and_modify(|seen| *seen = None).or_insert(Some(value));
                    }
                    pending.extend(members.values());
                }
                Value::Array(items) => pending.extend(items),
                _ => {}
            }
        }
        let knows_prefix_items = !declared_draft(root).is_some_and(|draft| {
            ["draft-03", "draft-04", "draft-06", "draft-07", "2019-09"].iter().any(|old| draft.contains(old))
        });
        Ok(Document { root, root_id, anchors, knows_prefix_items })
    }

    /// The subschema a `$ref` names, or why it cannot be resolved here.
    fn resolve(&self, reference: &str) -> Result<&'s Value, String> {
        let unresolved = || format!("$ref {} is not a local reference", odek_contract::quoting::quote(reference));
        let fragment = match (reference.strip_prefix('#'), self.root_id) {
            (Some(fragment), _) => fragment,
            (None, Some(id)) => reference
                .strip_prefix(id.trim_end_matches('#'))
                .and_then(|rest| if rest.is_empty() { Some("") } else { rest.strip_prefix('#') })
                .ok_or_else(unresolved)?,
            (None, None) => return Err(unresolved()),
        };
        let fragment = percent_decode(fragment).ok_or_else(unresolved)?;
        let target = if fragment.is_empty() {
            Some(self.root)
        } else if fragment.starts_with('/') {
            self.root.pointer(&fragment)
        } else {
            self.anchors.get(fragment.as_str()).copied().flatten()
        };
        target.ok_or_else(unresolved)
    }
}

/// The root's `$schema`.
fn declared_draft(root: &Value) -> Option<&str> {
    root.get("$schema").and_then(Value::as_str)
}

/// `id` for draft 4, `$id` otherwise.
fn id_keyword(root: &Value) -> &'static str {
    match declared_draft(root) {
        Some(draft) if draft.contains("draft-04") || draft.contains("draft-03") => "id",
        _ => "$id",
    }
}

/// `%XX` escapes of a URI fragment decoded; `None` when malformed or not UTF-8.
fn percent_decode(fragment: &str) -> Option<String> {
    if !fragment.contains('%') {
        return Some(fragment.to_owned());
    }
    let bytes = fragment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%' {
            let hex = std::str::from_utf8(bytes.get(at + 1..at + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            at += 3;
        } else {
            out.push(bytes[at]);
            at += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn object_values<'s>(members: &'s Map<String, Value>, keyword: &str) -> impl Iterator<Item = &'s Value> {
    members.get(keyword).and_then(Value::as_object).into_iter().flat_map(Map::values)
}

fn len_u64(len: usize) -> u64 {
    u64::try_from(len).unwrap_or(u64::MAX)
}

/// JSON values in `value`, itself included (what comparing against it may touch).
fn value_nodes(value: &Value) -> u64 {
    let mut count = 0u64;
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        count = count.saturating_add(1);
        match value {
            Value::Array(items) => pending.extend(items),
            Value::Object(members) => pending.extend(members.values()),
            _ => {}
        }
    }
    count
}

/// What a schema node is applied to: a value, or an object's key (for `propertyNames`).
#[derive(Clone, Copy)]
enum Instance<'v> {
    Value(&'v Value),
    Key(&'v str),
}

impl Instance<'_> {
    /// Identity for the memo: the address, tagged by kind (a key is a string buffer, never a
    /// value's address).
    fn identity(self) -> (usize, bool) {
        match self {
            Instance::Value(value) => (std::ptr::from_ref(value).addr(), false),
            Instance::Key(key) => (key.as_ptr().addr(), true),
        }
    }

    fn string_len(self) -> Option<usize> {
        match self {
            Instance::Value(Value::String(text)) => Some(text.len()),
            Instance::Key(key) => Some(key.len()),
            Instance::Value(_) => None,
        }
    }
}

type MemoKey = (u32, (usize, bool));

/// What counting one (node, instance) pair found: its steps, and the longest chain of nested
/// applications it starts (itself included), the validator's recursion depth for it.
#[derive(Clone, Copy)]
struct Counted {
    steps: u64,
    height: usize,
}

enum Task<'v> {
    Apply {
        node: u32,
        instance: Instance<'v>,
    },
    /// Every child of the innermost open frame is counted: close it.
    Close,
}

/// A pair being counted: its children are on the task stack above its [`Task::Close`].
struct Frame {
    key: MemoKey,
    spent_before: u64,
    /// The tallest child counted so far.
    tallest_child: usize,
}

/// The counting walk: an explicit stack, so neither schema nor value depth touches the call
/// stack, and the open frames are the path from the root. `spent` only grows and never passes
/// the cap; every pending application adds at least one step, so `spent + pending` is a lower
/// bound of the total, and neither the tasks nor the memo can outgrow the cap.
struct Walk<'g, 'v> {
    graph: &'g WorkGraph,
    spent: u64,
    pending: u64,
    /// Every pair counted so far; `None` while it is open.
    memo: HashMap<MemoKey, Option<Counted>>,
    tasks: Vec<Task<'v>>,
    frames: Vec<Frame>,
}

impl<'v> Walk<'_, 'v> {
    fn charge(&mut self, steps: u64) -> Result<(), Unbounded> {
        self.spent = self.spent.saturating_add(steps);
        if self.spent.saturating_add(self.pending) > MAX_CHECK_STEPS {
            return Err(Unbounded::TooCostly);
        }
        Ok(())
    }

    fn push_apply(&mut self, node: u32, instance: Instance<'v>) -> Result<(), Unbounded> {
        self.pending += 1;
        self.charge(0)?;
        self.tasks.push(Task::Apply { node, instance });
        Ok(())
    }

    /// A counted child of the innermost open frame (the root has none): the frame's height grows
    /// with it, and a path deeper than [`MAX_CHECK_DEPTH`] stops the walk.
    fn finished(&mut self, counted: Counted) -> Result<(), Unbounded> {
        if self.frames.len() + counted.height > MAX_CHECK_DEPTH {
            return Err(Unbounded::TooDeep);
        }
        if let Some(parent) = self.frames.last_mut() {
            parent.tallest_child = parent.tallest_child.max(counted.height);
        }
        Ok(())
    }

    fn run(&mut self) -> Result<(), Unbounded> {
        while let Some(task) = self.tasks.pop() {
            match task {
                Task::Close => {
                    let Some(frame) = self.frames.pop() else { continue };
                    let counted = Counted { steps: self.spent - frame.spent_before, height: frame.tallest_child + 1 };
                    self.memo.insert(frame.key, Some(counted));
                    self.finished(counted)?;
                }
                Task::Apply { node, instance } => {
                    self.pending -= 1;
                    self.apply(node, instance)?;
                }
            }
        }
        Ok(())
    }

    fn apply(&mut self, node_id: u32, instance: Instance<'v>) -> Result<(), Unbounded> {
        let key = (node_id, instance.identity());
        match self.memo.entry(key) {
            Entry::Occupied(seen) => {
                // An open pair met again is an in-place cycle, refused when compiled.
                let counted = seen.get().ok_or(Unbounded::TooDeep)?;
                self.charge(counted.steps)?;
                return self.finished(counted);
            }
            Entry::Vacant(slot) => {
                slot.insert(None);
            }
        }
        if self.frames.len() + 1 > MAX_CHECK_DEPTH {
            return Err(Unbounded::TooDeep);
        }
        self.frames.push(Frame { key, spent_before: self.spent, tallest_child: 0 });
        self.tasks.push(Task::Close);
        let graph = self.graph;
        let node = &graph.nodes[node_id as usize];
        self.charge(node.weight)?;
        if node.scans_strings
            && let Some(len) = instance.string_len()
        {
            self.charge(len_u64(len) / STRING_BYTES_PER_STEP)?;
        }
        for &child in &node.in_place {
            self.push_apply(child, instance)?;
        }
        match instance {
            Instance::Value(Value::Object(members)) => {
                self.charge(len_u64(members.len()))?;
                if !node.children_touch_members() {
                    return Ok(());
                }
                let patterns = len_u64(node.pattern_properties.len());
                for (name, value) in members {
                    if patterns > 0 {
                        self.charge(patterns.saturating_mul(1 + len_u64(name.len()) / STRING_BYTES_PER_STEP))?;
                    }
                    let named = node.properties.binary_search_by(|(property, _)| property.as_str().cmp(name));
                    match (named, node.additional_properties) {
                        (Ok(at), _) => self.push_apply(node.properties[at].1, Instance::Value(value))?,
                        (Err(_), Some(additional)) => self.push_apply(additional, Instance::Value(value))?,
                        (Err(_), None) => {}
                    }
                    for &child in &node.pattern_properties {
                        self.push_apply(child, Instance::Value(value))?;
                    }
                    if let Some(child) = node.property_names {
                        self.push_apply(child, Instance::Key(name))?;
                    }
                }
            }
            Instance::Value(Value::Array(elements)) => {
                self.charge(len_u64(elements.len()))?;
                if node.unique_items {
                    self.charge_nodes_within(elements)?;
                }
                for (position, element) in elements.iter().enumerate() {
                    for prefix in &node.prefix {
                        if let Some(&child) = prefix.get(position) {
                            self.push_apply(child, Instance::Value(element))?;
                        }
                    }
                    for &(child, from) in &node.rest {
                        if position >= from {
                            self.push_apply(child, Instance::Value(element))?;
                        }
                    }
                    if let Some(child) = node.contains {
                        self.push_apply(child, Instance::Value(element))?;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// `uniqueItems`: [`UNIQUE_ITEMS_STEPS_PER_NODE`] steps for every value inside `elements`,
    /// charged as they are found, so the walk stops at the cap however large the array.
    fn charge_nodes_within(&mut self, elements: &'v [Value]) -> Result<(), Unbounded> {
        let mut walk: Vec<&Value> = Vec::new();
        let mut found =
            |values: &mut dyn Iterator<Item = &'v Value>, walk: &mut Vec<&'v Value>| -> Result<(), Unbounded> {
                for value in values {
                    self.charge(UNIQUE_ITEMS_STEPS_PER_NODE)?;
                    walk.push(value);
                }
                Ok(())
            };
        found(&mut elements.iter(), &mut walk)?;
        while let Some(value) = walk.pop() {
            match value {
                Value::Array(items) => found(&mut items.iter(), &mut walk)?,
                Value::Object(members) => found(&mut members.values(), &mut walk)?,
                _ => {}
            }
        }
        Ok(())
    }
}
