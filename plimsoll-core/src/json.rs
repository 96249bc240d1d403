//! ProtoJSON rules for the plimsoll.v1 messages: strict decoding and the field
//! encodings (64-bit integers as strings, bytes as base64, non-finite doubles as
//! strings, enums by name).
//!
//! Decoding is strict where the published client is strict (UTF-8 only, no
//! duplicate keys, no bare `NaN`, no lone surrogates, an object at the top) and
//! lenient where ProtoJSON is (`null` reads as absent, integers as numbers or
//! decimal strings, base64 standard or URL-safe, padded or not). Unknown fields
//! are ignored.

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde::de::{self, DeserializeOwned, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serializer};
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::fmt;

/// The most JSON values (objects, arrays, strings, numbers, booleans and
/// nulls, each counted once) one message may hold. With the body cap, this
/// bounds the tree a message is parsed into: at most 32 bytes a value, so
/// 32 MiB (and twice that while its arrays grow).
pub const MAX_VALUES: usize = 1 << 20;

/// The deepest a message may nest (serde_json's own recursion limit).
pub const MAX_DEPTH: usize = 128;

thread_local! {
    /// Values still allowed in the message being decoded on this thread.
    static VALUES_LEFT: std::cell::Cell<usize> = const { std::cell::Cell::new(MAX_VALUES) };
}

/// Counts one more value of the message being decoded, failing past [`MAX_VALUES`].
fn count_value<E: de::Error>() -> Result<(), E> {
    VALUES_LEFT.with(|left| match left.get().checked_sub(1) {
        Some(n) => {
            left.set(n);
            Ok(())
        }
        None => Err(E::custom(format_args!(
            "the message holds more than {MAX_VALUES} JSON values"
        ))),
    })
}

/// Decodes one message from JSON bytes under the strict rules above, with at
/// most [`MAX_VALUES`] values nested at most [`MAX_DEPTH`] deep.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    VALUES_LEFT.with(|left| left.set(MAX_VALUES));
    let Strict(v) = serde_json::from_slice(bytes).map_err(|e| format!("malformed JSON: {e}"))?;
    if !v.is_object() {
        return Err("the message must be a JSON object".into());
    }
    T::deserialize(v).map_err(|e| format!("malformed message: {e}"))
}

/// Encodes a message as compact JSON.
pub fn encode<T: serde::Serialize>(msg: &T) -> Vec<u8> {
    // Serializing our own message types cannot fail: every map key is a string.
    serde_json::to_vec(msg).unwrap_or_else(|_| b"{}".to_vec())
}

/// A JSON value read with duplicate-key detection, with `null` members dropped.
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Strict;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Strict, E> {
        count_value::<E>()?;
        Ok(Strict(Value::Bool(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Strict, E> {
        count_value::<E>()?;
        Ok(Strict(Value::from(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Strict, E> {
        count_value::<E>()?;
        Ok(Strict(Value::from(v)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Strict, E> {
        count_value::<E>()?;
        serde_json::Number::from_f64(v)
            .map(|n| Strict(Value::Number(n)))
            .ok_or_else(|| E::custom("non-finite number"))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Strict, E> {
        count_value::<E>()?;
        Ok(Strict(Value::String(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Strict, E> {
        count_value::<E>()?;
        Ok(Strict(Value::String(v)))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Strict, E> {
        count_value::<E>()?;
        Ok(Strict(Value::Null))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Strict, A::Error> {
        count_value::<A::Error>()?;
        let mut out = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Strict(Value::Array(out)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Strict, A::Error> {
        count_value::<A::Error>()?;
        let mut out = Map::new();
        let mut seen = HashSet::new();
        while let Some(k) = map.next_key::<String>()? {
            let Strict(v) = map.next_value()?;
            if !seen.insert(k.clone()) {
                return Err(de::Error::custom(format_args!("duplicate key {k:?}")));
            }
            if !v.is_null() {
                out.insert(k, v);
            }
        }
        Ok(Strict(Value::Object(out)))
    }
}

fn integer<'de, D: Deserializer<'de>>(d: D) -> Result<i128, D::Error> {
    let v = Value::deserialize(d)?;
    match &v {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Ok(i as i128)
            } else if let Some(u) = n.as_u64() {
                Ok(u as i128)
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                if f.fract() == 0.0 && f.abs() < 1.8e19 {
                    Ok(f as i128)
                } else {
                    Err(de::Error::custom("expected an integer"))
                }
            }
        }
        Value::String(s) => {
            let digits = s.strip_prefix('-').unwrap_or(s);
            if digits.is_empty() || digits.len() > 20 || !digits.bytes().all(|b| b.is_ascii_digit())
            {
                return Err(de::Error::custom("expected a decimal integer string"));
            }
            s.parse::<i128>().map_err(de::Error::custom)
        }
        _ => Err(de::Error::custom("expected an integer")),
    }
}

macro_rules! int_de {
    ($name:ident, $t:ty) => {
        #[doc = concat!("Reads a `", stringify!($t), "` from a JSON number, an integral float or a decimal string, range-checked.")]
        pub fn $name<'de, D: Deserializer<'de>>(d: D) -> Result<$t, D::Error> {
            let i = integer(d)?;
            <$t>::try_from(i).map_err(|_| de::Error::custom(concat!("integer out of range for ", stringify!($t))))
        }
    };
}
int_de!(de_u32, u32);
int_de!(de_i32, i32);
int_de!(de_i64, i64);
int_de!(de_u64, u64);

/// Writes an `i64` as a decimal string, as ProtoJSON does.
pub fn ser_i64<S: Serializer>(v: &i64, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

/// Writes a `u64` as a decimal string, as ProtoJSON does.
pub fn ser_u64<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

/// Reads a double from a number, `"NaN"`, `"Infinity"`, `"-Infinity"` or a numeric string.
pub fn de_f64<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    match Value::deserialize(d)? {
        Value::Number(n) => n
            .as_f64()
            .ok_or_else(|| de::Error::custom("expected a number")),
        Value::String(s) => match s.as_str() {
            "NaN" => Ok(f64::NAN),
            "Infinity" => Ok(f64::INFINITY),
            "-Infinity" => Ok(f64::NEG_INFINITY),
            other => other
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite())
                .ok_or_else(|| de::Error::custom("expected a numeric string")),
        },
        _ => Err(de::Error::custom("expected a number")),
    }
}

/// Reads a list of doubles under [`de_f64`]'s rules.
pub fn de_f64s<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
    #[derive(Deserialize)]
    struct F(#[serde(deserialize_with = "de_f64")] f64);
    Ok(Vec::<F>::deserialize(d)?
        .into_iter()
        .map(|F(f)| f)
        .collect())
}

/// Writes a double as a number, or `"NaN"`/`"Infinity"`/`"-Infinity"`.
pub fn ser_f64<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.is_nan() {
        s.serialize_str("NaN")
    } else if v.is_infinite() {
        s.serialize_str(if *v > 0.0 { "Infinity" } else { "-Infinity" })
    } else {
        s.serialize_f64(*v)
    }
}

/// Writes a list of doubles under [`ser_f64`]'s rules.
pub fn ser_f64s<S: Serializer>(v: &[f64], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq;
    struct F(f64);
    impl serde::Serialize for F {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            ser_f64(&self.0, s)
        }
    }
    let mut seq = s.serialize_seq(Some(v.len()))?;
    for f in v {
        seq.serialize_element(&F(*f))?;
    }
    seq.end()
}

const LENIENT: GeneralPurposeConfig = GeneralPurposeConfig::new()
    .with_decode_padding_mode(DecodePaddingMode::Indifferent)
    .with_decode_allow_trailing_bits(false);
const STANDARD: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::STANDARD, LENIENT);
const URL_SAFE: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::URL_SAFE, LENIENT);

/// Decodes base64, standard or URL-safe (assumed when `-` or `_` appears),
/// padded or not, in a strict alphabet.
pub fn base64_decode(s: &str) -> Result<Vec<u8>, String> {
    let engine = if s.contains(['-', '_']) {
        &URL_SAFE
    } else {
        &STANDARD
    };
    engine.decode(s).map_err(|e| format!("bad base64: {e}"))
}

/// Encodes standard base64 with padding.
pub fn base64_encode(b: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(b)
}

/// Reads a protobuf `bytes` field.
pub fn de_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    let s = String::deserialize(d)?;
    base64_decode(&s).map_err(de::Error::custom)
}

/// Writes a protobuf `bytes` field as padded standard base64.
pub fn ser_bytes<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&base64_encode(v))
}

/// `skip_serializing_if` for zero numbers.
pub fn is_zero<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// `skip_serializing_if` for `false`.
pub fn is_false(v: &bool) -> bool {
    !*v
}

/// `skip_serializing_if` for a double at zero (+0.0 only: −0.0 is a distinct value).
pub fn is_zero_f64(v: &f64) -> bool {
    v.to_bits() == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[test]
    fn a_message_holds_a_bounded_number_of_values() {
        let at = |n: usize| format!("{{\"a\":[{}]}}", vec!["0"; n].join(","));
        // The object, the array and n numbers.
        assert!(decode::<Value>(at(MAX_VALUES - 2).as_bytes()).is_ok());
        let e = decode::<Value>(at(MAX_VALUES - 1).as_bytes()).unwrap_err();
        assert!(e.contains("more than 1048576 JSON values"), "{e}");
        // The count starts again with each message.
        assert!(decode::<Value>(at(MAX_VALUES - 2).as_bytes()).is_ok());
    }

    #[test]
    fn a_message_nests_a_bounded_depth() {
        let nested = |d: usize| format!("{{\"a\":{}1{}}}", "[".repeat(d), "]".repeat(d));
        assert!(decode::<Value>(nested(MAX_DEPTH - 2).as_bytes()).is_ok());
        let e = decode::<Value>(nested(MAX_DEPTH + 1).as_bytes()).unwrap_err();
        assert!(e.contains("recursion limit"), "{e}");
    }

    #[derive(Deserialize, Debug, Default)]
    #[serde(default, rename_all = "camelCase")]
    struct M {
        #[serde(deserialize_with = "de_u32")]
        protocol: u32,
        #[serde(deserialize_with = "de_i64")]
        started_unix_ms: i64,
        name: String,
        #[serde(deserialize_with = "de_bytes")]
        out: Vec<u8>,
    }

    #[test]
    fn strict_and_lenient() {
        let m: M = decode(
            br#"{"protocol":"4","startedUnixMs":1790000000000,"name":null,"out":"NDIK","x":1}"#,
        )
        .unwrap();
        assert_eq!(
            (m.protocol, m.started_unix_ms, m.name.as_str()),
            (4, 1790000000000, "")
        );
        assert_eq!(m.out, b"42\n");
        let m: M = decode(br#"{"protocol":4.0,"out":"NDI"}"#).unwrap();
        assert_eq!((m.protocol, m.out.as_slice()), (4, &b"42"[..]));
        assert!(decode::<M>(br#"{"protocol":4,"protocol":4}"#).is_err());
        assert!(decode::<M>(br#"{"protocol":4.5}"#).is_err());
        assert!(decode::<M>(br#"{"protocol":-1}"#).is_err());
        assert!(decode::<M>(br#"{"protocol":true}"#).is_err());
        assert!(decode::<M>(br#"[]"#).is_err());
        assert!(decode::<M>(br#"{"name":"\ud800"}"#).is_err());
        assert!(decode::<M>(b"{\"name\":\"\xff\"}").is_err());
        assert!(decode::<M>(br#"{"protocol":NaN}"#).is_err());
        assert!(decode::<M>(br#"{"out":"N*IK"}"#).is_err());
        assert_eq!(base64_decode("_-8").unwrap(), vec![0xff, 0xef]);
    }

    /// Found by the `request` fuzz target: serde_json's default float parsing
    /// can be one ULP off, so the daemon would run and digest another double
    /// than the client sent. Every number must read as Rust's correctly rounded
    /// `str::parse` reads it, and survive encode → decode bit for bit.
    #[test]
    fn doubles_read_correctly_rounded() {
        use crate::request::ModuleRow;
        let long = format!("4{}2", "9".repeat(103));
        for lit in [
            long.as_str(),
            "5.0000000000000003e104",
            "0.1",
            "9007199254740993",
            "2.2250738585072011e-308",
            "4.9406564584124654e-324",
            "1.7976931348623157e308",
            "0.30000000000000004",
            "-0",
        ] {
            let want = lit.parse::<f64>().unwrap().to_bits();
            let row: ModuleRow = decode(format!(r#"{{"values":[{lit}]}}"#).as_bytes()).unwrap();
            assert_eq!(row.values[0].to_bits(), want, "{lit}");
            let again: ModuleRow = decode(&encode(&row)).unwrap();
            assert_eq!(again.values[0].to_bits(), want, "{lit} after a round trip");
        }
    }
}
