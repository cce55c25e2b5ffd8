//! `plugin_new {name, dir?}`: the template crate, written where the session may write.

use dsh_plugin_api::Deserialize;
use dsh_tools_seam::CallView;

use crate::State;
use crate::error::AuthorError;

#[derive(Deserialize)]
#[serde(crate = "dsh_plugin_api::serde", deny_unknown_fields)]
struct Arguments {
    name: String,
    #[serde(default)]
    dir: Option<String>,
}

pub(crate) fn run(state: &State, call: &CallView) -> Result<String, AuthorError> {
    let arguments: Arguments = serde_json::from_str(&call.arguments)?;
    let dir = State::resolve(call, arguments.dir.as_deref().unwrap_or(&arguments.name));
    // The crate is written by the host, not by a confined command: it goes only where the
    // session's commands could write it themselves.
    if !state.writable(call, &dir) {
        return Err(AuthorError::NotWritable(dir));
    }
    let files = dsh_plugin_template::create(&state.api_path, &arguments.name, &dir)?;
    let listed: Vec<String> = files
        .iter()
        .map(|file| {
            file.strip_prefix(&dir)
                .unwrap_or(file)
                .display()
                .to_string()
        })
        .collect();
    let root = state
        .api_path
        .parent()
        .unwrap_or(&state.api_path)
        .display()
        .to_string();
    Ok(format!(
        "Created plugin crate `{name}` in {dir} ({files}); it depends on plugin-api at {api}.\n\
         The template plugin only prints a message. A plugin that adds a tool also needs, under \
         [dependencies] in Cargo.toml:\n\
         dsh-protocol = {{ path = \"{root}/plugin-api/protocol\" }}\n\
         dsh-tools-seam = {{ path = \"{root}/plugin-api/seams/tools\" }}\n\
         (abi_stable, async_ffi and serde_json come re-exported from dsh_plugin_api.) \
         A complete tool plugin to start from: {guide}/tool-plugin.rs and {guide}/tool-plugin.Cargo.toml; \
         the guide to the plugin API: {guide}/SKILL.md (the `plugin-author` skill). \
         Then: plugin_build {{\"path\": \"{arg}\"}}, plugin_install {{\"path\": \"{arg}\"}}.",
        name = arguments.name,
        dir = dir.display(),
        files = listed.join(", "),
        api = state.api_path.display(),
        guide = state.guide.display(),
        arg = arguments.dir.as_deref().unwrap_or(&arguments.name),
    ))
}
