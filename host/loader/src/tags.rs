//! The YAML tags that stand in for the reference's `!!js` expressions, and the conversion of
//! row values (YAML with tags) to the JSON the runtime hands to plugins.
//!
//! - `!env NAME`: the variable's value as a string; an error when it is unset.
//! - `!env [NAME, default]`: the default (any scalar) when unset. When the default is a boolean
//!   or a number, a set variable is parsed as that type, so the value's type does not depend on
//!   the environment.
//! - `!home sub/path`: the absolute path of `sub/path` under `$DSH_HOME` (relative, no `..`).
//! - `!platform NAME`: `true` iff `NAME` is the current platform (`linux`, `macos` or `darwin`,
//!   `windows` or `win32`, ...).

use std::path::Path;

use serde_norway::Value;
use serde_norway::value::TaggedValue;

use crate::error::TagError;
use crate::locate::{self, Step};

/// What tag resolution needs from the outside world.
pub struct TagContext<'a> {
    /// Environment lookup (tests pass a closure over a map instead of the process env).
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// `$DSH_HOME`, the base of `!home`.
    pub home: &'a Path,
    /// The platform `!platform` compares with: `linux`, `macos`, `windows`, ...
    pub platform: String,
}

impl<'a> TagContext<'a> {
    /// A context for the platform this process runs on.
    pub fn new(env: &'a dyn Fn(&str) -> Option<String>, home: &'a Path) -> Self {
        Self {
            env,
            home,
            platform: current_platform().to_owned(),
        }
    }

    /// The same context pretending to run on `platform` (normalised like `!platform` names).
    pub fn with_platform(mut self, platform: &str) -> Self {
        self.platform = normalize_platform(platform).unwrap_or(platform).to_owned();
        self
    }
}

/// The current platform in `!platform` spelling (`std::env::consts::OS`).
pub fn current_platform() -> &'static str {
    std::env::consts::OS
}

const PLATFORMS: &[&str] = &[
    "linux",
    "macos",
    "windows",
    "android",
    "ios",
    "freebsd",
    "netbsd",
    "openbsd",
    "dragonfly",
    "solaris",
    "illumos",
];

fn normalize_platform(name: &str) -> Option<&'static str> {
    match name {
        "darwin" | "macos" | "osx" => Some("macos"),
        "win32" | "windows" => Some("windows"),
        other => PLATFORMS.iter().find(|p| **p == other).copied(),
    }
}

/// The name of a tag without its `!`.
pub(crate) fn tag_name(tagged: &TaggedValue) -> String {
    tagged.tag.to_string().trim_start_matches('!').to_owned()
}

enum Tag<'v> {
    Env {
        var: &'v str,
        default: Option<&'v Value>,
    },
    Home(&'v str),
    Platform(&'static str),
}

/// A tag that is unknown or has a bad argument; `path` leads from the tagged node to the culprit.
pub(crate) struct TagProblem {
    pub(crate) path: locate::Path,
    pub(crate) unknown: bool,
    pub(crate) message: String,
}

fn problem(path: locate::Path, message: String) -> TagProblem {
    TagProblem {
        path,
        unknown: false,
        message,
    }
}

fn classify(tagged: &TaggedValue) -> Result<Tag<'_>, TagProblem> {
    let name = tag_name(tagged);
    let inner = &tagged.value;
    match name.as_str() {
        "env" => match inner {
            Value::String(var) if !var.is_empty() => Ok(Tag::Env { var, default: None }),
            Value::Sequence(items) if items.len() == 2 => {
                let var = match &items[0] {
                    Value::String(var) if !var.is_empty() => var,
                    _ => {
                        let msg = "`!env [NAME, default]`: NAME must be a non-empty string".into();
                        return Err(problem(vec![Step::Tagged, Step::Index(0)], msg));
                    }
                };
                match &items[1] {
                    Value::Sequence(_) | Value::Mapping(_) | Value::Tagged(_) => Err(problem(
                        vec![Step::Tagged, Step::Index(1)],
                        format!("`!env [{var}, default]`: the default must be a plain scalar"),
                    )),
                    default => Ok(Tag::Env {
                        var,
                        default: Some(default),
                    }),
                }
            }
            _ => Err(problem(
                vec![],
                "`!env` takes a variable name or `[NAME, default]`".to_owned(),
            )),
        },
        "home" => match inner {
            Value::Null => Ok(Tag::Home("")),
            Value::String(sub) => {
                let path = Path::new(sub);
                if path.is_absolute() || sub.starts_with('/') || sub.starts_with('\\') {
                    Err(problem(
                        vec![],
                        format!("`!home {sub}`: the path must be relative"),
                    ))
                } else if path
                    .components()
                    .any(|c| matches!(c, std::path::Component::ParentDir))
                {
                    Err(problem(
                        vec![],
                        format!("`!home {sub}`: the path must stay under $DSH_HOME"),
                    ))
                } else {
                    Ok(Tag::Home(sub))
                }
            }
            _ => Err(problem(vec![], "`!home` takes a relative path".to_owned())),
        },
        "platform" => match inner {
            Value::String(name) => match normalize_platform(name) {
                Some(p) => Ok(Tag::Platform(p)),
                None => Err(problem(
                    vec![],
                    format!(
                        "`!platform {name}`: unknown platform (expected one of {}, darwin, win32)",
                        PLATFORMS.join(", ")
                    ),
                )),
            },
            _ => Err(problem(
                vec![],
                "`!platform` takes a platform name".to_owned(),
            )),
        },
        _ => Err(TagProblem {
            path: vec![],
            unknown: true,
            message: format!("!{name}"),
        }),
    }
}

/// Checks every tag inside a `config` value and that mapping keys are plain scalars.
pub(crate) fn check_config(value: &Value) -> Result<(), TagProblem> {
    match value {
        Value::Tagged(tagged) => classify(tagged).map(|_| ()),
        Value::Sequence(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, item)| check_config(item).map_err(|p| prefix(Step::Index(i), p))),
        Value::Mapping(map) => map.iter().try_for_each(|(key, item)| match key {
            Value::String(k) => check_config(item).map_err(|p| prefix(Step::Value(k.clone()), p)),
            Value::Null | Value::Bool(_) | Value::Number(_) => check_config(item),
            _ => Err(problem(
                vec![],
                "mapping keys must be plain scalars".to_owned(),
            )),
        }),
        _ => Ok(()),
    }
}

/// Checks a `disabled` value: a boolean, null, `!env` or `!platform`.
pub(crate) fn check_disabled(value: &Value) -> Result<(), TagProblem> {
    match value {
        Value::Null | Value::Bool(_) => Ok(()),
        Value::Tagged(tagged) => match classify(tagged)? {
            Tag::Home(_) => Err(problem(
                vec![],
                "`disabled` cannot be a `!home` path".to_owned(),
            )),
            _ => Ok(()),
        },
        _ => Err(problem(
            vec![],
            "`disabled` must be a boolean, `!platform NAME` or `!env ...`".to_owned(),
        )),
    }
}

fn prefix(step: Step, mut p: TagProblem) -> TagProblem {
    p.path.insert(0, step);
    p
}

/// Resolves a `config` value (tags included) to JSON. `field` names the value in messages.
pub fn resolve_config(
    value: &Value,
    ctx: &TagContext<'_>,
    field: &str,
) -> Result<serde_json::Value, TagError> {
    use serde_json::Value as J;
    Ok(match value {
        Value::Null => J::Null,
        Value::Bool(b) => J::Bool(*b),
        Value::Number(n) => J::Number(json_number(n, field)?),
        Value::String(s) => J::String(s.clone()),
        Value::Sequence(items) => J::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| resolve_config(item, ctx, &format!("{field}[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
        Value::Mapping(map) => {
            let mut out = serde_json::Map::new();
            for (key, item) in map {
                let key = match key {
                    Value::String(s) => s.clone(),
                    Value::Bool(b) => b.to_string(),
                    Value::Number(n) => n.to_string(),
                    Value::Null => "null".to_owned(),
                    _ => {
                        return Err(TagError::Invalid {
                            field: field.to_owned(),
                            message: "mapping keys must be plain scalars".to_owned(),
                        });
                    }
                };
                let item = resolve_config(item, ctx, &format!("{field}.{key}"))?;
                out.insert(key, item);
            }
            J::Object(out)
        }
        Value::Tagged(tagged) => resolve_tag(tagged, ctx, field)?,
    })
}

/// Resolves a `disabled` value (absent, null, boolean, `!platform`, `!env`) to a boolean.
pub fn resolve_disabled(value: Option<&Value>, ctx: &TagContext<'_>) -> Result<bool, TagError> {
    let field = "disabled";
    let invalid = |message: String| TagError::Invalid {
        field: field.to_owned(),
        message,
    };
    let Some(value) = value else { return Ok(false) };
    if let Value::Tagged(tagged) = value
        && matches!(classify(tagged), Ok(Tag::Home(_)))
    {
        return Err(invalid("`disabled` cannot be a `!home` path".to_owned()));
    }
    match resolve_config(value, ctx, field)? {
        serde_json::Value::Null => Ok(false),
        serde_json::Value::Bool(b) => Ok(b),
        serde_json::Value::String(s) => {
            parse_bool(&s).ok_or_else(|| invalid(format!("`{s}` is not a boolean")))
        }
        other => Err(invalid(format!("`{other}` is not a boolean"))),
    }
}

fn resolve_tag(
    tagged: &TaggedValue,
    ctx: &TagContext<'_>,
    field: &str,
) -> Result<serde_json::Value, TagError> {
    let tag = classify(tagged).map_err(|p| {
        if p.unknown {
            TagError::UnknownTag {
                field: field.to_owned(),
                tag: p.message,
            }
        } else {
            TagError::Invalid {
                field: field.to_owned(),
                message: p.message,
            }
        }
    })?;
    match tag {
        Tag::Platform(p) => Ok(serde_json::Value::Bool(p == ctx.platform)),
        Tag::Home(sub) => {
            let path = if sub.is_empty() {
                ctx.home.to_path_buf()
            } else {
                ctx.home.join(sub)
            };
            match path.to_str() {
                Some(s) => Ok(serde_json::Value::String(s.to_owned())),
                None => Err(TagError::Invalid {
                    field: field.to_owned(),
                    message: format!("{} is not valid UTF-8", path.display()),
                }),
            }
        }
        Tag::Env { var, default } => match ((ctx.env)(var), default) {
            (Some(text), Some(default)) => coerce_env(var, &text, default, field),
            (Some(text), None) => Ok(serde_json::Value::String(text)),
            (None, Some(default)) => resolve_config(default, ctx, field),
            (None, None) => Err(TagError::MissingEnv {
                field: field.to_owned(),
                var: var.to_owned(),
            }),
        },
    }
}

/// A set variable takes the type of its default when that is a boolean or a number.
fn coerce_env(
    var: &str,
    text: &str,
    default: &Value,
    field: &str,
) -> Result<serde_json::Value, TagError> {
    let invalid = |kind: &str| TagError::Invalid {
        field: field.to_owned(),
        message: format!("environment variable `{var}`=`{text}` is not {kind} like its default"),
    };
    match default {
        Value::Bool(_) => parse_bool(text)
            .map(serde_json::Value::Bool)
            .ok_or_else(|| invalid("a boolean")),
        Value::Number(n) => {
            let t = text.trim();
            let number = if n.is_f64() {
                t.parse::<f64>().ok().and_then(serde_json::Number::from_f64)
            } else if let Ok(i) = t.parse::<i64>() {
                Some(i.into())
            } else {
                t.parse::<u64>().ok().map(Into::into)
            };
            number
                .map(serde_json::Value::Number)
                .ok_or_else(|| invalid("a number"))
        }
        _ => Ok(serde_json::Value::String(text.to_owned())),
    }
}

fn json_number(n: &serde_norway::Number, field: &str) -> Result<serde_json::Number, TagError> {
    if let Some(i) = n.as_i64() {
        Ok(i.into())
    } else if let Some(u) = n.as_u64() {
        Ok(u.into())
    } else {
        n.as_f64()
            .and_then(serde_json::Number::from_f64)
            .ok_or_else(|| TagError::Invalid {
                field: field.to_owned(),
                message: format!("the number {n} has no JSON form"),
            })
    }
}

/// `true`/`1`/`yes`/`on` and `false`/`0`/`no`/`off`/empty, any case.
pub(crate) fn parse_bool(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" | "" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
#[path = "tags_tests.rs"]
mod tests;
