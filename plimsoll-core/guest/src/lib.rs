//! plimsoll's QuickJS guest: a wasm32-wasip1 reactor that runs one JavaScript
//! snippet per instance, with Node-like `console` and `process`, timers, and
//! the web globals that need no I/O (`web/*.js` over the natives in [`web`]).
//!
//! The host (plimsoll-core's wasm provider) calls `plimsoll_init` once, before
//! snapshotting the module, and then, per run on a fresh instance,
//! `plimsoll_alloc` and `plimsoll_run`. The guest reaches the world only through
//! the imports in [`sys`]: writes to its two output streams, randomness, clocks
//! (through wasi-libc), its own exit, and `plimsoll.host_call`, which
//! JavaScript reaches only through the `host` global of a granted run (see
//! `plimsoll_grant`).
//!
//! What it does not do: files, network, environment, arguments, modules.
//! `require` and `import()` of anything do not exist. Timers do: the run's
//! event loop ([`run`]) waits for them through the host, which bounds every
//! wait by the run's deadline.

use std::cell::{Cell, RefCell};

use rquickjs::context::EvalOptions;
use rquickjs::promise::PromiseState;
use rquickjs::{Context, Ctx, Function, Object, Persistent, Promise, Runtime, Value};

mod sys;
mod web;

/// Node's util.inspect, in JavaScript: a function of the promise-state native.
const INSPECT: &str = include_str!("inspect.js");
/// The rest of the JavaScript half: console, process, exit bookkeeping.
const PRELUDE: &str = include_str!("prelude.js");
/// The web globals, each a function of the natives, inspect, the prelude's
/// `defineGlobal` and an object the modules share, evaluated in this order.
const WEB: [(&str, &str); 8] = [
    ("plimsoll:events", include_str!("web/events.js")),
    ("plimsoll:encoding", include_str!("web/encoding.js")),
    ("plimsoll:clone", include_str!("web/clone.js")),
    ("plimsoll:crypto", include_str!("web/crypto.js")),
    ("plimsoll:url", include_str!("web/url.js")),
    ("plimsoll:buffer", include_str!("web/buffer.js")),
    ("plimsoll:blob", include_str!("web/blob.js")),
    ("plimsoll:performance", include_str!("web/performance.js")),
];

struct Guest {
    rt: Runtime,
    ctx: Context,
    hooks: Persistent<Object<'static>>,
    /// The prelude's event-loop hooks (see [`run`]), kept from the snapshot.
    timers: Timers,
}

/// The prelude's `nextTimer`, `runTimer` and `rejections`.
struct Timers {
    next: Persistent<Function<'static>>,
    run: Persistent<Function<'static>>,
    rejections: Persistent<Function<'static>>,
}

thread_local! {
    static GUEST: RefCell<Option<Guest>> = const { RefCell::new(None) };
    /// The prelude's `track(promise, reason, handled)`, for the rejection tracker.
    static TRACK: RefCell<Option<Persistent<Function<'static>>>> = const { RefCell::new(None) };
    /// xorshift128+ state behind `Math.random`, re-seeded from WASI randomness per run.
    static RNG: Cell<[u64; 2]> = const { Cell::new([1, 2]) };
}

fn next_random() -> f64 {
    RNG.with(|s| {
        let [mut a, b] = s.get();
        let r = a.wrapping_add(b);
        a ^= a << 23;
        let next = a ^ b ^ (a >> 17) ^ (b >> 26);
        s.set([b, next]);
        (r >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    })
}

fn seed_random() {
    let mut seed = [0u8; 16];
    sys::random(&mut seed);
    let a = u64::from_le_bytes(seed[..8].try_into().unwrap_or_default());
    let b = u64::from_le_bytes(seed[8..].try_into().unwrap_or_default());
    // xorshift128+ must not start from all zeros.
    RNG.with(|s| s.set(if a | b == 0 { [1, 2] } else { [a, b] }));
}

/// The native functions the prelude closes over; none is reachable by name.
fn natives<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Object<'js>> {
    let n = Object::new(ctx.clone())?;
    n.set(
        "write",
        Function::new(ctx.clone(), |fd: u32, text: rquickjs::String<'_>| -> bool {
            match text.to_string() {
                Ok(s) => sys::write(fd, s.as_bytes()),
                Err(_) => false,
            }
        })?,
    )?;
    n.set(
        "exit",
        Function::new(ctx.clone(), |code: i32| -> () { sys::exit(code) })?,
    )?;
    n.set("random", Function::new(ctx.clone(), next_random)?)?;
    web::natives(ctx, &n)?;
    n.set(
        "hostCall",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, request: rquickjs::String<'js>| -> rquickjs::Result<String> {
                host_call(&ctx, request.to_string()?.as_bytes())
            },
        )?,
    )?;
    n.set(
        "promiseState",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, p: Promise<'js>| -> rquickjs::Result<Vec<Value<'js>>> {
                let (state, value) = match p.state() {
                    PromiseState::Pending => ("pending", Value::new_undefined(ctx.clone())),
                    PromiseState::Resolved => (
                        "fulfilled",
                        p.result::<Value>()
                            .and_then(Result::ok)
                            .unwrap_or_else(|| Value::new_undefined(ctx.clone())),
                    ),
                    PromiseState::Rejected => ("rejected", rejection(&ctx, &p)),
                };
                Ok(vec![
                    rquickjs::String::from_str(ctx, state)?.into_value(),
                    value,
                ])
            },
        )?,
    )?;
    Ok(n)
}

/// The answer buffer's first size; a larger answer is collected in a second call.
const HOST_ANSWER_BUFFER: usize = 64 * 1024;

/// One brokered call through `plimsoll.host_call`: the answer envelope, or a
/// thrown error naming the host's status word.
fn host_call(ctx: &Ctx<'_>, request: &[u8]) -> rquickjs::Result<String> {
    let mut buf = vec![0u8; HOST_ANSWER_BUFFER];
    let mut n = sys::host_call(request, &mut buf);
    if n > buf.len() as i64 {
        buf = vec![0u8; n as usize];
        n = sys::host_call(&[], &mut buf);
    }
    if n < 0 || n > buf.len() as i64 {
        let why = match n {
            -1 => "this run carries no grant",
            -3 => "the run's deadline passed during the call",
            _ => "the host refused the call",
        };
        return Err(rquickjs::Exception::throw_message(
            ctx,
            &format!("host call failed: {why} ({n})"),
        ));
    }
    buf.truncate(n as usize);
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// The reason a rejected promise holds.
fn rejection<'js>(ctx: &Ctx<'js>, p: &Promise<'js>) -> Value<'js> {
    match p.result::<Value>() {
        Some(Err(rquickjs::Error::Exception)) => ctx.catch(),
        Some(Ok(v)) => v,
        _ => Value::new_undefined(ctx.clone()),
    }
}

fn init() -> rquickjs::Result<Guest> {
    let rt = Runtime::new()?;
    let ctx = Context::full(&rt)?;
    let (hooks, timers) = ctx.with(|ctx| {
        let prepared = prepare(&ctx);
        if let Err(rquickjs::Error::Exception) = prepared {
            // Name the JavaScript error, which a build's broken prelude throws.
            let e = ctx.catch();
            let shown = e
                .as_exception()
                .map(|x| {
                    format!(
                        "{}\n{}",
                        x.message().unwrap_or_default(),
                        x.stack().unwrap_or_default()
                    )
                })
                .unwrap_or_else(|| format!("{e:?}"));
            sys::write(
                2,
                format!("plimsoll guest: the prelude threw: {shown}\n").as_bytes(),
            );
        }
        prepared
    })?;
    rt.set_host_promise_rejection_tracker(Some(Box::new(|ctx, promise, reason, handled| {
        let track = TRACK.with(|t| t.borrow().clone());
        if let Some(track) = track.and_then(|t| t.restore(&ctx).ok()) {
            let _: rquickjs::Result<()> = track.call((promise, reason, handled));
        }
    })));
    Ok(Guest {
        rt,
        ctx,
        hooks,
        timers,
    })
}

/// Evaluates inspect, the prelude and the web globals in `ctx`; returns the
/// prelude's hooks and its event-loop hooks.
fn prepare(ctx: &Ctx<'_>) -> rquickjs::Result<(Persistent<Object<'static>>, Timers)> {
    let natives = natives(ctx)?;
    let make_inspect: Function =
        ctx.eval_with_options(INSPECT, options("plimsoll:inspect", true))?;
    let util: Object = make_inspect.call((natives.get::<_, Value>("promiseState")?,))?;
    let setup: Function = ctx.eval_with_options(PRELUDE, options("plimsoll:prelude", true))?;
    let hooks: Object = setup.call((natives.clone(), util.clone()))?;
    let define: Function = hooks.get("defineGlobal")?;
    let shared = Object::new(ctx.clone())?;
    for (name, source) in WEB {
        let module: Function = ctx.eval_with_options(source, options(name, true))?;
        module.call::<_, ()>((
            natives.clone(),
            util.clone(),
            define.clone(),
            shared.clone(),
        ))?;
    }
    let track: Function = hooks.get("track")?;
    TRACK.with(|t| *t.borrow_mut() = Some(Persistent::save(ctx, track)));
    let hook = |name| {
        hooks
            .get::<_, Function>(name)
            .map(|f| Persistent::save(ctx, f))
    };
    let timers = Timers {
        next: hook("nextTimer")?,
        run: hook("runTimer")?,
        rejections: hook("rejections")?,
    };
    Ok((Persistent::save(ctx, hooks), timers))
}

fn options(filename: &str, strict: bool) -> EvalOptions {
    let mut o = EvalOptions::default();
    o.global = true;
    o.strict = strict;
    o.promise = false;
    o.filename = Some(filename.to_string());
    o
}

/// Builds the runtime, the context and the prelude. Run once, before the
/// snapshot; a failure here is a broken build, so it aborts.
#[unsafe(export_name = "plimsoll_init")]
pub extern "C" fn plimsoll_init() {
    match init() {
        Ok(g) => GUEST.with(|cell| *cell.borrow_mut() = Some(g)),
        Err(e) => {
            sys::write(
                2,
                format!("plimsoll guest: initialisation failed: {e}\n").as_bytes(),
            );
            std::process::abort();
        }
    }
}

/// Reserves `len` bytes for the host to copy a snippet into; 0 if it cannot.
#[unsafe(export_name = "plimsoll_alloc")]
pub extern "C" fn plimsoll_alloc(len: u32) -> *mut u8 {
    let Ok(layout) = std::alloc::Layout::from_size_align(len.max(1) as usize, 1) else {
        return std::ptr::null_mut();
    };
    // SAFETY: the layout has a non-zero size; a null return is handed back as 0.
    unsafe { std::alloc::alloc(layout) }
}

/// Runs the snippet at `ptr..ptr+len` (UTF-8) and returns its exit code.
/// `process.exit` does not return here: it ends the instance through WASI `proc_exit`.
///
/// # Safety
///
/// `ptr..ptr+len` must be a block `plimsoll_alloc(len)` returned, which the
/// host has filled.
#[unsafe(export_name = "plimsoll_run")]
pub unsafe extern "C" fn plimsoll_run(ptr: *mut u8, len: u32) -> i32 {
    // SAFETY: the caller guarantees the block (see above).
    let bytes = unsafe { std::slice::from_raw_parts(ptr, len as usize) };
    let code = String::from_utf8_lossy(bytes).into_owned();
    seed_random();
    GUEST.with(|cell| match cell.borrow().as_ref() {
        Some(g) => run(g, code),
        None => {
            sys::write(2, b"plimsoll guest: not initialised\n");
            70
        }
    })
}

fn run(g: &Guest, code: String) -> i32 {
    let mut script = options("[eval]", false);
    script.promise = true;
    // Evaluate as a script with top-level await: the completion is a promise.
    let main = g.ctx.with(
        |ctx| match ctx.eval_with_options::<Promise, _>(code, script) {
            Ok(p) => Ok(Persistent::save(&ctx, p)),
            Err(_) => Err(report_uncaught(&ctx, &g.hooks, ctx.catch())),
        },
    );
    let main = match main {
        Ok(p) => p,
        Err(code) => return code,
    };
    // Node's event loop, without I/O: run every pending job (promise
    // reactions, awaits); then the next timer due, waiting for it through the
    // host; then the jobs it queued; until no referenced timer is left. An
    // uncaught error or an unhandled rejection ends the run there, as in Node.
    loop {
        if let Err(code) = drain(g) {
            return code;
        }
        let next = g.ctx.with(|ctx| -> rquickjs::Result<Next> {
            let Ok(main) = main.clone().restore(&ctx) else {
                return Ok(Next::Done);
            };
            if main.state() == PromiseState::Rejected {
                return Ok(Next::Done);
            }
            if g.timers
                .rejections
                .clone()
                .restore(&ctx)?
                .call::<_, bool>((main,))?
            {
                return Ok(Next::Failed);
            }
            let wait: f64 = g.timers.next.clone().restore(&ctx)?.call(())?;
            Ok(if wait < 0.0 {
                Next::Done
            } else {
                Next::Timer(wait)
            })
        });
        match next {
            Ok(Next::Done) => break,
            Ok(Next::Failed) => return 1,
            Ok(Next::Timer(wait)) => {
                if wait > 0.0 {
                    // Past the host clock's resolution, so the timer is due on waking.
                    sys::sleep((wait * 1e6) as i64 + HOST_CLOCK_RESOLUTION_NS);
                }
                let ran = g.ctx.with(|ctx| {
                    g.timers
                        .run
                        .clone()
                        .restore(&ctx)
                        .and_then(|f| f.call::<_, ()>(()))
                        .map_err(|_| report_uncaught(&ctx, &g.hooks, ctx.catch()))
                });
                if let Err(code) = ran {
                    return code;
                }
            }
            Err(_) => {
                return g
                    .ctx
                    .with(|ctx| report_uncaught(&ctx, &g.hooks, ctx.catch()));
            }
        }
    }
    g.ctx.with(|ctx| {
        let Ok(hooks) = g.hooks.clone().restore(&ctx) else {
            return 70;
        };
        let Ok(main) = main.restore(&ctx) else {
            return 70;
        };
        let mut failed = false;
        if main.state() == PromiseState::Rejected {
            let reason = rejection(&ctx, &main);
            failed = report_uncaught(&ctx, &g.hooks, reason) != 0;
        }
        let finish: rquickjs::Result<i32> = hooks
            .get::<_, Function>("finish")
            .and_then(|f| f.call((main, failed)));
        finish.unwrap_or(70)
    })
}

/// The host rounds its clocks down to this (its `CLOCK_RESOLUTION_NS`).
const HOST_CLOCK_RESOLUTION_NS: i64 = 100_000;

/// What the event loop does after the pending jobs ran.
enum Next {
    /// Nothing is left to wait for (or the snippet's completion rejected).
    Done,
    /// An unhandled rejection was reported: the run ends with exit 1.
    Failed,
    /// The next timer is due in this many milliseconds.
    Timer(f64),
}

/// Runs every pending job; an uncaught error in one is reported and its exit
/// code returned.
fn drain(g: &Guest) -> Result<(), i32> {
    loop {
        match g.rt.execute_pending_job() {
            Ok(true) => continue,
            Ok(false) => return Ok(()),
            Err(job) => {
                return Err(job
                    .0
                    .with(|ctx| report_uncaught(&ctx, &g.hooks, ctx.catch())));
            }
        }
    }
}

/// Prints an uncaught exception the Node way (on stderr) and returns exit code 1.
fn report_uncaught<'js>(
    ctx: &Ctx<'js>,
    hooks: &Persistent<Object<'static>>,
    error: Value<'js>,
) -> i32 {
    let printed = hooks
        .clone()
        .restore(ctx)
        .and_then(|h| h.get::<_, Function>("uncaught"))
        .and_then(|f| f.call::<_, ()>((error,)));
    if printed.is_err() {
        // Printing failed too (out of memory, most likely): say so plainly.
        let _ = ctx.catch();
        sys::write(2, b"Uncaught exception (it could not be printed)\n");
    }
    1
}

/// Defines the `host` global for this instance: the host calls it before
/// `plimsoll_run` only in a run that carries a grant.
#[unsafe(export_name = "plimsoll_grant")]
pub extern "C" fn plimsoll_grant() {
    GUEST.with(|cell| {
        if let Some(g) = cell.borrow().as_ref() {
            g.ctx.with(|ctx| {
                let enabled = g
                    .hooks
                    .clone()
                    .restore(&ctx)
                    .and_then(|h| h.get::<_, Function>("enableHost"))
                    .and_then(|f| f.call::<_, ()>(()));
                if enabled.is_err() {
                    let _ = ctx.catch();
                    sys::write(2, b"plimsoll guest: the host global could not be defined\n");
                }
            });
        }
    });
}

/// Calls `plimsoll.host_call` with an empty request and returns its status
/// word, so the host can prove at startup that the import is wired and
/// honest. JavaScript reaches the host call only through the `host` global,
/// which exists only in granted runs ([`plimsoll_grant`]).
#[unsafe(export_name = "plimsoll_host_probe")]
pub extern "C" fn plimsoll_host_probe() -> i64 {
    let request = br#"{"method":"probe","path":"","body":null}"#;
    let mut response = [0u8; 256];
    sys::host_call(request, &mut response)
}

/// The QuickJS-NG version compiled into this guest, as a NUL-terminated string
/// in linear memory: the host reads it once, for the software identity.
#[unsafe(export_name = "plimsoll_engine_version")]
pub extern "C" fn plimsoll_engine_version() -> *const std::ffi::c_char {
    // SAFETY: JS_GetVersion returns a pointer to a static string.
    unsafe { rquickjs::qjs::JS_GetVersion() }
}
