//! Skills for a test: a `SKILL.md` written where a root looks for it, and the skills a run saw
//! read back from its events (the catalogs the model got, the instructions it loaded), which is
//! also how a recorded skill case gets its skills written again (its fixture holds none).

use std::path::Path;

use serde_json::Value;

/// Writes skill `name` into `root` as `<root>/<name>/SKILL.md`: front matter `name` and the
/// lines of `front`, then `body`.
pub fn write_skill(root: &Path, name: &str, front: &str, body: &str) {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\n{front}---\n\n{body}\n"),
    )
    .unwrap();
}

/// The skill catalogs (their entries) and loaded skills (name, instructions) of a log, in order.
pub fn skills_seen(events: &[Value]) -> (Vec<Value>, Vec<(String, String)>) {
    let catalogs = events
        .iter()
        .filter(|event| {
            event["type"] == "user/message" && event["data"]["source"]["kind"] == "skill-catalog"
        })
        .map(|event| event["data"]["source"]["entries"].clone())
        .collect();
    let loaded = events
        .iter()
        .filter(|event| event["type"] == "tool/result")
        .filter_map(|event| {
            let text = event["data"]["message"]["content"][0]["content"][0]["text"].as_str()?;
            let rest = text.strip_prefix("<skill_content name=\"")?;
            let (name, rest) = rest.split_once('"')?;
            let (_, body) = rest.split_once("<skill_instructions>\n")?;
            let (body, _) = body.rsplit_once("\n</skill_instructions>")?;
            Some((name.to_owned(), body.to_owned()))
        })
        .collect();
    (catalogs, loaded)
}

/// Writes the skills a recording's catalog lists into `work/.dsh/skills` (the fixture has no
/// workspace files), each with the instructions the recording loaded, where it loaded them.
pub fn recorded_skills(recorded: &[Value], work: &Path) {
    let (catalogs, loaded) = skills_seen(recorded);
    for entry in catalogs
        .first()
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = entry["name"].as_str().unwrap();
        let body = loaded
            .iter()
            .find(|(loaded, _)| loaded == name)
            .map_or("Instructions the recording never loaded.", |(_, body)| body);
        // `model-only-skill` is the recording's user-disabled skill (its description says so).
        let flags = if name == "model-only-skill" {
            "user-invocable: false\n"
        } else {
            ""
        };
        let description = serde_json::to_string(&entry["description"]).unwrap();
        write_skill(
            &work.join(".dsh/skills"),
            name,
            &format!("description: {description}\n{flags}"),
            body,
        );
    }
}
