//! The core's modules form layers: no top-level module of `plimsoll-core`
//! uses a module that uses it back. This reads `src/` and builds the graph of
//! `crate::…` paths (in `use` and inline, grouped or not, and `super::` up to
//! the top level), with test-only code left out, then finds its strongly
//! connected components. Any cycle fails, naming its modules and the paths
//! that close it.

#![expect(
    clippy::unwrap_used,
    reason = "a test that reads its own source fails loudly"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Source with comments, string literals and test-only items removed.
fn code_of(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let b = src.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            i += 2;
            while i + 1 < b.len() && !b[i..].starts_with(b"*/") {
                i += 1;
            }
            i += 2;
        } else if b[i..].starts_with(b"'\"'") || b[i..].starts_with(b"'\\\"'") {
            // A quote as a char literal, not a string's start.
            i += if b[i + 1] == b'\\' { 4 } else { 3 };
        } else if let Some(hashes) = raw_string_at(b, i) {
            // r"…", r#"…"#: up to the quote followed by as many hashes.
            i += 2 + hashes;
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            while i < b.len() && !b[i..].starts_with(&close) {
                i += 1;
            }
            i += close.len();
            out.push_str("\"\"");
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    strip_cfg_test(&out)
}

/// The number of hashes of a raw string starting at `i` (`r"`, `r#"`, …).
fn raw_string_at(b: &[u8], i: usize) -> Option<usize> {
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    if b[i] != b'r' || (i > 0 && ident(b[i - 1]) && b[i - 1] != b'b') {
        return None;
    }
    if i > 1 && b[i - 1] == b'b' && ident(b[i - 2]) {
        return None;
    }
    let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
    (b.get(i + 1 + hashes) == Some(&b'"')).then_some(hashes)
}

/// Drops every item after `#[cfg(test)]` (up to its `;` or its closing brace).
fn strip_cfg_test(src: &str) -> String {
    let mut out = String::new();
    let mut rest = src;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at + "#[cfg(test)]".len()..];
        let end = match (item.find(';'), item.find('{')) {
            (Some(semi), Some(open)) if semi < open => semi + 1,
            (_, Some(open)) => {
                let mut depth = 0usize;
                let mut end = item.len();
                for (k, c) in item[open..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = open + k + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            (Some(semi), None) => semi + 1,
            (None, None) => item.len(),
        };
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

fn ident_at(s: &str) -> Option<&str> {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    (end > 0).then(|| &s[..end])
}

/// The top-level modules a file's code names through `crate::`.
fn targets(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            // Top-level names of a (possibly nested) group.
            let mut depth = 1usize;
            let mut start = true;
            for (k, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => start = true,
                    c if c.is_whitespace() => {}
                    _ => {
                        if start
                            && depth == 1
                            && let Some(id) = ident_at(&group[k..])
                        {
                            found.insert(id.to_owned());
                        }
                        start = false;
                    }
                }
            }
        } else if let Some(id) = ident_at(rest) {
            found.insert(id.to_owned());
        }
    }
    found
}

/// Every non-test source file under `dir` with its module path.
fn files(dir: &Path, prefix: &[String], out: &mut Vec<(Vec<String>, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "tests" {
                let mut p = prefix.to_vec();
                p.push(name);
                files(&path, &p, out);
            }
            continue;
        }
        let Some(stem) = name.strip_suffix(".rs") else {
            continue;
        };
        if matches!(stem, "tests" | "testkit") {
            continue;
        }
        let mut module = prefix.to_vec();
        if !matches!(stem, "mod" | "lib") {
            module.push(stem.to_owned());
        }
        out.push((module, std::fs::read_to_string(&path).unwrap()));
    }
}

/// Module → (module it uses → one file that uses it).
type Graph = BTreeMap<String, BTreeMap<String, String>>;

fn graph(src: &Path) -> Graph {
    let mut all = Vec::new();
    files(src, &[], &mut all);
    let mut g = Graph::new();
    for (module, text) in all {
        let Some(top) = module.first() else {
            continue; // lib.rs declares the modules and uses none.
        };
        let code = code_of(&text);
        let mut used = targets(&code);
        if module.len() > 1 && code.contains("super::") {
            used.insert(module[0].clone());
        }
        let file = module.join("/");
        for t in used {
            if &t != top {
                g.entry(top.clone())
                    .or_default()
                    .entry(t)
                    .or_insert_with(|| file.clone());
            }
        }
        g.entry(top.clone()).or_default();
    }
    g
}

/// Strongly connected components of more than one module (Tarjan).
fn cycles(g: &Graph) -> Vec<BTreeSet<String>> {
    struct T<'a> {
        g: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<BTreeSet<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        t.on.insert(v);
        for w in t.g.get(v).into_iter().flat_map(|e| e.keys()) {
            let w = w.as_str();
            if !t.g.contains_key(w) {
                continue; // not a module of ours (a re-exported item, a macro)
            }
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = BTreeSet::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                comp.insert(w.to_owned());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

fn describe(g: &Graph, comp: &BTreeSet<String>) -> String {
    let mut s = format!("{comp:?}:");
    for m in comp {
        for (t, file) in &g[m] {
            if comp.contains(t) {
                s.push_str(&format!("\n  {m} -> {t} (in {file})"));
            }
        }
    }
    s
}

#[test]
fn no_module_of_the_core_uses_one_that_uses_it_back() {
    let g = graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(g.len() > 15, "the source was not read: {:?}", g.keys());
    let found = cycles(&g);
    let problems: Vec<String> = found.iter().map(|comp| describe(&g, comp)).collect();
    assert!(
        problems.is_empty(),
        "import cycles:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_reader_sees_grouped_nested_and_inline_paths() {
    let code = code_of(
        "use crate::a::B;\nuse crate::{c, d::{E, F}, g::h};\n// crate::comment\n\
         fn x() { crate::i::j(); let s = \"crate::string\"; }\n\
         #[cfg(test)]\nmod tests { use crate::k; }\n#[cfg(test)]\nuse crate::l;\n\
         const Q: char = '\"'; const R: &str = r#\"crate::raw \" still\"#; use crate::m;\n",
    );
    let t: Vec<String> = targets(&code).into_iter().collect();
    assert_eq!(t, ["a", "c", "d", "g", "i", "m"]);
    let mut g = Graph::new();
    for (a, b) in [("x", "y"), ("y", "z"), ("z", "x"), ("z", "w")] {
        g.entry(a.into())
            .or_default()
            .insert(b.into(), format!("{a}.rs"));
    }
    g.entry("w".into()).or_default();
    let c = cycles(&g);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].iter().collect::<Vec<_>>(), ["x", "y", "z"]);
}
