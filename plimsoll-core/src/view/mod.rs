//! The data model once: every field a caller reads from an answer, a run
//! record, a project step, an artifact, a module row or a session summary is
//! described here — its name, its type, what it means and how it is read.
//! Python, Node and the C ABI read answers through these tables, not by
//! hand, so a new field is one line here plus the declarations regenerated
//! from them ([`render`]: the Python stub, the TypeScript declarations and
//! the field reference for C), which a test keeps in step.
//!
//! Names are snake_case (Node camelCases them). A path (`record.sequence`,
//! `steps.0.stdout`) names a nested field for the C ABI ([`Answer::resolve`]).

use crate::error::SessionEnd;
use crate::record::RunRecord;
use crate::request::Request;
use crate::result::{Artifact, ModuleRowResult, Output, StepResult};
use crate::wire::json::encode;
use crate::wire::{RunRequest, RunResponse};

pub mod render;
mod tables;

pub use tables::{ARTIFACT, CELL, JAVASCRIPT, MODULE, PROJECT, RECORD, ROW, RUN, STEP, SUMMARY};

/// A field's type, for the declarations rendered from the tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    /// Text.
    Text,
    /// Text, or nothing.
    OptText,
    /// Bytes (a stream as kept).
    Bytes,
    /// An integer.
    Int,
    /// A flag.
    Bool,
    /// Numbers (a module row's outputs).
    Floats,
    /// The run record, or nothing.
    OptRecord,
    /// The project's steps.
    Steps,
    /// The project's artifacts.
    Artifacts,
    /// The module's rows.
    Rows,
}

/// A field's value, borrowed from the answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    /// Nothing (an optional field that is absent).
    Nothing,
    /// Text.
    Text(&'a str),
    /// Bytes.
    Bytes(&'a [u8]),
    /// An integer.
    Int(i64),
    /// A flag.
    Bool(bool),
    /// Numbers.
    Floats(&'a [f64]),
    /// The run record (read with [`RECORD`]).
    Record(&'a RunRecord),
    /// Steps (each read with [`STEP`]).
    Steps(&'a [StepResult]),
    /// Artifacts (each read with [`ARTIFACT`]).
    Artifacts(&'a [Artifact]),
    /// Module rows (each read with [`ROW`]).
    Rows(&'a [ModuleRowResult]),
}

impl Value<'_> {
    /// Whether the value is of type `ty`.
    pub fn is(&self, ty: Ty) -> bool {
        matches!(
            (self, ty),
            (Value::Text(_), Ty::Text | Ty::OptText)
                | (Value::Nothing, Ty::OptText | Ty::OptRecord)
                | (Value::Bytes(_), Ty::Bytes)
                | (Value::Int(_), Ty::Int)
                | (Value::Bool(_), Ty::Bool)
                | (Value::Floats(_), Ty::Floats)
                | (Value::Record(_), Ty::OptRecord)
                | (Value::Steps(_), Ty::Steps)
                | (Value::Artifacts(_), Ty::Artifacts)
                | (Value::Rows(_), Ty::Rows)
        )
    }
}

/// One field of a `T`.
pub struct Field<T: 'static> {
    /// Its name (snake_case).
    pub name: &'static str,
    /// Its type.
    pub ty: Ty,
    /// What it means, in one line.
    pub doc: &'static str,
    /// Reads it.
    pub read: for<'a> fn(&'a T) -> Value<'a>,
}

/// The fields of one kind of object, as the bindings name it.
pub struct Class<T: 'static> {
    /// The class or interface name (`JavaScriptResult`, `Record`, …).
    pub name: &'static str,
    /// What it is, in one line.
    pub doc: &'static str,
    /// For a result kind: the kind's name (`javascript`, …), which extends [`RUN`].
    pub kind: Option<&'static str>,
    /// Its fields, in order.
    pub fields: &'static [Field<T>],
}

impl<T> Class<T> {
    /// The field called `name`, read from `v`.
    pub fn get<'a>(&self, v: &'a T, name: &str) -> Option<Value<'a>> {
        self.fields
            .iter()
            .find(|f| f.name == name)
            .map(|f| (f.read)(v))
    }

    /// Every field, read from `v`, in order.
    pub fn values<'a>(&self, v: &'a T) -> Vec<(&'static str, Value<'a>)> {
        self.fields.iter().map(|f| (f.name, (f.read)(v))).collect()
    }
}

/// An answer as every binding shows it: the response, the request as it was
/// sent (the one its record digests) and, for a session call, how the
/// session ended during or after it.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The response.
    pub response: RunResponse,
    /// The request as sent, as the wire's `RunRequest` JSON.
    pub request_json: String,
    /// The response as the wire's `RunResponse` JSON.
    pub response_json: String,
    /// Its run record as the wire's JSON, when it carries one.
    pub record_json: Option<String>,
    /// Where its time went (the response's `phases`) as JSON, when it says.
    pub phases_json: Option<String>,
    /// For a session call: why the session ended, if it did.
    pub session_end: Option<SessionEnd>,
}

/// Text of JSON bytes (always UTF-8 from the encoder).
fn text(b: Vec<u8>) -> String {
    String::from_utf8_lossy(&b).into_owned()
}

impl Answer {
    /// The answer to `sent`.
    pub fn new(sent: &Request, response: RunResponse, session_end: Option<SessionEnd>) -> Answer {
        Answer {
            request_json: text(encode(&RunRequest::from_request(sent))),
            response_json: text(encode(&response)),
            record_json: response.record.as_ref().map(|r| text(encode(r))),
            phases_json: response
                .phases
                .as_ref()
                .and_then(|p| serde_json::to_string(p).ok()),
            response,
            session_end: session_end.filter(|e| *e != SessionEnd::Open),
        }
    }

    /// The class of its result (`JavaScriptResult`, …), or `RunResult` without one.
    pub fn class_name(&self) -> &'static str {
        match &self.response.output {
            Some(Output::JavaScript(_)) => JAVASCRIPT.name,
            Some(Output::Cell(_)) => CELL.name,
            Some(Output::Project(_)) => PROJECT.name,
            Some(Output::Module(_)) => MODULE.name,
            None => RUN.name,
        }
    }

    /// The field called `name`: a common one, or one of its result's kind.
    pub fn get(&self, name: &str) -> Option<Value<'_>> {
        RUN.get(self, name).or_else(|| match &self.response.output {
            Some(Output::JavaScript(r)) => JAVASCRIPT.get(r, name),
            Some(Output::Cell(r)) => CELL.get(r, name),
            Some(Output::Project(r)) => PROJECT.get(r, name),
            Some(Output::Module(r)) => MODULE.get(r, name),
            None => None,
        })
    }

    /// Every field: the common ones, then its kind's.
    pub fn values(&self) -> Vec<(&'static str, Value<'_>)> {
        let mut out = RUN.values(self);
        out.extend(match &self.response.output {
            Some(Output::JavaScript(r)) => JAVASCRIPT.values(r),
            Some(Output::Cell(r)) => CELL.values(r),
            Some(Output::Project(r)) => PROJECT.values(r),
            Some(Output::Module(r)) => MODULE.values(r),
            None => Vec::new(),
        });
        out
    }

    /// A field by path: `sandbox`, `record.sequence`, `steps.0.stdout`,
    /// `artifacts.1.path`, `runs.0.outputs`. `None` when nothing has that path.
    pub fn resolve(&self, path: &str) -> Option<Value<'_>> {
        let mut parts = path.split('.');
        let mut value = self.get(parts.next()?)?;
        while let Some(part) = parts.next() {
            value = match value {
                Value::Record(r) => RECORD.get(r, part)?,
                Value::Steps(s) => STEP.get(s.get(part.parse::<usize>().ok()?)?, parts.next()?)?,
                Value::Artifacts(a) => {
                    ARTIFACT.get(a.get(part.parse::<usize>().ok()?)?, parts.next()?)?
                }
                Value::Rows(r) => ROW.get(r.get(part.parse::<usize>().ok()?)?, parts.next()?)?,
                _ => return None,
            };
        }
        Some(value)
    }
}

#[cfg(test)]
mod tests;
