//! The curated environment: variables that look like secrets are removed from every confined
//! (and unconfined) tool process unless the config allows them by name, so a model cannot
//! print an API key the host was started with. A variable looks like a secret by its name
//! (KEY, TOKEN, SECRET, PASSWORD, CREDENTIAL, DSN) or by its value: a URL that carries a
//! password (`postgres://user:pass@db/x`), a private key, a token of a well-known shape
//! (`ghp_...`, `sk-...`, `xoxb-...`, `AKIA...`), or a value the credentials store or a row's
//! own `env` or `headers` holds.

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

/// The prefixes of tokens whose shape gives them away.
const TOKEN_PREFIXES: [&str; 12] = [
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "sk-",
    "xoxb-",
    "xoxp-",
    "AKIA",
    "npm_",
];

/// Known secret values shorter than this are not looked for inside other values (too many
/// innocent matches).
const SHORTEST_KNOWN: usize = 8;

/// Whether a URL in `value` carries a password (`scheme://user:password@host`).
fn url_with_password(value: &str) -> bool {
    value.match_indices("://").any(|(at, _)| {
        let rest = &value[at + 3..];
        let authority = rest.split(['/', '?', '#', ' ']).next().unwrap_or("");
        authority
            .rsplit_once('@')
            .is_some_and(|(userinfo, _)| userinfo.contains(':'))
    })
}

/// Whether `value` looks like a secret whatever its variable's name, `known` being the values
/// the credentials store holds.
pub(crate) fn secret_value(value: &str, known: &[String]) -> bool {
    let trimmed = value.trim();
    url_with_password(trimmed)
        || trimmed.contains("-----BEGIN")
        || TOKEN_PREFIXES
            .iter()
            .any(|prefix| trimmed.starts_with(prefix) && trimmed.len() >= prefix.len() + 16)
        || known
            .iter()
            .any(|secret| secret.len() >= SHORTEST_KNOWN && trimmed.contains(secret.as_str()))
}

/// Whether `name` marks a secret beyond [`looks_secret`]: a DSN carries its key in its URL.
fn secret_name(name: &str) -> bool {
    looks_secret(name) || name.to_ascii_uppercase().contains("DSN")
}

/// The names of `vars` to remove: those that look secret by name or value and are not in
/// `allowed`.
pub(crate) fn secret_names<'a>(
    vars: impl IntoIterator<Item = (&'a str, &'a str)>,
    allowed: &[String],
    known: &[String],
) -> Vec<String> {
    vars.into_iter()
        .filter(|(name, value)| {
            (secret_name(name) || secret_value(value, known))
                && !allowed.iter().any(|allow| allow == name)
        })
        .map(|(name, _)| name.to_owned())
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
        ]
        .map(|name| (name, "x"));
        let removed = secret_names(vars, &["NPM_TOKEN".to_owned()], &[]);
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

    #[test]
    fn values_that_carry_a_secret_go_whatever_their_name() {
        let known = ["stored-key-0123456789".to_owned(), "short".to_owned()];
        let vars = [
            (
                "DATABASE_URL",
                "postgres://app:hunter2@db.internal:5432/app",
            ),
            ("PUBLIC_URL", "https://example.com/path?x=1"),
            ("PROXY", "http://user@proxy:3128"),
            ("SENTRY_DSN", "https://abc@o1.ingest.sentry.io/1"),
            ("MY_GH", "ghp_0123456789abcdefghijklmnopqrstuv"),
            ("SOMETHING", "prefix-stored-key-0123456789"),
            ("GREETING", "short and sweet"),
            ("DEPLOY", "-----BEGIN OPENSSH PRIVATE KEY-----"),
            ("EDITOR", "sk-"),
        ];
        let removed = secret_names(vars, &[], &known);
        assert_eq!(
            removed,
            ["DATABASE_URL", "SENTRY_DSN", "MY_GH", "SOMETHING", "DEPLOY"]
        );
    }
}
