//! Unit tests of the wasm provider: real runs on the embedded guest.

use super::*;
use tokio_util::sync::CancellationToken;

async fn js(code: &str) -> JavaScriptResult {
    let w = Wasm::new(DEFAULT_MEMORY_MB).unwrap();
    w.execute(code.to_string(), Duration::from_secs(5), &CancellationToken::new()).await.unwrap()
}

fn out(r: &JavaScriptResult) -> (&str, &str, i32) {
    (std::str::from_utf8(&r.stdout).unwrap(), std::str::from_utf8(&r.stderr).unwrap(), r.exit_code)
}

#[tokio::test]
async fn hello() {
    let t = std::time::Instant::now();
    let w = Wasm::new(DEFAULT_MEMORY_MB).unwrap();
    eprintln!("compile {:?} {:?}", t.elapsed(), w);
    let r = js("console.log(6*7)").await;
    assert_eq!(out(&r), ("42\n", "", 0));
    let t = std::time::Instant::now();
    for _ in 0..100 { js("console.log(6*7)").await; }
    eprintln!("per run {:?}", t.elapsed() / 100);
}
