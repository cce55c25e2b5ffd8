use super::scan::{Function, Source};
use super::*;

fn scanned(files: &[(&str, &str)]) -> Report {
    let files: Vec<(String, String)> = files
        .iter()
        .map(|(path, text)| ((*path).to_owned(), (*text).to_owned()))
        .collect();
    Report::of(&files)
}

fn lengths(text: &str) -> Vec<(String, usize)> {
    Source::new(text)
        .functions()
        .into_iter()
        .map(|Function { name, length, .. }| (name, length))
        .collect()
}

#[test]
fn a_function_ends_at_its_closing_brace_whatever_strings_chars_and_comments_hold() {
    let text = r####"
pub(crate) async fn tricky<'a>(x: &'a str) -> [u8; 2] {
    let open = "{ \" {";
    let close = '}';
    let quote = '\'';
    let escaped = '\\';
    let raw = r#"}} " }"#;
    let raw2 = br##"{"# }"##;
    // a comment with } and "
    /* a block } /* nested { */ still } */
    let _ = (open, close, quote, escaped, raw, raw2, x);
    [0; 2]
}

trait Shape {
    fn area(&self) -> f64;
}

fn after() {
}
"####;
    assert_eq!(
        lengths(text),
        [("tricky".to_owned(), 12), ("after".to_owned(), 2)]
    );
    assert_eq!(Source::new(text).functions()[0].line, 2);
}

#[test]
fn a_fn_inside_a_string_or_comment_is_not_a_function() {
    let text = "const T: &str = \"\nfn inside() {\n}\n\";\n// fn commented() {\nfn real() {}\n";
    assert_eq!(lengths(text), [("real".to_owned(), 1)]);
}

#[test]
fn long_functions_and_files_are_listed_longest_first() {
    let body = "    let _ = 1;\n".repeat(260);
    let long = format!("fn long() {{\n{body}}}\n");
    let longer = format!("fn a() {{}}\nfn longer() {{\n{body}{body}}}\n");
    let report = scanned(&[("host/src/a.rs", &long), ("host/src/b.rs", &longer)]);
    assert_eq!(
        report.long_functions,
        [
            ("host/src/b.rs".to_owned(), 2, "longer".to_owned(), 522),
            ("host/src/a.rs".to_owned(), 1, "long".to_owned(), 262),
        ]
    );
    assert_eq!(report.long_files, [("host/src/b.rs".to_owned(), 523)]);
    let text = report.render();
    assert!(
        text.contains("lint:   host/src/b.rs:2 fn longer: 522 lines\n"),
        "{text}"
    );
}

const PLUGIN: &str = r#"use serde_json::json;

pub fn make() -> Value {
    let a = serde_json::json!({"a": 1});
    let b = json! ({"required": ["path"]});
    // json!(not this one) nor value["commented"]
    let s = "json!(nor this) x[\"quoted\"]";
    a["key"].clone().or(b[ "other" ]).or(f()?["third"]).or(a["not-an-ident"])
}

#[cfg(test)]
mod a_tests;

fn after_a_test_declaration() -> Value {
    json!(null)
}

#[cfg(test)]
mod tests {
    fn check() {
        let _ = json!({"x": 1});
        let _ = value["x"];
    }
}
"#;

#[test]
fn plugin_code_stops_at_cfg_test_and_skips_test_files() {
    let report = scanned(&[
        ("plugins/agent-loop/src/lib.rs", PLUGIN),
        ("plugins/agent-loop/src/loop_tests.rs", PLUGIN),
        ("plugins/agent-loop/src/tests.rs", PLUGIN),
        ("plugins/agent-loop/tests/run.rs", PLUGIN),
        ("plugin-api/protocol/src/lib.rs", "fn f() { json!(1); }\n"),
        (
            "plugin-api/seams/agents/src/lib.rs",
            "fn f() { v[\"k\"]; }\n",
        ),
        ("host/src/lib.rs", PLUGIN),
    ]);
    let json: Vec<(&str, usize)> = report
        .json_macros
        .iter()
        .map(|(path, count)| (path.as_str(), *count))
        .collect();
    assert_eq!(
        json,
        [
            ("plugin-api/protocol/src/lib.rs", 1),
            ("plugins/agent-loop/src/lib.rs", 3)
        ]
    );
    assert_eq!(
        report.key_lookups.get("plugins/agent-loop/src/lib.rs"),
        Some(&3)
    );
    let text = report.render();
    assert!(
        text.contains("lint: json! in plugin code: 4 (agent-loop 3, protocol 1)\n"),
        "{text}"
    );
    assert!(
        text.contains("lint: [\"key\"] lookups in plugin code: 4 (agent-loop 3, seams/agents 1)\n"),
        "{text}"
    );
}

#[test]
fn the_cut_at_cfg_test_runs_to_the_end_of_the_usual_tests_module() {
    let source = Source::new(PLUGIN);
    assert_eq!(source.test_lines(), [11..=12, 18..=24]);
    let inner = Source::new("#![cfg(test)]\nfn f() {}\n");
    assert_eq!(inner.test_lines(), [1..=2]);
}

#[test]
fn plugin_crates_are_named_by_their_place() {
    for (path, name) in [
        ("plugins/tools/src/lib.rs", "tools"),
        ("plugins/tool-fs/core/src/read.rs", "tool-fs/core"),
        ("plugin-api/seams/llm/src/lib.rs", "seams/llm"),
        ("plugin-api/kit/path-follow/src/lib.rs", "kit/path-follow"),
        ("plugin-api/protocol/src/a.rs", "protocol"),
        ("host/libs/session-log/src/log.rs", "libs/session-log"),
    ] {
        assert_eq!(plugin_crate(path).as_deref(), Some(name), "{path}");
    }
    assert_eq!(plugin_crate("plugin-api/src/lib.rs"), None);
    assert_eq!(plugin_crate("plugins/lone.rs"), None);
    assert_eq!(plugin_crate("host/src/lib.rs"), None);
    assert!(is_test_file("plugins/x/tests/common/mod.rs"));
    assert!(!is_test_file("plugins/x/src/testsuite.rs"));
}

const UNSAFE: &str = r#"fn documented() {
    // SAFETY: the pointer is live.
    #[allow(unsafe_code, reason = "a test")]
    let a = unsafe { read(p) };
    let b = 1;
    // SAFETY: a long comment
    // that takes
    // three lines
    unsafe {
        read(p);
    }
}

// SAFETY: four lines above is too far.
fn undocumented() {


    unsafe { read(p) };
}

unsafe fn not_a_block() {}
unsafe impl Send for X {}
#[unsafe(no_mangle)]
extern "C" fn f() { let s = "unsafe { in a string }"; }
// unsafe { in a comment }
"#;

#[test]
fn every_unsafe_block_outside_library_loading_needs_its_safety_comment() {
    let source = Source::new(UNSAFE);
    let blocks = source.unsafe_blocks();
    let lines: Vec<usize> = blocks.iter().map(|block| source.line_of(*block)).collect();
    assert_eq!(lines, [4, 9, 18]);
    let documented: Vec<bool> = blocks
        .iter()
        .map(|block| source.has_safety_comment(*block))
        .collect();
    assert_eq!(documented, [true, true, false]);
    let same_line = Source::new("fn f() {\n    let b = /* SAFETY: before */ unsafe { g() };\n}\n");
    assert!(same_line.has_safety_comment(same_line.unsafe_blocks()[0]));
    let after = Source::new("fn f() {\n    let b = unsafe { g() }; // SAFETY: after\n}\n");
    assert!(!after.has_safety_comment(after.unsafe_blocks()[0]));

    let report = scanned(&[
        ("host/src/runtime.rs", UNSAFE),
        ("host/src/library/load.rs", UNSAFE),
        ("plugins/tools/src/lib.rs", UNSAFE),
    ]);
    assert_eq!(
        report.undocumented,
        [("host/src/runtime.rs".to_owned(), 18)]
    );
    assert_eq!(total(&report.guarded_unsafe), 3);
    assert_eq!(total(&report.all_unsafe), 9);
    let error = report.gate().unwrap_err().to_string();
    assert!(error.contains("host/src/runtime.rs:18"), "{error}");

    let exempt = scanned(&[("host/src/library/load.rs", UNSAFE)]);
    assert!(exempt.gate().is_ok());
}

#[test]
fn lines_are_counted_as_str_lines_counts_them() {
    for text in ["", "a", "a\n", "a\nb", "a\n\nb\n"] {
        assert_eq!(
            Source::new(text).line_count(),
            text.lines().count(),
            "{text:?}"
        );
    }
}

const STRING_ERRORS: &str = r#"pub fn a() -> Result<(), String> { Ok(()) }
pub fn b() -> Result<Vec<(u8, String)>, std::string::String> { todo!() }
pub fn c() -> Result<String, MyError> { todo!() }
pub fn d() -> io::Result<String> { todo!() }
type Parsed<T> = Result<
    T,
    String,
>;
fn e(f: Box<dyn Fn(u8) -> Result<u8, u8>>) -> Result<Box<dyn Fn() -> String>, Error> { todo!() }
fn g() { let _ = Result::<u8, String>::Ok(1); }
// fn commented() -> Result<(), String>
const S: &str = "Result<(), String>";
fn rresult() -> RResult<(), String> { todo!() }

#[cfg(test)]
mod tests {
    fn t() -> Result<(), String> { Ok(()) }
}
"#;

#[test]
fn a_string_error_is_the_last_generic_argument_whatever_the_nesting() {
    let source = Source::new(STRING_ERRORS);
    assert_eq!(
        source.results_with_error("Result", &["String"]),
        [1, 2, 5, 10, 17]
    );
    assert_eq!(source.results_with_error("RResult", &["String"]), [13]);
    let seam = Source::new(
        "trait T {\n    fn f(&self) -> FfiFuture<RResult<Json<Vec<u8>>, RString>>;\n    \
         fn g(&self) -> RResult<RString, SeamError>;\n}\n",
    );
    assert_eq!(seam.results_with_error("RResult", &["RString"]), [2]);
}

#[test]
fn string_errors_count_in_product_code_and_seams_and_fail_the_step() {
    let seam = "pub trait S {\n    fn f(&self) -> RResult<(), RString>;\n}\n";
    let report = scanned(&[
        ("plugins/web/src/settings.rs", STRING_ERRORS),
        ("plugins/web/src/settings_tests.rs", STRING_ERRORS),
        (
            "plugin-api/src/context.rs",
            "fn f() -> Result<(), String> {}\n",
        ),
        ("host/src/app/boot.rs", "fn f() -> Result<(), String> {}\n"),
        ("host/loader/src/lib.rs", "#[cfg(test)]\nmod test_util;\n"),
        (
            "host/loader/src/test_util.rs",
            "fn f() -> Result<(), String> {}\n",
        ),
        (
            "host/sandbox-exec/src/args.rs",
            "fn f() -> Result<(), String> {}\n",
        ),
        ("tests/src/lib.rs", "fn f() -> Result<(), String> {}\n"),
        ("xtask/src/main.rs", "fn f() -> Result<(), String> {}\n"),
        ("plugin-api/seams/jobs/src/lib.rs", seam),
        ("plugin-api/src/io/watch.rs", seam),
        ("plugin-api/src/abi.rs", seam),
        ("plugins/jobs/src/lib.rs", seam),
    ]);
    let places = |found: &[(String, usize)]| -> Vec<String> {
        found
            .iter()
            .map(|(path, line)| format!("{path}:{line}"))
            .collect()
    };
    assert_eq!(
        places(&report.string_results),
        [
            "host/sandbox-exec/src/args.rs:1",
            "host/src/app/boot.rs:1",
            "plugin-api/src/context.rs:1",
            "plugins/web/src/settings.rs:1",
            "plugins/web/src/settings.rs:2",
            "plugins/web/src/settings.rs:5",
            "plugins/web/src/settings.rs:10",
        ]
    );
    assert_eq!(
        places(&report.string_seam_errors),
        [
            "plugin-api/seams/jobs/src/lib.rs:2",
            "plugin-api/src/io/watch.rs:2"
        ]
    );
    let text = report.render();
    assert!(
        text.contains(
            "lint: Result<_, String> in product code: 7 (web 4, host 1, host/sandbox-exec 1, \
             plugin-api 1)\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "lint: seam methods returning a bare string error (RResult<_, RString>): 2 \
             (plugin-api 1, seams/jobs 1)\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("lint:   at host/src/app/boot.rs:1\n"),
        "{text}"
    );
    let error = report.gate().unwrap_err().to_string();
    assert!(
        error.contains("`Result<_, String>` in product code")
            && error.contains("plugins/web/src/settings.rs:10"),
        "{error}"
    );
    assert!(
        error.contains("returning `RResult<_, RString>`")
            && error.contains("plugin-api/src/io/watch.rs:2"),
        "{error}"
    );
    let typed = scanned(&[(
        "plugins/web/src/settings.rs",
        "fn f() -> Result<(), SettingsError> {}\n",
    )]);
    assert!(typed.gate().is_ok());
}

#[test]
fn product_crates_cover_plugin_api_and_the_host() {
    for (path, name) in [
        ("plugins/tools/src/lib.rs", "tools"),
        ("plugin-api/src/io/fs.rs", "plugin-api"),
        ("host/src/main.rs", "host"),
        ("host/loader/src/row.rs", "host/loader"),
        ("host/libs/fs-local/src/lib.rs", "libs/fs-local"),
    ] {
        assert_eq!(product_crate(path).as_deref(), Some(name), "{path}");
    }
    assert_eq!(product_crate("host/Cargo.toml"), None);
    assert_eq!(product_crate("tests/src/lib.rs"), None);
    assert_eq!(product_crate("xtask/src/lint.rs"), None);
    assert_eq!(
        module_files("host/loader/src/lib.rs", &["test_util".to_owned()]),
        [
            "host/loader/src/test_util.rs",
            "host/loader/src/test_util/mod.rs"
        ]
    );
    assert_eq!(
        module_files("plugins/web/src/api.rs", &["fakes".to_owned()]),
        [
            "plugins/web/src/api/fakes.rs",
            "plugins/web/src/api/fakes/mod.rs"
        ]
    );
}
