//! The `skill` tool (REFERENCE §3: one required `name`): loads one skill's instructions for the
//! model, read from its file at the call (so an edit shows at the next load), from the skills
//! the call's working directory sees. The result is one text, the `<skill_content>` block a
//! person's `/name` run shows too: where the skill's files are, then its instructions. Nothing
//! else is logged: the result is the loaded skill's record.

use std::collections::BTreeMap;
use std::sync::Arc;

use abi_stable::std_types::{RNone, ROption, RString};
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::Json;
use dsh_plugin_api::cancel::CancelBox;
use dsh_plugin_api::serde::{Deserialize, Serialize};
use dsh_protocol::{Concurrency, ContentBlock, OutcomeSummary, ToolDecl, ToolReply};
use dsh_tools_seam::{CallView, Tool};

use crate::catalog::escape;
use crate::discover::load;
use crate::error::LoadError;
use crate::library::Library;
use crate::skill::{Skill, is_skill_name};

/// The tool's name.
pub(crate) const NAME: &str = "skill";

#[derive(Serialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct Property {
    #[serde(rename = "type")]
    kind: &'static str,
    description: &'static str,
}

/// The parameters' JSON Schema.
#[derive(Serialize)]
#[serde(crate = "dsh_plugin_api::serde")]
#[serde(rename_all = "camelCase")]
struct Parameters {
    #[serde(rename = "type")]
    kind: &'static str,
    properties: BTreeMap<&'static str, Property>,
    required: [&'static str; 1],
    additional_properties: bool,
}

#[derive(Deserialize)]
#[serde(crate = "dsh_plugin_api::serde")]
struct Args {
    name: String,
}

pub(crate) fn spec() -> ToolDecl {
    let parameters = Parameters {
        kind: "object",
        properties: BTreeMap::from([(
            "name",
            Property {
                kind: "string",
                description: "The exact name of the skill, from the list of available skills.",
            },
        )]),
        required: ["name"],
        additional_properties: false,
    };
    let mut decl = ToolDecl::new(
        NAME,
        "Load the full instructions of one of the available skills by its exact name. Load a \
         skill before acting on a task it applies to.",
        serde_json::to_value(&parameters).unwrap_or_default(),
    );
    decl.concurrency = Concurrency::Parallel;
    decl
}

/// The `<skill_content>` block of `skill` with instructions `body`. Its resource lines are the
/// reference's words (its recorded `skill-load` case pins them); the name needs no escaping (a
/// skill name is lowercase letters, digits and hyphens), the directory is escaped as text.
pub(crate) fn render(skill: &Skill, body: &str) -> String {
    format!(
        "<skill_content name=\"{name}\">\n<skill_resources>\nBase directory for this skill: {dir}\n\
         Resolve relative paths mentioned by this skill against the base directory before using \
         them. Load referenced resources only as needed.\n</skill_resources>\n\n\
         <skill_instructions>\n{body}\n</skill_instructions>\n</skill_content>",
        name = skill.name,
        dir = escape(&skill.directory.display().to_string()),
    )
}

/// The block of skill `name` as a session in `cwd` with tool scope chain `scope` sees it, for
/// the model (`for_model`) or a person.
pub(crate) async fn content(
    library: &Arc<Library>,
    cwd: &str,
    scope: &[String],
    name: &str,
    for_model: bool,
) -> Result<String, LoadError> {
    if !is_skill_name(name) {
        return Err(LoadError::BadName(name.to_owned()));
    }
    let found = library.for_session(cwd, scope).await?;
    let skill = found
        .get(name)
        .cloned()
        .ok_or_else(|| LoadError::Unknown(name.to_owned()))?;
    match for_model {
        true if !skill.model_invocable => return Err(LoadError::NotForModel(skill.name)),
        false if !skill.user_invocable => return Err(LoadError::NotForUser(skill.name)),
        _ => {}
    }
    let file = skill.clone();
    let body = library
        .context()
        .blocking(move || load(&file))
        .await
        .map_err(|error| LoadError::Host(error.to_string()))??;
    Ok(render(&skill, &body))
}

pub(crate) struct SkillTool {
    pub(crate) library: Arc<Library>,
}

impl Tool for SkillTool {
    fn spec(&self) -> Json<ToolDecl> {
        Json::encode(&spec())
    }

    fn execute(&self, call: CallView, _cancel: CancelBox) -> FfiFuture<Json<ToolReply>> {
        let library = self.library.clone();
        async move {
            let reply = match serde_json::from_str::<Args>(&call.arguments) {
                Err(error) => {
                    ToolReply::error(format!("skill: the arguments do not read: {error}"))
                }
                Ok(args) => {
                    let scope: Vec<String> = call.scope.iter().map(|key| key.to_string()).collect();
                    match content(&library, &call.cwd, &scope, args.name.trim(), true).await {
                        Ok(text) => ToolReply::text(text),
                        Err(error) => ToolReply::error(error.to_string()),
                    }
                }
            };
            Json::encode(&reply)
        }
        .into_ffi()
    }

    fn parallel_safe(&self, _arguments: RString) -> ROption<bool> {
        RNone
    }

    fn finalize_content(&self, _outcome: Json<OutcomeSummary>) -> ROption<Json<Vec<ContentBlock>>> {
        RNone
    }
}
