//! \[beyond\] Elicitation: a server asking the person for input during a request
//! (`elicitation/create`; form mode from MCP 2025-06-18, URL mode from 2025-11-25). This module
//! owns the rules: reading a request into a typed [`ElicitationRequest`] within bounds
//! ([`read_elicitation`]: a flat form of at most [`MAX_FORM_FIELDS`] primitive fields, or an
//! `http(s)` URL), the form's defaults (SEP-1034, [`Form::defaults`]), checking an answer
//! against the form ([`Form::check_answer`], [`FormField::parse_answer`]), and the policy that
//! answers when nobody is asked ([`ElicitationPolicy`], [`PolicyElicitor`]).
//!
//! Who asks the person is the embedder's [`Elicitor`]; the connection routes the request, bounds
//! the wait and writes the reply (`connection`). A leaf: it imports nothing else of the crate.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The server request this module answers.
pub const ELICITATION_METHOD: &str = "elicitation/create";
/// Most fields a form may have (far more than any real form).
pub const MAX_FORM_FIELDS: usize = 100;
/// Most options of one enum field.
pub const MAX_FIELD_OPTIONS: usize = 100;
/// Longest field name (bytes).
pub const MAX_FIELD_NAME_BYTES: usize = 256;
/// Longest text answer to one field (characters), whatever the field's own `maxLength`.
pub const MAX_ANSWER_CHARS: usize = 4096;
/// The message, titles and descriptions are cut to this many characters for showing.
pub const MAX_SHOWN_CHARS: usize = 4096;
/// Longest URL of a URL-mode request (bytes).
pub const MAX_URL_BYTES: usize = 4096;
/// Longest `elicitationId` (bytes).
pub const MAX_ELICITATION_ID_BYTES: usize = 256;
/// Elicitations one server connection may have open at once; more are refused.
pub const MAX_OPEN_ELICITATIONS: usize = 4;
/// How long a person has to answer, by default (10 minutes).
pub const DEFAULT_ELICITATION_TIMEOUT: Duration = Duration::from_secs(600);

/// A boxed future an [`Elicitor`] answers with.
pub type ElicitFuture = Pin<Box<dyn Future<Output = Elicited> + Send + 'static>>;

/// Asks the person (or decides for them). The connection bounds the wait and checks the answer
/// against the form; an implementation need not do either, but a face should validate each
/// field as it is typed ([`FormField::parse_answer`]) so a person can correct it.
pub trait Elicitor: Send + Sync {
    /// The answer to `request`.
    fn elicit(&self, request: ElicitationRequest) -> ElicitFuture;
}

/// Who answers a connection's elicitations, and how long a person has.
#[derive(Clone)]
pub struct ElicitationSettings {
    pub elicitor: std::sync::Arc<dyn Elicitor>,
    /// How long the elicitor may take; then the server is told `cancel`.
    pub timeout: Duration,
}

impl ElicitationSettings {
    /// Nobody is asked: `policy` answers at once.
    pub fn policy(policy: ElicitationPolicy) -> ElicitationSettings {
        ElicitationSettings {
            elicitor: std::sync::Arc::new(PolicyElicitor(policy)),
            timeout: DEFAULT_ELICITATION_TIMEOUT,
        }
    }
}

impl Default for ElicitationSettings {
    /// Declines every elicitation.
    fn default() -> ElicitationSettings {
        ElicitationSettings::policy(ElicitationPolicy::Decline)
    }
}

impl fmt::Debug for ElicitationSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ElicitationSettings").field("timeout", &self.timeout).finish_non_exhaustive()
    }
}

/// How an elicitation was settled.
#[derive(Debug, Clone, PartialEq)]
pub enum Elicited {
    /// Someone answered: a person, or the `accept_defaults` policy.
    Answered(ElicitationAnswer),
    /// odek answered for nobody: the configured policy, or no answer came in time.
    Declined {
        /// What the server is told: `decline` or `cancel`.
        action: ElicitationAction,
        reason: DeclineReason,
    },
}

/// The answer the server gets.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitationAnswer {
    /// Submitted: the form's content (empty for URL mode: the person agreed to open it).
    Accept(Map<String, Value>),
    /// Explicitly refused.
    Decline,
    /// Dismissed without a choice.
    Cancel,
}

impl ElicitationAnswer {
    /// Its action.
    pub fn action(&self) -> ElicitationAction {
        match self {
            ElicitationAnswer::Accept(_) => ElicitationAction::Accept,
            ElicitationAnswer::Decline => ElicitationAction::Decline,
            ElicitationAnswer::Cancel => ElicitationAction::Cancel,
        }
    }
}

/// `action` of an elicitation result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElicitationAction {
    Accept,
    Decline,
    Cancel,
}

impl ElicitationAction {
    /// Every action.
    pub const ALL: [ElicitationAction; 3] =
        [ElicitationAction::Accept, ElicitationAction::Decline, ElicitationAction::Cancel];

    /// The protocol's word.
    pub fn as_str(self) -> &'static str {
        match self {
            ElicitationAction::Accept => "accept",
            ElicitationAction::Decline => "decline",
            ElicitationAction::Cancel => "cancel",
        }
    }
}

/// Why odek answered an elicitation itself (`elicitation_declined.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeclineReason {
    /// The configured `elicitation` policy (a headless face; URL mode there; `accept_defaults`
    /// with a required field that has no default).
    Policy,
    /// Nobody answered within the timeout, or the turn was cancelled.
    NoAnswer,
    /// The request broke the rules (its schema, its URL, its size): refused with an error.
    InvalidRequest,
    /// Too many elicitations of this server were open: refused with an error.
    TooMany,
    /// The face's answer did not fit the form.
    InvalidAnswer,
}

impl DeclineReason {
    /// Every reason.
    pub const ALL: [DeclineReason; 5] = [
        DeclineReason::Policy,
        DeclineReason::NoAnswer,
        DeclineReason::InvalidRequest,
        DeclineReason::TooMany,
        DeclineReason::InvalidAnswer,
    ];

    /// The word events use.
    pub fn as_str(self) -> &'static str {
        match self {
            DeclineReason::Policy => "policy",
            DeclineReason::NoAnswer => "no_answer",
            DeclineReason::InvalidRequest => "invalid_request",
            DeclineReason::TooMany => "too_many",
            DeclineReason::InvalidAnswer => "invalid_answer",
        }
    }
}

/// Form or URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElicitationMode {
    Form,
    Url,
}

impl ElicitationMode {
    /// Both modes.
    pub const ALL: [ElicitationMode; 2] = [ElicitationMode::Form, ElicitationMode::Url];

    /// The protocol's word.
    pub fn as_str(self) -> &'static str {
        match self {
            ElicitationMode::Form => "form",
            ElicitationMode::Url => "url",
        }
    }
}

/// One elicitation, as a face shows it. Every text is the server's: show it terminal-safe.
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitationRequest {
    /// The configured name of the server asking.
    pub server: String,
    /// What the server says it needs, cut to [`MAX_SHOWN_CHARS`].
    pub message: String,
    pub kind: ElicitationKind,
}

impl ElicitationRequest {
    /// Form or URL.
    pub fn mode(&self) -> ElicitationMode {
        match self.kind {
            ElicitationKind::Form(_) => ElicitationMode::Form,
            ElicitationKind::Url { .. } => ElicitationMode::Url,
        }
    }
}

/// What is asked.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitationKind {
    /// Fill in a form.
    Form(Form),
    /// Open a page (2025-11-25): the person agrees, or not; the page itself is out of band.
    Url {
        /// An absolute `http`/`https` URL.
        url: url::Url,
        /// The server's id for it (opaque).
        elicitation_id: String,
    },
}

/// A flat form of primitive fields, in the schema's order.
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    pub fields: Vec<FormField>,
}

/// One field of a form.
#[derive(Debug, Clone, PartialEq)]
pub struct FormField {
    /// The property name (the answer's key).
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub required: bool,
    pub kind: FieldKind,
    /// SEP-1034: the value shown pre-filled, checked against the field.
    pub default: Option<Value>,
}

/// What a field holds.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    Text {
        min_length: Option<u64>,
        max_length: Option<u64>,
        format: Option<TextFormat>,
    },
    Number {
        integer: bool,
        minimum: Option<f64>,
        maximum: Option<f64>,
    },
    Boolean,
    /// One of the options (`enum`, titled `oneOf`, legacy `enumNames`).
    Choice {
        options: Vec<Choice>,
    },
    /// Several of the options (an `array` of `enum` / titled `anyOf` items).
    Choices {
        options: Vec<Choice>,
        min_items: Option<u64>,
        max_items: Option<u64>,
    },
}

/// One option of an enum field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub value: String,
    pub title: Option<String>,
}

/// A string field's `format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextFormat {
    Email,
    Uri,
    Date,
    DateTime,
}

impl TextFormat {
    fn parse(name: &str) -> Option<TextFormat> {
        Some(match name {
            "email" => TextFormat::Email,
            "uri" => TextFormat::Uri,
            "date" => TextFormat::Date,
            "date-time" => TextFormat::DateTime,
            _ => return None,
        })
    }

    /// The schema's word.
    pub fn as_str(self) -> &'static str {
        match self {
            TextFormat::Email => "email",
            TextFormat::Uri => "uri",
            TextFormat::Date => "date",
            TextFormat::DateTime => "date-time",
        }
    }
}

/// Why an elicitation request is refused; the text is the error reply's message and the
/// warning's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ElicitationError {
    #[error("elicitation params are missing or not an object")]
    NotAnObject,
    #[error("elicitation mode {0:?} is not supported")]
    UnknownMode(String),
    #[error("elicitation message is missing")]
    NoMessage,
    #[error("requestedSchema is missing")]
    NoSchema,
    #[error("requestedSchema must be an object schema with properties")]
    NotAnObjectSchema,
    #[error("requestedSchema has more than {MAX_FORM_FIELDS} properties")]
    TooManyFields,
    #[error("requestedSchema: property {field:?}: {problem}")]
    Field { field: String, problem: String },
    #[error("requestedSchema: required names {0:?}, which is not a property")]
    UnknownRequired(String),
    #[error("url elicitation: {0}")]
    Url(String),
}

impl ElicitationError {
    fn field(field: &str, problem: impl Into<String>) -> ElicitationError {
        ElicitationError::Field { field: cut(field, 64), problem: problem.into() }
    }
}

/// Reads the `params` of an `elicitation/create` from `server`: a form (no `mode`, or `form`)
/// or a URL (`url`). The work is bounded whatever the size of `params`: the properties and
/// options are read up to their caps and refused past them, texts are cut for showing.
pub fn read_elicitation(server: &str, params: Option<&str>) -> Result<ElicitationRequest, ElicitationError> {
    let params: RawParams<'_> =
        params.and_then(|params| serde_json::from_str(params).ok()).ok_or(ElicitationError::NotAnObject)?;
    let message = params.message.ok_or(ElicitationError::NoMessage)?;
    let message = cut(&message, MAX_SHOWN_CHARS);
    let kind = match params.mode.as_deref() {
        None | Some("form") => {
            ElicitationKind::Form(read_form(params.requested_schema.ok_or(ElicitationError::NoSchema)?)?)
        }
        Some("url") => read_url(params.url, params.elicitation_id)?,
        Some(other) => return Err(ElicitationError::UnknownMode(cut(other, 64))),
    };
    Ok(ElicitationRequest { server: server.to_owned(), message, kind })
}

fn read_url(url: Option<String>, id: Option<String>) -> Result<ElicitationKind, ElicitationError> {
    let url = url.ok_or_else(|| ElicitationError::Url("url is missing".into()))?;
    if url.len() > MAX_URL_BYTES {
        return Err(ElicitationError::Url(format!("url is longer than {MAX_URL_BYTES} bytes")));
    }
    let parsed =
        url::Url::parse(&url).map_err(|error| ElicitationError::Url(format!("url does not parse: {error}")))?;
    if !matches!(parsed.scheme(), "https" | "http") || parsed.host_str().is_none_or(str::is_empty) {
        return Err(ElicitationError::Url("url must be an http or https URL with a host".into()));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(ElicitationError::Url("url must not carry credentials".into()));
    }
    let elicitation_id =
        id.filter(|id| !id.is_empty()).ok_or_else(|| ElicitationError::Url("elicitationId is missing".into()))?;
    if elicitation_id.len() > MAX_ELICITATION_ID_BYTES {
        return Err(ElicitationError::Url(format!("elicitationId is longer than {MAX_ELICITATION_ID_BYTES} bytes")));
    }
    Ok(ElicitationKind::Url { url: parsed, elicitation_id })
}

fn read_form(schema: &RawValue) -> Result<Form, ElicitationError> {
    let schema: RawSchema<'_> = serde_json::from_str(schema.get()).map_err(|error| {
        if error.to_string().starts_with(TOO_MANY) {
            ElicitationError::TooManyFields
        } else {
            ElicitationError::NotAnObjectSchema
        }
    })?;
    if schema.kind.as_deref() != Some("object") {
        return Err(ElicitationError::NotAnObjectSchema);
    }
    let properties = schema.properties.ok_or(ElicitationError::NotAnObjectSchema)?.0;
    let required = schema.required.map(|required| required.0).unwrap_or_default();
    if let Some(unknown) = required.iter().find(|name| !properties.iter().any(|(field, _)| field == *name)) {
        return Err(ElicitationError::UnknownRequired(cut(unknown, 64)));
    }
    let mut fields = Vec::with_capacity(properties.len());
    for (name, raw) in properties {
        if name.is_empty() || name.len() > MAX_FIELD_NAME_BYTES {
            return Err(ElicitationError::field(&name, "the name must be 1 to 256 bytes"));
        }
        if fields.iter().any(|field: &FormField| field.name == name) {
            return Err(ElicitationError::field(&name, "named twice"));
        }
        let required = required.contains(&name);
        fields.push(read_field(name, raw, required)?);
    }
    Ok(Form { fields })
}

fn read_field(name: String, raw: &RawValue, required: bool) -> Result<FormField, ElicitationError> {
    let property: RawProperty = serde_json::from_str(raw.get())
        .map_err(|error| ElicitationError::field(&name, format!("not a primitive schema ({})", first_words(&error))))?;
    let kind = field_kind(&name, &property)?;
    let mut field = FormField {
        title: property.title.as_deref().map(|title| cut(title, MAX_SHOWN_CHARS)),
        description: property.description.as_deref().map(|text| cut(text, MAX_SHOWN_CHARS)),
        required,
        kind,
        default: None,
        name,
    };
    if let Some(default) = property.default {
        field
            .check_value(&default)
            .map_err(|problem| ElicitationError::field(&field.name, format!("default: {problem}")))?;
        field.default = Some(default);
    }
    Ok(field)
}

fn field_kind(name: &str, property: &RawProperty) -> Result<FieldKind, ElicitationError> {
    let bad = |problem: &str| ElicitationError::field(name, problem);
    let ordered = |low: Option<f64>, high: Option<f64>, what: &str| match (low, high) {
        (Some(low), Some(high)) if low > high => Err(bad(&format!("{what}: the minimum is above the maximum"))),
        _ => Ok(()),
    };
    let as_f64 = |value: Option<u64>| value.map(|value| value as f64);
    match property.kind.as_deref() {
        Some("string") => {
            if let Some(one_of) = &property.one_of {
                return Ok(FieldKind::Choice { options: titled(name, &one_of.0)? });
            }
            if let Some(values) = &property.enumeration {
                let names = property.enum_names.as_ref().map(|names| &names.0);
                if names.is_some_and(|names| names.len() != values.0.len()) {
                    return Err(bad("enumNames and enum differ in length"));
                }
                let options = values
                    .0
                    .iter()
                    .enumerate()
                    .map(|(index, value)| Choice {
                        value: value.clone(),
                        title: names.and_then(|names| names.get(index)).map(|title| cut(title, MAX_SHOWN_CHARS)),
                    })
                    .collect();
                return checked_options(name, options).map(|options| FieldKind::Choice { options });
            }
            ordered(as_f64(property.min_length), as_f64(property.max_length), "length")?;
            let format = property.format.as_deref().and_then(TextFormat::parse);
            Ok(FieldKind::Text { min_length: property.min_length, max_length: property.max_length, format })
        }
        Some(kind @ ("number" | "integer")) => {
            if property.minimum.is_some_and(|value| !value.is_finite())
                || property.maximum.is_some_and(|value| !value.is_finite())
            {
                return Err(bad("minimum and maximum must be finite"));
            }
            ordered(property.minimum, property.maximum, "value")?;
            Ok(FieldKind::Number { integer: kind == "integer", minimum: property.minimum, maximum: property.maximum })
        }
        Some("boolean") => Ok(FieldKind::Boolean),
        Some("array") => {
            let items = property.items.as_ref().ok_or_else(|| bad("an array needs enum items"))?;
            let options = match (&items.enumeration, &items.any_of) {
                (_, Some(any_of)) => titled(name, &any_of.0)?,
                (Some(values), None) => checked_options(
                    name,
                    values.0.iter().map(|value| Choice { value: value.clone(), title: None }).collect(),
                )?,
                (None, None) => return Err(bad("an array's items must be an enum of strings")),
            };
            ordered(as_f64(property.min_items), as_f64(property.max_items), "items")?;
            Ok(FieldKind::Choices { options, min_items: property.min_items, max_items: property.max_items })
        }
        Some(other) => Err(bad(&format!("type {} is not a primitive", cut(other, 32)))),
        None => Err(bad("the type is missing")),
    }
}

fn titled(name: &str, options: &[RawTitled]) -> Result<Vec<Choice>, ElicitationError> {
    let options = options
        .iter()
        .map(|option| Choice {
            value: option.value.clone(),
            title: option.title.as_deref().map(|t| cut(t, MAX_SHOWN_CHARS)),
        })
        .collect();
    checked_options(name, options)
}

fn checked_options(name: &str, options: Vec<Choice>) -> Result<Vec<Choice>, ElicitationError> {
    if options.is_empty() {
        return Err(ElicitationError::field(name, "an enum needs at least one option"));
    }
    for (index, option) in options.iter().enumerate() {
        if options[..index].iter().any(|earlier| earlier.value == option.value) {
            return Err(ElicitationError::field(name, "an option is listed twice"));
        }
    }
    Ok(options)
}

impl Form {
    /// SEP-1034: every field's default, by name.
    pub fn defaults(&self) -> Map<String, Value> {
        self.fields
            .iter()
            .filter_map(|field| field.default.clone().map(|default| (field.name.clone(), default)))
            .collect()
    }

    /// The form filled with its defaults alone, or `None` when a required field has none (what
    /// `accept_defaults` accepts).
    pub fn filled_with_defaults(&self) -> Option<Map<String, Value>> {
        if self.fields.iter().any(|field| field.required && field.default.is_none()) {
            return None;
        }
        Some(self.defaults())
    }

    /// Checks a whole answer: only the form's fields, every required one, each value fitting
    /// its field. The error names the field.
    pub fn check_answer(&self, content: &Map<String, Value>) -> Result<(), String> {
        for (name, value) in content {
            let field = self
                .fields
                .iter()
                .find(|field| &field.name == name)
                .ok_or_else(|| format!("{:?} is not a field of the form", cut(name, 64)))?;
            field.check_value(value).map_err(|problem| format!("{}: {problem}", field.name))?;
        }
        match self.fields.iter().find(|field| field.required && !content.contains_key(&field.name)) {
            Some(missing) => Err(format!("{}: required", missing.name)),
            None => Ok(()),
        }
    }
}

impl FormField {
    /// How a face labels it: its title, else its name.
    pub fn label(&self) -> &str {
        self.title.as_deref().filter(|title| !title.trim().is_empty()).unwrap_or(&self.name)
    }

    /// Reads what a person typed for this field into its value, or says why it does not fit.
    /// Text is taken as typed; a number as a JSON number; a boolean as `y`/`yes`/`true` or
    /// `n`/`no`/`false`; a choice as an option's value or title, or its number (from 1); several
    /// choices as those, comma-separated.
    pub fn parse_answer(&self, typed: &str) -> Result<Value, String> {
        let value = match &self.kind {
            FieldKind::Text { .. } => Value::String(typed.to_owned()),
            FieldKind::Number { integer, .. } => {
                let typed = typed.trim();
                if *integer {
                    typed.parse::<i64>().map(Value::from).map_err(|_| "not a whole number".to_owned())?
                } else {
                    let parsed: f64 = typed.parse().map_err(|_| "not a number".to_owned())?;
                    serde_json::Number::from_f64(parsed).map(Value::Number).ok_or_else(|| "not a number".to_owned())?
                }
            }
            FieldKind::Boolean => match typed.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Value::Bool(true),
                "n" | "no" | "false" => Value::Bool(false),
                _ => return Err("answer yes or no".to_owned()),
            },
            FieldKind::Choice { options } => Value::String(pick(options, typed.trim())?.value.clone()),
            FieldKind::Choices { options, .. } => {
                let mut picked: Vec<Value> = Vec::new();
                for part in typed.split(',').map(str::trim).filter(|part| !part.is_empty()) {
                    let value = Value::String(pick(options, part)?.value.clone());
                    if !picked.contains(&value) {
                        picked.push(value);
                    }
                }
                Value::Array(picked)
            }
        };
        self.check_value(&value)?;
        Ok(value)
    }

    /// Whether `value` fits the field; the error says why not.
    pub fn check_value(&self, value: &Value) -> Result<(), String> {
        match (&self.kind, value) {
            (FieldKind::Text { min_length, max_length, format }, Value::String(text)) => {
                let chars = text.chars().count();
                let limit = max_length
                    .map_or(MAX_ANSWER_CHARS, |max| usize::try_from(max).unwrap_or(usize::MAX).min(MAX_ANSWER_CHARS));
                if chars > limit {
                    return Err(format!("at most {limit} characters"));
                }
                if let Some(min) = min_length
                    && (chars as u64) < *min
                {
                    return Err(format!("at least {min} characters"));
                }
                match format {
                    Some(format) if !fits_format(*format, text) => Err(format!("not a valid {}", format.as_str())),
                    _ => Ok(()),
                }
            }
            (FieldKind::Number { integer, minimum, maximum }, Value::Number(number)) => {
                if *integer && !(number.is_i64() || number.is_u64()) {
                    return Err("not a whole number".to_owned());
                }
                let value = number.as_f64().unwrap_or(f64::NAN);
                if minimum.is_some_and(|minimum| value < minimum) {
                    return Err(format!("at least {}", minimum.unwrap_or_default()));
                }
                if maximum.is_some_and(|maximum| value > maximum) {
                    return Err(format!("at most {}", maximum.unwrap_or_default()));
                }
                Ok(())
            }
            (FieldKind::Boolean, Value::Bool(_)) => Ok(()),
            (FieldKind::Choice { options }, Value::String(text)) => {
                if options.iter().any(|option| &option.value == text) {
                    Ok(())
                } else {
                    Err("not one of the options".to_owned())
                }
            }
            (FieldKind::Choices { options, min_items, max_items }, Value::Array(items)) => {
                for (index, item) in items.iter().enumerate() {
                    let known = item.as_str().is_some_and(|item| options.iter().any(|option| option.value == item));
                    if !known {
                        return Err("not one of the options".to_owned());
                    }
                    if items[..index].contains(item) {
                        return Err("an option is chosen twice".to_owned());
                    }
                }
                let count = items.len() as u64;
                if min_items.is_some_and(|min| count < min) {
                    return Err(format!("choose at least {}", min_items.unwrap_or_default()));
                }
                if max_items.is_some_and(|max| count > max) {
                    return Err(format!("choose at most {}", max_items.unwrap_or_default()));
                }
                Ok(())
            }
            _ => Err(format!("expected {}", self.expected())),
        }
    }

    fn expected(&self) -> &'static str {
        match &self.kind {
            FieldKind::Text { .. } | FieldKind::Choice { .. } => "a string",
            FieldKind::Number { integer: true, .. } => "an integer",
            FieldKind::Number { .. } => "a number",
            FieldKind::Boolean => "true or false",
            FieldKind::Choices { .. } => "a list of options",
        }
    }
}

/// The option `typed` names: its value, its title (ignoring case), or its number from 1.
fn pick<'o>(options: &'o [Choice], typed: &str) -> Result<&'o Choice, String> {
    let by_number =
        typed.parse::<usize>().ok().and_then(|number| number.checked_sub(1)).and_then(|index| options.get(index));
    options
        .iter()
        .find(|option| option.value == typed)
        .or_else(|| {
            options.iter().find(|option| option.title.as_deref().is_some_and(|title| title.eq_ignore_ascii_case(typed)))
        })
        .or(by_number)
        .ok_or_else(|| "not one of the options".to_owned())
}

/// The `format`s of the form spec, checked as a person would expect: a mail address with one
/// `@`, an absolute URI, a calendar date, an RFC 3339 date and time.
fn fits_format(format: TextFormat, text: &str) -> bool {
    match format {
        TextFormat::Email => is_email(text),
        TextFormat::Uri => url::Url::parse(text).is_ok(),
        TextFormat::Date => is_date(text),
        TextFormat::DateTime => is_date_time(text),
    }
}

fn is_email(text: &str) -> bool {
    let Some((local, domain)) = text.split_once('@') else { return false };
    !local.is_empty()
        && !domain.is_empty()
        && !domain.contains('@')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !text.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// `YYYY-MM-DD` with a month 1–12 and a day that month has.
fn is_date(text: &str) -> bool {
    let bytes = text.as_bytes();
    if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
        return false;
    }
    let number = |range: std::ops::Range<usize>| {
        text.get(range)
            .filter(|part| part.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|part| part.parse::<u32>().ok())
    };
    let (Some(year), Some(month), Some(day)) = (number(0..4), number(5..7), number(8..10)) else { return false };
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// RFC 3339: a date, `T`, `HH:MM:SS`, optional fraction, then `Z` or `±HH:MM`.
fn is_date_time(text: &str) -> bool {
    let Some((date, time)) = text.split_once(['T', 't']) else { return false };
    if !is_date(date) {
        return false;
    }
    let clock = |part: &str, with_seconds: bool| {
        let pieces: Vec<&str> = part.split(':').collect();
        let wanted = if with_seconds { 3 } else { 2 };
        pieces.len() == wanted
            && pieces.iter().zip([23u32, 59, 60]).all(|(piece, max)| {
                piece.len() == 2
                    && piece.bytes().all(|b| b.is_ascii_digit())
                    && piece.parse::<u32>().is_ok_and(|v| v <= max)
            })
    };
    let (clock_part, offset) = if let Some(stripped) = time.strip_suffix(['Z', 'z']) {
        (stripped, None)
    } else {
        match time.rfind(['+', '-']) {
            Some(at) => (&time[..at], Some(&time[at + 1..])),
            None => return false,
        }
    };
    let (seconds, fraction) = match clock_part.split_once('.') {
        Some((seconds, fraction)) => (seconds, Some(fraction)),
        None => (clock_part, None),
    };
    clock(seconds, true)
        && fraction.is_none_or(|fraction| !fraction.is_empty() && fraction.bytes().all(|b| b.is_ascii_digit()))
        && offset.is_none_or(|offset| clock(offset, false))
}

/// What a headless face answers (config `elicitation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ElicitationPolicy {
    /// `decline`, the default.
    #[default]
    Decline,
    /// `cancel`.
    Cancel,
    /// `accept_defaults`: a form with a default for every required field is accepted filled
    /// with its defaults alone; any other form is declined, and so is every URL.
    AcceptDefaults,
}

impl ElicitationPolicy {
    /// Every policy with its config word.
    pub const ALL: [(ElicitationPolicy, &'static str); 3] = [
        (ElicitationPolicy::Decline, "decline"),
        (ElicitationPolicy::Cancel, "cancel"),
        (ElicitationPolicy::AcceptDefaults, "accept_defaults"),
    ];

    /// The policy a config word names.
    pub fn parse(word: &str) -> Option<ElicitationPolicy> {
        Self::ALL.iter().find(|(_, name)| *name == word).map(|(policy, _)| *policy)
    }

    /// Its config word.
    pub fn as_str(self) -> &'static str {
        Self::ALL.iter().find(|(policy, _)| *policy == self).map_or("decline", |(_, name)| name)
    }

    /// The policy's answer to `request`, at once.
    pub fn answer(self, request: &ElicitationRequest) -> Elicited {
        let declined = |action| Elicited::Declined { action, reason: DeclineReason::Policy };
        match (self, &request.kind) {
            (ElicitationPolicy::Cancel, _) => declined(ElicitationAction::Cancel),
            (ElicitationPolicy::AcceptDefaults, ElicitationKind::Form(form)) => match form.filled_with_defaults() {
                Some(content) => Elicited::Answered(ElicitationAnswer::Accept(content)),
                None => declined(ElicitationAction::Decline),
            },
            (ElicitationPolicy::Decline | ElicitationPolicy::AcceptDefaults, _) => declined(ElicitationAction::Decline),
        }
    }
}

impl fmt::Display for ElicitationPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An [`Elicitor`] that asks nobody: the policy answers (headless faces, tests, the
/// conformance adapter's `accept_defaults`).
#[derive(Debug, Clone, Copy, Default)]
pub struct PolicyElicitor(pub ElicitationPolicy);

impl Elicitor for PolicyElicitor {
    fn elicit(&self, request: ElicitationRequest) -> ElicitFuture {
        let answer = self.0.answer(&request);
        Box::pin(std::future::ready(answer))
    }
}

/// The result line's `result` for `answer` (`content` only for an accepted form).
pub fn result_json(answer: &ElicitationAnswer, mode: ElicitationMode) -> Value {
    let mut result = Map::new();
    result.insert("action".into(), Value::from(answer.action().as_str()));
    if let (ElicitationAnswer::Accept(content), ElicitationMode::Form) = (answer, mode) {
        result.insert("content".into(), Value::Object(content.clone()));
    }
    Value::Object(result)
}

/// `text` cut to `max` characters, with `…` when cut.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// The start of a serde error, without its position.
fn first_words(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let text = text.split(" at line ").next().unwrap_or_default();
    cut(text, 120)
}

// The raw shapes, read with bounded collections.

#[derive(Deserialize)]
struct RawParams<'a> {
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default, rename = "requestedSchema", borrow)]
    requested_schema: Option<&'a RawValue>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default, rename = "elicitationId")]
    elicitation_id: Option<String>,
}

#[derive(Deserialize)]
struct RawSchema<'a> {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default, borrow)]
    properties: Option<Properties<'a>>,
    #[serde(default)]
    required: Option<Bounded<String, MAX_FORM_FIELDS>>,
}

#[derive(Deserialize)]
struct RawProperty {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default, rename = "minLength")]
    min_length: Option<u64>,
    #[serde(default, rename = "maxLength")]
    max_length: Option<u64>,
    #[serde(default)]
    format: Option<String>,
    #[serde(default)]
    minimum: Option<f64>,
    #[serde(default)]
    maximum: Option<f64>,
    #[serde(default, rename = "enum")]
    enumeration: Option<Bounded<String, MAX_FIELD_OPTIONS>>,
    #[serde(default, rename = "enumNames")]
    enum_names: Option<Bounded<String, MAX_FIELD_OPTIONS>>,
    #[serde(default, rename = "oneOf")]
    one_of: Option<Bounded<RawTitled, MAX_FIELD_OPTIONS>>,
    #[serde(default)]
    items: Option<RawItems>,
    #[serde(default, rename = "minItems")]
    min_items: Option<u64>,
    #[serde(default, rename = "maxItems")]
    max_items: Option<u64>,
    #[serde(default)]
    default: Option<Value>,
}

#[derive(Deserialize)]
struct RawItems {
    #[serde(default, rename = "enum")]
    enumeration: Option<Bounded<String, MAX_FIELD_OPTIONS>>,
    #[serde(default, rename = "anyOf")]
    any_of: Option<Bounded<RawTitled, MAX_FIELD_OPTIONS>>,
}

#[derive(Deserialize)]
struct RawTitled {
    #[serde(rename = "const")]
    value: String,
    #[serde(default)]
    title: Option<String>,
}

/// The start of the error a bounded collection stops the parse with.
const TOO_MANY: &str = "too many entries";

/// A JSON array of at most `MAX` elements; the parse stops at the one past it.
struct Bounded<T, const MAX: usize>(Vec<T>);

impl<'de, T: Deserialize<'de>, const MAX: usize> Deserialize<'de> for Bounded<T, MAX> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Elements<T, const MAX: usize>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>, const MAX: usize> Visitor<'de> for Elements<T, MAX> {
            type Value = Bounded<T, MAX>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "an array of at most {MAX} elements")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut elements = Vec::new();
                while let Some(element) = seq.next_element()? {
                    if elements.len() == MAX {
                        return Err(serde::de::Error::custom(TOO_MANY));
                    }
                    elements.push(element);
                }
                Ok(Bounded(elements))
            }
        }
        deserializer.deserialize_seq(Elements(std::marker::PhantomData))
    }
}

/// The `properties` object, in order, at most [`MAX_FORM_FIELDS`] of them, each left raw.
struct Properties<'a>(Vec<(String, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for Properties<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Entries<'a> {
            type Value = Properties<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "an object of at most {MAX_FORM_FIELDS} properties")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::new();
                while let Some((name, raw)) = map.next_entry::<String, &'de RawValue>()? {
                    if entries.len() == MAX_FORM_FIELDS {
                        return Err(serde::de::Error::custom(TOO_MANY));
                    }
                    entries.push((name, raw));
                }
                Ok(Properties(entries))
            }
        }
        deserializer.deserialize_map(Entries(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use serde_json::json;

    fn form(schema: Value) -> Result<Form, ElicitationError> {
        let params = json!({"message": "Who are you?", "requestedSchema": schema}).to_string();
        read_elicitation("srv", Some(&params)).map(|request| match request.kind {
            ElicitationKind::Form(form) => form,
            ElicitationKind::Url { .. } => panic!("a form"),
        })
    }

    /// The SEP-1034 conformance scenario's schema: every default applied.
    fn sep1034() -> Value {
        json!({"type": "object", "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "default": true}
        }, "required": []})
    }

    #[test]
    fn the_sep1034_form_is_accepted_with_every_default() {
        let form = form(sep1034()).unwrap();
        assert_eq!(form.fields.len(), 5);
        let request = ElicitationRequest { server: "s".into(), message: "m".into(), kind: ElicitationKind::Form(form) };
        let Elicited::Answered(answer) = ElicitationPolicy::AcceptDefaults.answer(&request) else { panic!("answered") };
        assert_eq!(
            result_json(&answer, ElicitationMode::Form),
            json!({"action": "accept", "content": {
                "name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true
            }})
        );
    }

    #[test]
    fn accept_defaults_declines_when_a_required_field_has_no_default_and_every_url() {
        let form = form(json!({"type": "object", "properties": {
            "name": {"type": "string"}, "age": {"type": "integer", "default": 3}
        }, "required": ["name"]}))
        .unwrap();
        assert_eq!(form.filled_with_defaults(), None);
        let request = ElicitationRequest { server: "s".into(), message: "m".into(), kind: ElicitationKind::Form(form) };
        let declined = Elicited::Declined { action: ElicitationAction::Decline, reason: DeclineReason::Policy };
        assert_eq!(ElicitationPolicy::AcceptDefaults.answer(&request), declined);
        assert_eq!(ElicitationPolicy::Decline.answer(&request), declined);
        assert_eq!(
            ElicitationPolicy::Cancel.answer(&request),
            Elicited::Declined { action: ElicitationAction::Cancel, reason: DeclineReason::Policy }
        );
        let params =
            json!({"mode": "url", "message": "Sign in", "url": "https://example.com/x", "elicitationId": "e1"});
        let url = read_elicitation("s", Some(&params.to_string())).unwrap();
        assert_eq!(url.mode(), ElicitationMode::Url);
        assert_eq!(ElicitationPolicy::AcceptDefaults.answer(&url), declined);
    }

    #[test]
    fn fields_keep_the_order_the_server_wrote() {
        let params = r#"{"message":"m","requestedSchema":{"type":"object","properties":{
            "zeta":{"type":"string"},"alpha":{"type":"boolean"},"mid":{"type":"number"}}}}"#;
        let ElicitationKind::Form(form) = read_elicitation("s", Some(params)).unwrap().kind else { panic!("a form") };
        let names: Vec<&str> = form.fields.iter().map(|field| field.name.as_str()).collect();
        assert_eq!(names, ["zeta", "alpha", "mid"]);
    }

    #[test]
    fn every_primitive_kind_and_enum_form_is_read() {
        let form = form(json!({"type": "object", "properties": {
            "mail": {"type": "string", "format": "email", "minLength": 3, "maxLength": 50, "title": "Mail"},
            "count": {"type": "integer", "minimum": 1, "maximum": 9},
            "ok": {"type": "boolean"},
            "plain": {"type": "string", "enum": ["a", "b"]},
            "legacy": {"type": "string", "enum": ["a", "b"], "enumNames": ["Alpha", "Beta"]},
            "titled": {"type": "string", "oneOf": [{"const": "x", "title": "Ex"}, {"const": "y", "title": "Why"}]},
            "many": {"type": "array", "items": {"type": "string", "enum": ["r", "g", "b"]}, "maxItems": 2, "default": ["r"]},
            "many_titled": {"type": "array", "items": {"anyOf": [{"const": "r", "title": "Red"}]}}
        }, "required": ["mail"]}))
        .unwrap();
        // Whether `json!` keeps its keys' order depends on serde_json's features: not asserted here.
        assert_eq!(form.fields.len(), 8);
        let field = |name: &str| form.fields.iter().find(|field| field.name == name).unwrap();
        assert!(field("mail").required && !field("count").required);
        assert_eq!(field("mail").label(), "Mail");
        let FieldKind::Choice { options } = &field("legacy").kind else { panic!("a choice") };
        assert_eq!(options[1], Choice { value: "b".into(), title: Some("Beta".into()) });
        assert!(
            matches!(&field("many_titled").kind, FieldKind::Choices { options, .. } if options[0].title.as_deref() == Some("Red"))
        );
        assert_eq!(form.defaults(), json!({"many": ["r"]}).as_object().unwrap().clone());
    }

    #[test]
    fn answers_are_parsed_and_checked_against_their_field() {
        let form = form(json!({"type": "object", "properties": {
            "mail": {"type": "string", "format": "email"},
            "count": {"type": "integer", "minimum": 1, "maximum": 9},
            "ratio": {"type": "number"},
            "ok": {"type": "boolean"},
            "titled": {"type": "string", "oneOf": [{"const": "x", "title": "Ex"}, {"const": "y", "title": "Why"}]},
            "many": {"type": "array", "items": {"type": "string", "enum": ["r", "g", "b"]}, "minItems": 1, "maxItems": 2},
            "day": {"type": "string", "format": "date"},
            "when": {"type": "string", "format": "date-time"},
            "short": {"type": "string", "maxLength": 3}
        }}))
        .unwrap();
        let field = |name: &str| form.fields.iter().find(|field| field.name == name).unwrap();
        assert_eq!(field("mail").parse_answer("a@b.c"), Ok(json!("a@b.c")));
        assert_eq!(field("mail").parse_answer("not mail"), Err("not a valid email".into()));
        assert_eq!(field("count").parse_answer(" 7 "), Ok(json!(7)));
        assert_eq!(field("count").parse_answer("10"), Err("at most 9".into()));
        assert_eq!(field("count").parse_answer("1.5"), Err("not a whole number".into()));
        assert_eq!(field("ratio").parse_answer("0.25"), Ok(json!(0.25)));
        assert_eq!(field("ok").parse_answer("Yes"), Ok(json!(true)));
        assert_eq!(field("ok").parse_answer("maybe"), Err("answer yes or no".into()));
        assert_eq!(field("titled").parse_answer("why"), Ok(json!("y")));
        assert_eq!(field("titled").parse_answer("1"), Ok(json!("x")));
        assert_eq!(field("titled").parse_answer("z"), Err("not one of the options".into()));
        assert_eq!(field("many").parse_answer("r, b, r"), Ok(json!(["r", "b"])));
        assert_eq!(field("many").parse_answer("r,g,b"), Err("choose at most 2".into()));
        assert_eq!(field("many").parse_answer(""), Err("choose at least 1".into()));
        assert_eq!(field("day").parse_answer("2024-02-29"), Ok(json!("2024-02-29")));
        assert!(field("day").parse_answer("2023-02-29").is_err());
        assert!(field("when").parse_answer("2024-05-01T10:20:30.5+02:00").is_ok());
        assert!(field("when").parse_answer("2024-05-01T25:20:30Z").is_err());
        assert_eq!(field("short").parse_answer("abcd"), Err("at most 3 characters".into()));
        let answer = json!({"count": 3, "ok": false}).as_object().unwrap().clone();
        assert_eq!(form.check_answer(&answer), Ok(()));
        let extra = json!({"count": 3, "other": 1}).as_object().unwrap().clone();
        assert_eq!(form.check_answer(&extra), Err("\"other\" is not a field of the form".into()));
        let wrong = json!({"count": "3"}).as_object().unwrap().clone();
        assert_eq!(form.check_answer(&wrong), Err("count: expected an integer".into()));
    }

    #[test]
    fn a_text_answer_longer_than_the_cap_is_refused_whatever_the_schema_allows_red() {
        let form =
            form(json!({"type": "object", "properties": {"text": {"type": "string", "maxLength": 1000000}}})).unwrap();
        let long = "x".repeat(MAX_ANSWER_CHARS + 1);
        assert_eq!(form.fields[0].parse_answer(&long), Err(format!("at most {MAX_ANSWER_CHARS} characters")));
        assert!(form.fields[0].parse_answer(&"x".repeat(MAX_ANSWER_CHARS)).is_ok());
    }

    #[test]
    fn schemas_outside_the_form_rules_are_refused() {
        let refused = |schema: Value| form(schema).unwrap_err().to_string();
        assert_eq!(refused(json!({"type": "array"})), "requestedSchema must be an object schema with properties");
        assert_eq!(refused(json!({"type": "object"})), "requestedSchema must be an object schema with properties");
        assert_eq!(
            refused(json!({"type": "object", "properties": {"a": {"type": "object", "properties": {}}}})),
            "requestedSchema: property \"a\": type object is not a primitive"
        );
        assert_eq!(
            refused(json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]})),
            "requestedSchema: required names \"b\", which is not a property"
        );
        assert_eq!(
            refused(json!({"type": "object", "properties": {"a": {"type": "integer", "maximum": 3, "default": 4}}})),
            "requestedSchema: property \"a\": default: at most 3"
        );
        assert_eq!(
            refused(json!({"type": "object", "properties": {"a": {"type": "string", "enum": []}}})),
            "requestedSchema: property \"a\": an enum needs at least one option"
        );
        assert_eq!(
            refused(json!({"type": "object", "properties": {"a": {"type": "number", "minimum": 5, "maximum": 1}}})),
            "requestedSchema: property \"a\": value: the minimum is above the maximum"
        );
        assert_eq!(
            refused(json!({"type": "object", "properties": {"a": {}}})),
            "requestedSchema: property \"a\": the type is missing"
        );
    }

    #[test]
    fn a_schema_of_ten_thousand_fields_is_refused_after_reading_a_hundred_red() {
        let properties: Map<String, Value> =
            (0..10_000).map(|i| (format!("field{i}"), json!({"type": "string"}))).collect();
        let error = form(json!({"type": "object", "properties": properties})).unwrap_err();
        assert_eq!(error, ElicitationError::TooManyFields);
        assert_eq!(error.to_string(), "requestedSchema has more than 100 properties");
        let hundred: Map<String, Value> = (0..100).map(|i| (format!("f{i}"), json!({"type": "boolean"}))).collect();
        assert_eq!(form(json!({"type": "object", "properties": hundred})).unwrap().fields.len(), 100);
        let options: Vec<String> = (0..101).map(|i| format!("o{i}")).collect();
        let error =
            form(json!({"type": "object", "properties": {"a": {"type": "string", "enum": options}}})).unwrap_err();
        assert!(matches!(error, ElicitationError::Field { .. }), "{error}");
    }

    #[test]
    fn params_and_urls_outside_the_rules_are_refused_red() {
        let read =
            |params: Value| read_elicitation("s", Some(&params.to_string())).map(|_| ()).unwrap_err().to_string();
        assert_eq!(read_elicitation("s", None).unwrap_err(), ElicitationError::NotAnObject);
        assert_eq!(read(json!({"requestedSchema": sep1034()})), "elicitation message is missing");
        assert_eq!(read(json!({"message": "m"})), "requestedSchema is missing");
        assert_eq!(
            read(json!({"message": "m", "mode": "telepathy"})),
            "elicitation mode \"telepathy\" is not supported"
        );
        let url = |url: &str| read(json!({"message": "m", "mode": "url", "url": url, "elicitationId": "e"}));
        assert_eq!(url("javascript:alert(1)"), "url elicitation: url must be an http or https URL with a host");
        assert_eq!(url("file:///etc/passwd"), "url elicitation: url must be an http or https URL with a host");
        assert_eq!(url("https://user:pw@example.com/"), "url elicitation: url must not carry credentials");
        assert!(url(&format!("https://example.com/{}", "a".repeat(MAX_URL_BYTES))).contains("longer than"));
        assert_eq!(
            read(json!({"message": "m", "mode": "url", "url": "https://example.com/"})),
            "url elicitation: elicitationId is missing"
        );
        let long = "m".repeat(MAX_SHOWN_CHARS + 10);
        let request =
            read_elicitation("s", Some(&json!({"message": long, "requestedSchema": sep1034()}).to_string())).unwrap();
        assert_eq!(request.message.chars().count(), MAX_SHOWN_CHARS + 1);
    }

    #[test]
    fn policies_are_named_by_their_config_words() {
        for (policy, word) in ElicitationPolicy::ALL {
            assert_eq!(ElicitationPolicy::parse(word), Some(policy));
            assert_eq!(policy.as_str(), word);
        }
        assert_eq!(ElicitationPolicy::parse("accept"), None);
        assert_eq!(
            result_json(&ElicitationAnswer::Accept(Map::new()), ElicitationMode::Url),
            json!({"action": "accept"})
        );
        assert_eq!(result_json(&ElicitationAnswer::Cancel, ElicitationMode::Form), json!({"action": "cancel"}));
    }
}
