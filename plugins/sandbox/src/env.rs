//! The curated environment: variables whose names look like secrets are removed from every
//! confined (and unconfined) tool process unless the config allows them by name, so a model
//! cannot print an API key the host was started with.

/// Name fragments that mark a secret (matched case-insensitively).
const SECRET_MARKS: [&str; 6] = ["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"];

/// Whether `name` looks like it holds a secret.
pub(crate) fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_MARKS.iter().any(|mark| upper.contains(mark))
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
