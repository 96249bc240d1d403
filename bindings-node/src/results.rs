//! JavaScript views of the core's answers, built from the core's data model
//! (`plimsoll_core::view`): plain objects with its fields camelCased, byte
//! streams as `Buffer`s. Their TypeScript types are rendered from the same
//! tables (`results.d.ts`, appended to `index.d.ts` by the build). Copies only;
//! nothing here checks.

use napi::bindgen_prelude::*;
use plimsoll_core::record::RunRecord;
use plimsoll_core::request::Request;
use plimsoll_core::view::render::camel;
use plimsoll_core::view::{self, Answer, Class, RECORD, SUMMARY, Value};
use plimsoll_core::wire::{CloseSessionResponse, RunResponse};

/// A data-model value, owned, ready to become a JavaScript value on the JS thread.
pub enum Js {
    /// Left out of its object.
    Nothing,
    /// A string.
    Text(String),
    /// A `Buffer`.
    Bytes(Vec<u8>),
    /// A number.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// An array of numbers.
    Floats(Vec<f64>),
    /// An array.
    List(Vec<Js>),
    /// An object: camelCase names and values.
    Object(Vec<(String, Js)>),
}

fn js(v: Value<'_>) -> Js {
    fn each<T>(c: &Class<T>, items: &[T]) -> Js {
        Js::List(items.iter().map(|i| object(c, i)).collect())
    }
    match v {
        Value::Nothing => Js::Nothing,
        Value::Text(s) => Js::Text(s.to_owned()),
        Value::Bytes(b) => Js::Bytes(b.to_vec()),
        Value::Int(i) => Js::Int(i),
        Value::Bool(b) => Js::Bool(b),
        Value::Floats(f) => Js::Floats(f.to_vec()),
        Value::Record(r) => object(&RECORD, r),
        Value::Steps(s) => each(&view::STEP, s),
        Value::Artifacts(a) => each(&view::ARTIFACT, a),
        Value::Rows(r) => each(&view::ROW, r),
    }
}

fn fields<'a>(values: impl IntoIterator<Item = (&'static str, Value<'a>)>) -> Js {
    Js::Object(
        values
            .into_iter()
            .map(|(name, v)| (camel(name), js(v)))
            .collect(),
    )
}

fn object<T>(c: &Class<T>, v: &T) -> Js {
    fields(c.values(v))
}

impl ToNapiValue for Js {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        // SAFETY: `env` is the valid environment napi hands a conversion.
        unsafe {
            match val {
                Js::Nothing => <()>::to_napi_value(env, ()),
                Js::Text(s) => String::to_napi_value(env, s),
                Js::Bytes(b) => Buffer::to_napi_value(env, b.into()),
                Js::Int(i) => i64::to_napi_value(env, i),
                Js::Bool(b) => bool::to_napi_value(env, b),
                Js::Floats(f) => Vec::<f64>::to_napi_value(env, f),
                Js::List(l) => Vec::<Js>::to_napi_value(env, l),
                Js::Object(fields) => {
                    let mut o = Object::new(&Env::from_raw(env))?;
                    for (name, v) in fields {
                        if !matches!(v, Js::Nothing) {
                            o.set_named_property(&name, v)?;
                        }
                    }
                    Object::to_napi_value(env, o)
                }
            }
        }
    }
}

impl TypeName for Js {
    fn type_name() -> &'static str {
        "Object"
    }

    fn value_type() -> ValueType {
        ValueType::Object
    }
}

/// The object for an answer to `request`: the common fields plus its kind's
/// (`kind` says which). An answer without a result is refused (a daemon's
/// answer always carries one).
pub fn run_result(
    request: &Request,
    response: RunResponse,
    session_end: Option<plimsoll_core::SessionEnd>,
) -> Result<(&'static str, Js)> {
    let answer = Answer::new(request, response, session_end);
    match answer.response.output.as_ref().map(|o| o.kind()) {
        Some(kind) => Ok((kind, fields(answer.values()))),
        None => Err(Error::new(
            Status::GenericFailure,
            "the answer carries no result",
        )),
    }
}

/// A run record as its object.
pub fn record(r: &RunRecord) -> Js {
    object(&RECORD, r)
}

/// A closed session's summary as its object.
pub fn summary(c: &CloseSessionResponse) -> Js {
    object(&SUMMARY, c)
}
