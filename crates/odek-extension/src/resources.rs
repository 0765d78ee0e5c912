//! What a server offers besides tools (MCP 2025-03-26 "resources"): what `resources/list`
//! says about one resource ([`ResourceDef`]), what `resources/read` answers with
//! ([`ResourceContents`], [`ResourceBody`]), and the server's fixed set of them
//! ([`Resources`]): listed resources, each read as the one body it was given or through its own
//! reader, and an optional reader for every other uri. The methods themselves are answered in
//! `builtins`; the builder methods are [`Server::resource`](crate::Server::resource),
//! [`Server::dynamic_resource`](crate::Server::dynamic_resource) and
//! [`Server::resource_reader`](crate::Server::resource_reader).
//!
//! Resource templates ([`ResourceTemplateDef`], listed by `resources/templates/list`) serve
//! every uri their `uriTemplate` matches (`uri_template`), each through its own reader, which
//! gets the variables. Subscriptions are per connection (`connection`). Not here:
//! `notifications/resources/list_changed`: the set is fixed once the server runs, so the
//! `resources` capability says `listChanged: false`.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use serde::Serialize;

use crate::Error;
use crate::context::CallContext;
use crate::jsonrpc::RpcError;
use crate::tools::BoxFuture;
use crate::uri_template::{TemplateVariables, UriTemplate};

/// What `resources/list` says about one resource.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ResourceDef {
    /// The resource's identity, and what `resources/read` asks for; unique within a server.
    pub uri: String,
    /// A short name.
    pub name: String,
    /// A human-readable name (newer MCP revisions); omitted from the wire when `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resource holds; omitted from the wire when `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its media type (`text/markdown`, `image/png`, …); omitted from the wire when `None`.
    #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes, when known; omitted from the wire when `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

impl ResourceDef {
    /// A definition with a uri and a name and nothing else.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self { uri: uri.into(), name: name.into(), title: None, description: None, mime_type: None, size: None }
    }

    /// The same definition with a `title`.
    #[must_use]
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// The same definition with a `description`.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The same definition with a `mimeType`; a static resource's contents carry it too.
    #[must_use]
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// The same definition with a `size` in bytes.
    #[must_use]
    pub fn with_size(mut self, bytes: u64) -> Self {
        self.size = Some(bytes);
        self
    }
}

/// What `resources/templates/list` says about one resource template.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ResourceTemplateDef {
    /// An RFC 6570 level-1 template (`test://items/{id}`): literal text and `{name}` variables.
    #[serde(rename = "uriTemplate")]
    pub uri_template: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The media type of every resource it serves; omitted from the wire when `None`.
    #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

impl ResourceTemplateDef {
    /// A template with a `uriTemplate` and a name and nothing else.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        Self { uri_template: uri_template.into(), name: name.into(), title: None, description: None, mime_type: None }
    }

    /// The same template with a `description`.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The same template with a `mimeType`.
    #[must_use]
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
}

/// What one item of `resources/read`'s `contents` holds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum ResourceBody {
    /// `"text": …`, UTF-8 text.
    #[serde(rename = "text")]
    Text(String),
    /// `"blob": …`, binary data already encoded as standard base64 (sent as given).
    #[serde(rename = "blob")]
    Blob(String),
}

impl ResourceBody {
    /// A text body.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(text.into())
    }

    /// A binary body from its standard base64 encoding.
    pub fn blob_base64(base64: impl Into<String>) -> Self {
        Self::Blob(base64.into())
    }
}

/// One item of a `resources/read` result: `{"uri","mimeType"?,"text"}` or
/// `{"uri","mimeType"?,"blob"}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ResourceContents {
    pub uri: String,
    #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    #[serde(flatten)]
    pub body: ResourceBody,
}

impl ResourceContents {
    /// Contents of `uri` without a media type.
    pub fn new(uri: impl Into<String>, body: ResourceBody) -> Self {
        Self { uri: uri.into(), mime_type: None, body }
    }

    /// The same contents with a `mimeType`.
    #[must_use]
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
}

/// What a resource reader answers: the contents of the uri, or the JSON-RPC error to send
/// (normally [`RpcError::resource_not_found`]).
pub type ReadOutcome = Result<Vec<ResourceContents>, RpcError>;

/// A type-erased resource reader.
pub(crate) type ResourceReader = Arc<dyn Fn(Arc<CallContext>, String) -> BoxFuture<ReadOutcome> + Send + Sync>;

/// Erases an async closure into a [`ResourceReader`].
pub(crate) fn resource_reader<F, Fut>(reader: F) -> ResourceReader
where
    F: Fn(Arc<CallContext>, String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ReadOutcome> + Send + 'static,
{
    Arc::new(move |context, uri| Box::pin(reader(context, uri)))
}

/// A type-erased reader of a resource template: the context, the uri and its variables.
pub(crate) type TemplateReader =
    Arc<dyn Fn(Arc<CallContext>, String, TemplateVariables) -> BoxFuture<ReadOutcome> + Send + Sync>;

/// Erases an async closure into a [`TemplateReader`].
pub(crate) fn template_reader<F, Fut>(reader: F) -> TemplateReader
where
    F: Fn(Arc<CallContext>, String, TemplateVariables) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ReadOutcome> + Send + 'static,
{
    Arc::new(move |context, uri, variables| Box::pin(reader(context, uri, variables)))
}

pub(crate) struct Template {
    pub(crate) def: ResourceTemplateDef,
    pattern: UriTemplate,
    reader: TemplateReader,
}

/// Where a listed resource's contents come from.
enum Source {
    /// The same body on every read.
    Body(ResourceBody),
    /// Its own reader, asked on every read.
    Reader(ResourceReader),
}

pub(crate) struct ListedResource {
    pub(crate) def: ResourceDef,
    source: Source,
}

/// The resources of one server, fixed when it starts: the listed ones in `resources/list`
/// order, and the reader asked for any other uri.
#[derive(Clone, Default)]
pub(crate) struct Resources {
    listed: Vec<Arc<ListedResource>>,
    index: HashMap<String, usize>,
    templates: Vec<Arc<Template>>,
    reader: Option<ResourceReader>,
}

impl std::fmt::Debug for Resources {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Resources")
            .field("listed", &self.listed.iter().map(|resource| &resource.def.uri).collect::<Vec<_>>())
            .field("templates", &self.templates.iter().map(|template| &template.def.uri_template).collect::<Vec<_>>())
            .field("reader", &self.reader.is_some())
            .finish()
    }
}

/// What `resources/read` of one uri comes to before any reader runs.
pub(crate) enum Lookup {
    /// A static resource's contents.
    Found(ResourceContents),
    /// The reader that decides: the resource's own, or the one for unlisted uris.
    Ask(ResourceReader),
    /// The reader of the first template the uri matches, with the uri's variables.
    Template(TemplateReader, TemplateVariables),
    /// Nobody serves this uri.
    NotFound,
}

impl Resources {
    /// Adds a static resource at the end of the list; fails on a uri already listed.
    pub(crate) fn add(&mut self, def: ResourceDef, body: ResourceBody) -> Result<(), Error> {
        self.list(def, Source::Body(body))
    }

    /// Adds a resource read by its own `reader` at the end of the list; fails on a uri already
    /// listed.
    pub(crate) fn add_dynamic(&mut self, def: ResourceDef, reader: ResourceReader) -> Result<(), Error> {
        self.list(def, Source::Reader(reader))
    }

    fn list(&mut self, def: ResourceDef, source: Source) -> Result<(), Error> {
        if self.index.contains_key(&def.uri) {
            return Err(Error::DuplicateResource { uri: def.uri });
        }
        self.index.insert(def.uri.clone(), self.listed.len());
        self.listed.push(Arc::new(ListedResource { def, source }));
        Ok(())
    }

    /// Adds a resource template at the end of the list; fails on a template this SDK cannot
    /// match, or one already added.
    pub(crate) fn add_template(&mut self, def: ResourceTemplateDef, reader: TemplateReader) -> Result<(), Error> {
        let pattern = UriTemplate::parse(&def.uri_template)
            .map_err(|reason| Error::UriTemplate { template: def.uri_template.clone(), reason })?;
        if self.templates.iter().any(|template| template.def.uri_template == def.uri_template) {
            return Err(Error::DuplicateResource { uri: def.uri_template });
        }
        self.templates.push(Arc::new(Template { def, pattern, reader }));
        Ok(())
    }

    pub(crate) fn templates(&self) -> &[Arc<Template>] {
        &self.templates
    }

    pub(crate) fn set_reader(&mut self, reader: ResourceReader) {
        self.reader = Some(reader);
    }

    /// Whether the server offers resources at all: then `initialize` announces the capability
    /// and the `resources/*` methods are answered.
    pub(crate) fn offered(&self) -> bool {
        !self.listed.is_empty() || !self.templates.is_empty() || self.reader.is_some()
    }

    pub(crate) fn listed(&self) -> &[Arc<ListedResource>] {
        &self.listed
    }

    /// Who answers a read of `uri`: a listed resource first, then the first template it
    /// matches, then the reader of unlisted uris.
    pub(crate) fn lookup(&self, uri: &str) -> Lookup {
        if let Some(&position) = self.index.get(uri) {
            let resource = &self.listed[position];
            return match &resource.source {
                Source::Body(body) => {
                    let mut contents = ResourceContents::new(uri, body.clone());
                    contents.mime_type.clone_from(&resource.def.mime_type);
                    Lookup::Found(contents)
                }
                Source::Reader(reader) => Lookup::Ask(Arc::clone(reader)),
            };
        }
        for template in &self.templates {
            if let Some(variables) = template.pattern.match_uri(uri) {
                return Lookup::Template(Arc::clone(&template.reader), variables);
            }
        }
        match &self.reader {
            Some(reader) => Lookup::Ask(Arc::clone(reader)),
            None => Lookup::NotFound,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn definitions_and_contents_serialise_to_mcp_shapes() {
        let def = ResourceDef::new("docs://guide", "guide")
            .with_title("The guide")
            .with_description("How to")
            .with_mime_type("text/markdown")
            .with_size(7);
        assert_eq!(
            serde_json::to_value(&def).unwrap(),
            json!({"uri":"docs://guide","name":"guide","title":"The guide","description":"How to","mimeType":"text/markdown","size":7})
        );
        assert_eq!(serde_json::to_value(ResourceDef::new("a://b", "b")).unwrap(), json!({"uri":"a://b","name":"b"}));
        let text = ResourceContents::new("a://b", ResourceBody::text("hi")).with_mime_type("text/plain");
        assert_eq!(serde_json::to_value(&text).unwrap(), json!({"uri":"a://b","mimeType":"text/plain","text":"hi"}));
        let blob = ResourceContents::new("a://c", ResourceBody::blob_base64("AA=="));
        assert_eq!(serde_json::to_value(&blob).unwrap(), json!({"uri":"a://c","blob":"AA=="}));
    }

    #[test]
    fn listed_resources_are_unique_and_found_before_the_reader() {
        let mut resources = Resources::default();
        assert!(!resources.offered());
        resources.add(ResourceDef::new("a://1", "one").with_mime_type("text/plain"), ResourceBody::text("1")).unwrap();
        assert!(matches!(
            resources.add(ResourceDef::new("a://1", "again"), ResourceBody::text("")),
            Err(Error::DuplicateResource { .. })
        ));
        assert!(resources.offered());
        match resources.lookup("a://1") {
            Lookup::Found(contents) => assert_eq!(
                contents,
                ResourceContents::new("a://1", ResourceBody::text("1")).with_mime_type("text/plain")
            ),
            _ => panic!("a static resource is found"),
        }
        assert!(matches!(resources.lookup("a://2"), Lookup::NotFound));
        resources.set_reader(resource_reader(|_, uri| async move { Err(RpcError::resource_not_found(&uri)) }));
        assert!(matches!(resources.lookup("a://2"), Lookup::Ask(_)));
        assert!(matches!(resources.lookup("a://1"), Lookup::Found(_)));
        let dynamic =
            resource_reader(|_, uri| async move { Ok(vec![ResourceContents::new(uri, ResourceBody::text(""))]) });
        resources.add_dynamic(ResourceDef::new("a://3", "three"), Arc::clone(&dynamic)).unwrap();
        assert!(matches!(
            resources.add_dynamic(ResourceDef::new("a://1", "x"), dynamic),
            Err(Error::DuplicateResource { .. })
        ));
        assert!(matches!(resources.lookup("a://3"), Lookup::Ask(_)));
        assert_eq!(resources.listed().len(), 2);
    }

    #[test]
    fn templates_serve_what_they_match_after_the_listed_resources() {
        let mut resources = Resources::default();
        let reader =
            template_reader(|_, uri, _| async move { Ok(vec![ResourceContents::new(uri, ResourceBody::text(""))]) });
        resources.add_template(ResourceTemplateDef::new("t://items/{id}", "item"), Arc::clone(&reader)).unwrap();
        assert!(resources.offered());
        assert!(matches!(
            resources.add_template(ResourceTemplateDef::new("t://items/{id}", "again"), Arc::clone(&reader)),
            Err(Error::DuplicateResource { .. })
        ));
        let refused = resources.add_template(ResourceTemplateDef::new("t://{+path}", "path"), Arc::clone(&reader));
        assert!(matches!(refused, Err(Error::UriTemplate { .. })), "{refused:?}");
        match resources.lookup("t://items/42") {
            Lookup::Template(_, variables) => assert_eq!(variables.get("id").map(String::as_str), Some("42")),
            _ => panic!("the template serves its uris"),
        }
        assert!(matches!(resources.lookup("t://items/"), Lookup::NotFound));
        resources.add(ResourceDef::new("t://items/1", "one"), ResourceBody::text("1")).unwrap();
        assert!(matches!(resources.lookup("t://items/1"), Lookup::Found(_)), "a listed resource comes first");
        assert_eq!(
            serde_json::to_value(&resources.templates()[0].def).unwrap(),
            json!({"uriTemplate":"t://items/{id}","name":"item"})
        );
    }
}
