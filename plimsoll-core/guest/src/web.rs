//! The natives behind the web globals (`web/*.js`): UTF-8, digests and HMAC,
//! randomness, WHATWG URLs and form encoding. Each is a pure function of its
//! arguments, except `randomBytes`, which reads WASI randomness per call, so
//! nothing taken before the snapshot repeats between runs.
//!
//! Bytes cross as `(ArrayBuffer, offset, length)`: the JavaScript side passes a
//! view's buffer and window, and a detached or short buffer is a TypeError.

use hmac::{KeyInit, Mac};
use rquickjs::{ArrayBuffer, Ctx, Exception, Function, Object, Result};
use sha2::Digest;

use crate::sys;

/// Adds the web natives to `n`.
pub fn natives<'js>(ctx: &Ctx<'js>, n: &Object<'js>) -> Result<()> {
    n.set(
        "utf8Encode",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, s: rquickjs::String<'js>| {
            ArrayBuffer::new(ctx, s.to_string()?.into_bytes())
        })?,
    )?;
    n.set(
        "utf8Decode",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, buf: ArrayBuffer<'js>, off: usize, len: usize, fatal: bool| {
                with_bytes(&ctx, &buf, off, len, |b| match std::str::from_utf8(b) {
                    Ok(s) => Some(s.to_owned()),
                    Err(_) if fatal => None,
                    Err(_) => Some(String::from_utf8_lossy(b).into_owned()),
                })
            },
        )?,
    )?;
    n.set(
        "randomBytes",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, len: usize| {
            let mut b = vec![0u8; len];
            sys::random(&mut b);
            ArrayBuffer::new(ctx, b)
        })?,
    )?;
    n.set(
        "digest",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, alg: String, buf: ArrayBuffer<'js>, off: usize, len: usize| {
                let out = with_bytes(&ctx, &buf, off, len, |b| digest(&alg, b))?;
                let out = out.ok_or_else(|| unknown_algorithm(&ctx, &alg))?;
                ArrayBuffer::new(ctx, out)
            },
        )?,
    )?;
    n.set(
        "hmac",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>,
             alg: String,
             key: ArrayBuffer<'js>,
             buf: ArrayBuffer<'js>,
             off: usize,
             len: usize| {
                let key = with_bytes(&ctx, &key, 0, key.len(), <[u8]>::to_vec)?;
                let out = with_bytes(&ctx, &buf, off, len, |b| hmac(&alg, &key, b))?;
                let out = out.ok_or_else(|| unknown_algorithm(&ctx, &alg))?;
                ArrayBuffer::new(ctx, out)
            },
        )?,
    )?;
    n.set(
        "urlParse",
        Function::new(ctx.clone(), |input: String, base: Option<String>| {
            let parsed = match base {
                Some(base) => url::Url::parse(&base).and_then(|b| b.join(&input)),
                None => url::Url::parse(&input),
            };
            parsed.ok().map(|u| parts(&u))
        })?,
    )?;
    n.set(
        "urlSet",
        Function::new(ctx.clone(), |href: String, field: String, value: String| {
            let Ok(mut u) = url::Url::parse(&href) else {
                return None;
            };
            use url::quirks;
            // A setter that refuses its value leaves the URL as it was, as
            // WHATWG says; the caller reads the components either way.
            let _refused = match field.as_str() {
                "protocol" => quirks::set_protocol(&mut u, &value),
                "username" => quirks::set_username(&mut u, &value),
                "password" => quirks::set_password(&mut u, &value),
                "host" => quirks::set_host(&mut u, &value),
                "hostname" => quirks::set_hostname(&mut u, &value),
                "port" => quirks::set_port(&mut u, &value),
                "pathname" => {
                    quirks::set_pathname(&mut u, &value);
                    Ok(())
                }
                "search" => {
                    quirks::set_search(&mut u, &value);
                    Ok(())
                }
                "hash" => {
                    quirks::set_hash(&mut u, &value);
                    Ok(())
                }
                _ => Err(()),
            };
            Some(parts(&u))
        })?,
    )?;
    n.set(
        "formParse",
        Function::new(ctx.clone(), |s: String| -> Vec<String> {
            form_urlencoded::parse(s.as_bytes())
                .flat_map(|(k, v)| [k.into_owned(), v.into_owned()])
                .collect()
        })?,
    )?;
    n.set(
        "formSerialize",
        Function::new(ctx.clone(), |flat: Vec<String>| -> String {
            let mut out = form_urlencoded::Serializer::new(String::new());
            for pair in flat.chunks(2) {
                if let [k, v] = pair {
                    out.append_pair(k, v);
                }
            }
            out.finish()
        })?,
    )?;
    Ok(())
}

/// Calls `f` on `len` bytes of `buf` from `off`; no JavaScript runs meanwhile.
fn with_bytes<'js, T>(
    ctx: &Ctx<'js>,
    buf: &ArrayBuffer<'js>,
    off: usize,
    len: usize,
    f: impl FnOnce(&[u8]) -> T,
) -> Result<T> {
    // SAFETY: the slice lives only for `f`, which runs no JavaScript.
    let bytes = unsafe { buf.as_bytes() };
    let window = bytes.and_then(|b| b.get(off..off.checked_add(len)?));
    match window {
        Some(b) => Ok(f(b)),
        None => Err(Exception::throw_type(
            ctx,
            "the buffer is detached or shorter than its view",
        )),
    }
}

fn unknown_algorithm(ctx: &Ctx<'_>, alg: &str) -> rquickjs::Error {
    Exception::throw_type(ctx, &format!("unknown digest algorithm {alg}"))
}

/// The digest of `b` by WebCrypto's algorithm name (already upper-cased).
fn digest(alg: &str, b: &[u8]) -> Option<Vec<u8>> {
    Some(match alg {
        "SHA-1" => sha1::Sha1::digest(b).to_vec(),
        "SHA-256" => sha2::Sha256::digest(b).to_vec(),
        "SHA-384" => sha2::Sha384::digest(b).to_vec(),
        "SHA-512" => sha2::Sha512::digest(b).to_vec(),
        _ => return None,
    })
}

fn hmac(alg: &str, key: &[u8], b: &[u8]) -> Option<Vec<u8>> {
    fn mac<M: Mac + KeyInit>(key: &[u8], b: &[u8]) -> Vec<u8> {
        // Any key length is valid for HMAC.
        let mut m = <M as KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
        m.update(b);
        m.finalize().into_bytes().to_vec()
    }
    Some(match alg {
        "SHA-1" => mac::<hmac::Hmac<sha1::Sha1>>(key, b),
        "SHA-256" => mac::<hmac::Hmac<sha2::Sha256>>(key, b),
        "SHA-384" => mac::<hmac::Hmac<sha2::Sha384>>(key, b),
        "SHA-512" => mac::<hmac::Hmac<sha2::Sha512>>(key, b),
        _ => return None,
    })
}

/// A URL's WHATWG components, in the order `web/url.js` reads them.
fn parts(u: &url::Url) -> Vec<String> {
    use url::quirks;
    vec![
        quirks::href(u).to_owned(),
        quirks::protocol(u).to_owned(),
        quirks::username(u).to_owned(),
        quirks::password(u).to_owned(),
        quirks::host(u).to_owned(),
        quirks::hostname(u).to_owned(),
        quirks::port(u).to_owned(),
        quirks::pathname(u).to_owned(),
        quirks::search(u).to_owned(),
        quirks::hash(u).to_owned(),
        quirks::origin(u),
    ]
}
