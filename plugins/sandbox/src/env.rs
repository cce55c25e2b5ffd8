//! The curated environment: variables whose names look like secrets are removed from every
//! confined (and unconfined) tool process unless the config allows them by name, so a model
//! cannot print an API key the host was started with.

use dsh_protocol::looks_secret;

/// What the dynamic loader and the C library act on while a program starts, before it can
/// confine anything: a sandbox wrapper (bwrap, or the host's `sandbox-exec`) whose own
/// environment held one would run code or change behaviour outside the sandbox. A trailing
/// `*` matches any rest of the name, as in a spawn request's `remove_env`.
pub(crate) const LOADER_VARS: [&str; 6] = [
    "LD_*",
    "GCONV_PATH",
    "GLIBC_TUNABLES",
    "MALLOC_*",
    "LOCPATH",
    "NLSPATH",
];

/// Whether `name` is matched by `pattern` (exact, or a prefix when it ends in `*`).
pub(crate) fn matches(name: &str, pattern: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == pattern,
    }
}

/// Whether the loader acts on `name`.
pub(crate) fn is_loader_var(name: &str) -> bool {
    LOADER_VARS.iter().any(|pattern| matches(name, pattern))
}

/// The names of `vars` to remove: those that look secret and are not in `allowed`.
pub(crate) fn secret_names<'a>(
    vars: impl IntoIterator<Item = &'a str>,
    allowed: &[String],
) -> Vec<String> {
    vars.into_iter()
        .filter(|name| looks_secret(name) && !allowed.iter().any(|allow| allow == name))
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loaders_variables_are_known_and_others_are_not() {
        for name in [
            "LD_PRELOAD",
            "LD_LIBRARY_PATH",
            "LD_AUDIT",
            "GCONV_PATH",
            "MALLOC_CHECK_",
        ] {
            assert!(is_loader_var(name), "{name}");
        }
        for name in ["PATH", "HOME", "OLD_PWD", "XLD_PRELOAD"] {
            assert!(!is_loader_var(name), "{name}");
        }
    }

    #[test]
    fn keys_tokens_and_passwords_go_unless_allowed_by_name() {
        let vars = [
            "PATH",
            "DEEPSEEK_API_KEY",
            "GITHUB_TOKEN",
            "db_password",
            "AWS_SECRET_ACCESS_KEY",
            "HOME",
            "NPM_TOKEN",
        ];
        let removed = secret_names(vars, &["NPM_TOKEN".to_owned()]);
        assert_eq!(
            removed,
            [
                "DEEPSEEK_API_KEY",
                "GITHUB_TOKEN",
                "db_password",
                "AWS_SECRET_ACCESS_KEY"
            ]
        );
    }
}
