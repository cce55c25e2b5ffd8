//! YAML for the host's trees and rows: a value quoted as a YAML string, and a tree written into
//! the test's directory and given to `dsh-host check` (which mounts it, reports and exits).

use crate::{Output, TestDir, run_host};

/// `text` as a YAML string (a JSON string is one), whatever characters it holds.
pub fn yaml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

/// `dsh-host check --config <dir>/tree.yml EXTRA` with `yaml` as the tree.
pub fn check(dir: &TestDir, yaml: &str, extra: &[&str]) -> Output {
    let config = dir.write("tree.yml", yaml);
    let mut args = vec!["check", "--config", config.to_str().unwrap()];
    args.extend(extra);
    run_host(&dir.home(), &args)
}
