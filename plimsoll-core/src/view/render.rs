//! Declarations rendered from the tables: the results part of the Python stub
//! (`bindings-python/python/plimsoll/_native.pyi`), the TypeScript result
//! types (`bindings-node/results.d.ts`) and the field reference for C
//! (`docs/fields.md`). The core's tests compare them with the committed files
//! (`PLIMSOLL_BLESS=1` rewrites them).

use super::{ARTIFACT, CELL, Class, JAVASCRIPT, MODULE, PROJECT, RECORD, ROW, RUN, STEP, SUMMARY};
use super::{Field, Ty};

/// A class's name and fields, whatever it reads.
struct Shape {
    name: &'static str,
    doc: &'static str,
    kind: Option<&'static str>,
    fields: Vec<(&'static str, Ty, &'static str)>,
}

fn shape<T>(c: &Class<T>) -> Shape {
    Shape {
        name: c.name,
        doc: c.doc,
        kind: c.kind,
        fields: c
            .fields
            .iter()
            .map(|f: &Field<T>| (f.name, f.ty, f.doc))
            .collect(),
    }
}

/// Every class, in the order the declarations list them.
fn shapes() -> Vec<Shape> {
    vec![
        shape(&RECORD),
        shape(&RUN),
        shape(&JAVASCRIPT),
        shape(&CELL),
        shape(&STEP),
        shape(&ARTIFACT),
        shape(&PROJECT),
        shape(&ROW),
        shape(&MODULE),
        shape(&SUMMARY),
    ]
}

fn python_type(ty: Ty) -> &'static str {
    match ty {
        Ty::Text => "str",
        Ty::OptText => "str | None",
        Ty::Bytes => "bytes",
        Ty::Int => "int",
        Ty::Bool => "bool",
        Ty::Floats => "list[float]",
        Ty::OptRecord => "Record | None",
        Ty::Steps => "list[Step]",
        Ty::Artifacts => "list[tuple[str, bytes]]",
        Ty::Rows => "list[tuple[int, list[float]]]",
    }
}

/// A table's doc as a Python docstring literal (IDEs and `help()` show it).
fn python_doc(doc: &str) -> String {
    format!(
        "\"\"\"{}\"\"\"",
        doc.replace('\\', "\\\\").replace('"', "\\\"")
    )
}

/// The results part of the Python stub, docstrings included. Artifacts and module rows are
/// tuples in Python, so they have no class of their own there.
pub fn python_stub() -> String {
    let mut out = String::new();
    for s in shapes() {
        if s.name == ARTIFACT.name || s.name == ROW.name {
            continue;
        }
        let head = match (s.name, s.kind) {
            (n, _) if n == RUN.name => format!("@disjoint_base\nclass {n}:\n"),
            (n, Some(_)) => format!("@final\nclass {n}({}):\n", RUN.name),
            (n, None) => format!("@final\nclass {n}:\n"),
        };
        out.push_str(&head);
        out.push_str(&format!("    {}\n\n", python_doc(s.doc)));
        for (name, ty, doc) in &s.fields {
            out.push_str(&format!(
                "    @property\n    def {name}(self) -> {}:\n        {}\n",
                python_type(*ty),
                python_doc(doc)
            ));
        }
        out.push('\n');
    }
    out
}

/// snake_case → camelCase, as napi names fields.
pub fn camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut up = false;
    for c in name.chars() {
        if c == '_' {
            up = true;
        } else if up {
            out.push(c.to_ascii_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// The TypeScript name of a class (`Record` is `RunRecord` in Node).
pub fn typescript_name(name: &str) -> &str {
    if name == RECORD.name {
        "RunRecord"
    } else {
        name
    }
}

fn typescript_type(ty: Ty) -> &'static str {
    match ty {
        Ty::Text | Ty::OptText => "string",
        Ty::Bytes => "Buffer",
        Ty::Int => "number",
        Ty::Bool => "boolean",
        Ty::Floats => "Array<number>",
        Ty::OptRecord => "RunRecord",
        Ty::Steps => "Array<Step>",
        Ty::Artifacts => "Array<Artifact>",
        Ty::Rows => "Array<ModuleRow>",
    }
}

/// The result types of the Node package (`results.d.ts`).
pub fn typescript() -> String {
    let mut out = String::from(
        "// Generated from plimsoll-core's data model (plimsoll-core/src/view); do not edit.\n\
         // Regenerate: PLIMSOLL_BLESS=1 cargo test -p plimsoll-core --lib view\n",
    );
    for s in shapes() {
        let name = typescript_name(s.name);
        let extends = if s.kind.is_some() {
            format!(" extends {}", RUN.name)
        } else {
            String::new()
        };
        out.push_str(&format!(
            "\n/** {} */\nexport interface {name}{extends} {{\n",
            s.doc
        ));
        if let Some(kind) = s.kind {
            out.push_str(&format!("  /** The payload kind. */\n  kind: '{kind}'\n"));
        }
        for (field, ty, doc) in &s.fields {
            let optional = if matches!(ty, Ty::OptText | Ty::OptRecord) {
                "?"
            } else {
                ""
            };
            out.push_str(&format!(
                "  /** {doc} */\n  {}{optional}: {}\n",
                camel(field),
                typescript_type(*ty)
            ));
        }
        out.push_str("}\n");
    }
    out.push_str(&format!(
        "\n/** A result of whichever kind ran. */\nexport type AnyResult = {}\n",
        [JAVASCRIPT.name, PROJECT.name, CELL.name, MODULE.name].join(" | ")
    ));
    out
}

fn c_type(ty: Ty) -> &'static str {
    match ty {
        Ty::Text => "text",
        Ty::OptText => "text or none",
        Ty::Bytes => "bytes",
        Ty::Int => "integer",
        Ty::Bool => "flag",
        Ty::Floats => "floats",
        Ty::OptRecord => "object (`record.<field>`) or none",
        Ty::Steps => "list (`steps.<i>.<field>`)",
        Ty::Artifacts => "list (`artifacts.<i>.<field>`)",
        Ty::Rows => "list (`runs.<i>.<field>`)",
    }
}

/// The field reference (`docs/fields.md`): every path the C ABI's
/// `plimsoll_response_get` answers, and the names Python and Node use.
pub fn reference() -> String {
    let mut out = String::from(
        "# The data model: every field of an answer\n\n\
         Generated from `plimsoll-core/src/view` (regenerate: \
         `PLIMSOLL_BLESS=1 cargo test -p plimsoll-core --lib view`). Python reads \
         these names as attributes, Node as camelCase properties, and the C ABI \
         by path with `plimsoll_response_get` (`record.sequence`, \
         `steps.0.stdout`). A result has the common fields plus its kind's.\n",
    );
    for s in shapes() {
        if s.name == SUMMARY.name {
            continue;
        }
        out.push_str(&format!(
            "\n## {}\n\n{}\n\n| field | type | meaning |\n|---|---|---|\n",
            s.name, s.doc
        ));
        for (field, ty, doc) in &s.fields {
            out.push_str(&format!("| `{field}` | {} | {doc} |\n", c_type(*ty)));
        }
    }
    out
}
