//! What the hosted providers run in their guests: the startup proof's probe
//! (a script that starts node, which reports what it sees) and its verdict,
//! and the artifact check run before any artifact is read.

use serde_json::Value;

/// The probe's files: a script, the program it starts, and data it reads.
pub(crate) const SCRIPT: &str = "#!/bin/sh\nset -e\nexec node .plimsoll-proof/probe.js \"$(cat .plimsoll-proof/data/token.txt)\"\n";
pub(crate) const PROBE: &str = r#"const net = require('net');
const fs = require('fs');
const tryConnect = (host, port) => new Promise((resolve) => {
  const s = net.connect({ host, port, timeout: 3000 });
  s.on('connect', () => { s.destroy(); resolve('connected'); });
  s.on('timeout', () => { s.destroy(); resolve('timeout'); });
  s.on('error', (e) => resolve(e.code || String(e)));
});
(async () => {
  const out = {
    node: process.version,
    cwd: process.cwd(),
    token: process.argv[2],
    second: fs.readFileSync('.plimsoll-proof/data/second.txt', 'utf8'),
    uid: process.getuid(),
    client: fs.existsSync('/usr/local/lib/plimsoll/host.js'),
    ip: await tryConnect('1.1.1.1', 80),
    name: await tryConnect('example.com', 80),
  };
  console.log(JSON.stringify(out));
})();
"#;

/// Says, one word a line in order, what each artifact path is: `ok` (a
/// readable regular file inside the project directory once every link is
/// resolved), `missing`, `escapes`, `notfile` or `unreadable`.
pub(crate) const CHECK_ARTIFACTS: &str = r#"cd "$1" || exit 3
shift
for p; do
  real=$(realpath -e -- "$p" 2>/dev/null) || { echo missing; continue; }
  case "$real" in "$PWD"/*) ;; *) echo escapes; continue ;; esac
  [ -f "$real" ] || { echo notfile; continue; }
  [ -r "$real" ] || { echo unreadable; continue; }
  echo ok
done
"#;

/// What is wrong with the probe's report (`token`: what its first file
/// held; `dir`: where the step was to run); empty when it shows what the
/// proof asks.
pub(crate) fn verdict(v: &Value, token: &str, dir: &str) -> Vec<String> {
    let s = |k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let mut wrong = Vec::new();
    if !s("node").starts_with('v') {
        wrong.push("node is not in the image".to_owned());
    }
    if s("cwd") != dir {
        wrong.push(format!("the step ran in {:?}, not {dir}", s("cwd")));
    }
    if s("token") != token || s("second") != "second file" {
        wrong.push("the files written are not what the step read".into());
    }
    if v.get("uid").and_then(Value::as_u64).is_none_or(|u| u == 0) {
        wrong.push("the guest runs as root (or its uid is unknown)".into());
    }
    for (k, target) in [("ip", "1.1.1.1:80"), ("name", "example.com:80")] {
        match s(k).as_str() {
            "connected" => wrong.push(format!("the guest reached {target}: egress is open")),
            "" => wrong.push(format!("the probe did not say how {target} failed")),
            _ => {}
        }
    }
    wrong
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const DIR: &str = "/home/user/project";

    #[test]
    fn the_verdict_fails_open_egress_root_and_a_wrong_directory() {
        let good = json!({"node":"v22.1.0","cwd":DIR,"token":"t","second":"second file",
                          "uid":1000,"ip":"ENETUNREACH","name":"EAI_AGAIN"});
        assert!(verdict(&good, "t", DIR).is_empty());
        let with = |k: &str, v: Value| {
            let mut b = good.clone();
            b[k] = v;
            verdict(&b, "t", DIR)
        };
        assert!(with("ip", json!("connected"))[0].contains("1.1.1.1:80: egress is open"));
        assert!(with("name", json!("connected"))[0].contains("example.com:80"));
        assert!(with("uid", json!(0))[0].contains("root"));
        assert!(with("cwd", json!("/tmp"))[0].contains("not /home/user/project"));
        assert!(with("node", json!(""))[0].contains("node"));
        assert!(!verdict(&good, "other", DIR).is_empty());
        assert_eq!(verdict(&json!({}), "t", DIR).len(), 6);
    }
}
