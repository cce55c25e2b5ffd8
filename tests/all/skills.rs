//! Skills through the real host: a skill in each root reaches the model's first request as one
//! catalog message (the hidden and the broken ones not; the broken one named in the log with
//! its field), the `skill` tool loads one and refuses a hidden one, the next request extends the
//! first one's messages (the prefix stays the same); a skill added while the web profile runs
//! shows in an appended replacement catalog, and a turn with nothing changed appends none, nor
//! does a resumed session (it reads its last catalog from the log); `/name` runs a
//! user-invocable skill as a command whose line never reaches the model.

use std::time::{Duration, Instant};

use dsh_tests::TestDir;
use dsh_tests::fake_deepseek::{FakeDeepSeek, RecordedRequest, Reply};
use dsh_tests::headless::{against_with_env, stream_json};
use dsh_tests::sessions::stored_session_ids;
use dsh_tests::skills::write_skill;
use dsh_tests::web::{Web, WebHost, fake_model_layer, turn_ended};
use serde_json::{Value, json};

fn catalogs(request: &RecordedRequest) -> Vec<String> {
    request
        .user_texts()
        .into_iter()
        .filter(|text| text.contains("<available_skills>") || text.contains("No skills are"))
        .collect()
}

/// `later`'s messages begin with all of `earlier`'s: the cached prefix holds.
fn extends(earlier: &Value, later: &Value) -> bool {
    let (earlier, later) = (
        earlier["messages"].as_array().unwrap(),
        later["messages"].as_array().unwrap(),
    );
    later.len() > earlier.len() && later[..earlier.len()] == earlier[..]
}

#[test]
fn skills_in_every_root_reach_the_model_as_one_catalog_and_the_tool_loads_one() {
    let dir = TestDir::new("skills-roots");
    dir.trust_projects();
    let work = dir.join("work");
    write_skill(
        &work.join(".dsh/skills"),
        "from-project-dsh",
        "description: Project dsh skill.\n",
        "Body D.",
    );
    write_skill(
        &work.join(".agents/skills"),
        "from-project-agents",
        "description: Project agents skill.\n",
        "Body A.",
    );
    write_skill(
        &dir.join("custom"),
        "from-custom",
        "description: Configured skill.\n",
        "Body C.",
    );
    write_skill(
        &dir.home().join("skills"),
        "from-home",
        "description: |\n  Home skill,\n  on two lines.\n",
        "Follow the home steps: say HERON.",
    );
    write_skill(
        &dir.join("agents/skills"),
        "from-agents-home",
        "description: Agents home skill.\n",
        "Body H.",
    );
    write_skill(
        &work.join(".dsh/skills"),
        "hidden-one",
        "description: Not for the model.\ndisable-model-invocation: true\n",
        "Secret body.",
    );
    write_skill(
        &work.join(".dsh/skills"),
        "broken-one",
        "",
        "No description.",
    );
    let server = FakeDeepSeek::start(vec![
        Reply::tool_calls(&[
            ("call_1", "skill", r#"{"name":"from-home"}"#),
            ("call_2", "skill", r#"{"name":"hidden-one"}"#),
        ]),
        Reply::text("HERON"),
    ]);
    dir.write(
        "home/cordis.patch.yml",
        &format!(
            "- id: skills\n  config:\n    dshHome: {}\n    customSkillDirs: [{}]\n",
            dir.home().display(),
            dir.join("custom").display(),
        ),
    );
    let agents = dir.join("agents");
    let out = against_with_env(
        &server,
        &dir,
        &["--output", "stream-json", "Use the home skill."],
        &[("DSH_AGENTS_HOME", agents.to_str().unwrap())],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    // The broken file is named with its field; the others loaded.
    assert!(
        out.stderr.contains("broken-one/SKILL.md")
            && out.stderr.contains("field `description` is missing"),
        "{}",
        out.stderr
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = catalogs(&requests[0]);
    assert_eq!(first.len(), 1, "one catalog: {first:?}");
    for listed in [
        "- `from-agents-home`: Agents home skill.",
        "- `from-custom`: Configured skill.",
        "- `from-home`: Home skill, on two lines.",
        "- `from-project-agents`: Project agents skill.",
        "- `from-project-dsh`: Project dsh skill.",
    ] {
        assert!(first[0].contains(listed), "{listed} in {}", first[0]);
    }
    assert!(
        !first[0].contains("hidden-one") && !first[0].contains("broken-one"),
        "{}",
        first[0]
    );
    // The catalog follows the task, and nothing is inserted before older messages.
    let texts = requests[0].user_texts();
    assert_eq!(texts.last(), Some(&first[0]), "{texts:?}");
    assert!(extends(&requests[0].body, &requests[1].body));
    assert_eq!(
        catalogs(&requests[1]).len(),
        1,
        "the catalog is not repeated"
    );
    let tools: Vec<String> = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(tools.len(), 2, "{tools:?}");
    assert!(
        tools[0].starts_with("<skill_content name=\"from-home\">"),
        "{}",
        tools[0]
    );
    assert!(
        tools[0].contains(
            "\n<skill_instructions>\nFollow the home steps: say HERON.\n</skill_instructions>\n"
        ),
        "{}",
        tools[0]
    );
    assert!(
        tools[0].contains(&dir.home().join("skills/from-home").display().to_string()),
        "{}",
        tools[0]
    );
    assert!(
        tools[1].contains("not available to the model") && !tools[1].contains("Secret"),
        "{}",
        tools[1]
    );
    // The catalog is logged under its own source, with the entries it lists.
    let (events, _) = stream_json(&out.stdout);
    let logged: Vec<&Value> = events
        .iter()
        .filter(|event| {
            event["type"] == "user/message" && event["data"]["source"]["kind"] == "skill-catalog"
        })
        .collect();
    assert_eq!(logged.len(), 1);
    assert_eq!(logged[0]["data"]["source"]["form"], "catalog");
    assert_eq!(
        logged[0]["data"]["source"]["entries"]
            .as_array()
            .unwrap()
            .len(),
        5
    );
    assert_eq!(
        logged[0]["data"]["source"]["entries"][2],
        json!({"name": "from-home", "description": "Home skill, on two lines."})
    );
    server.assert_no_violations();
}

/// The web profile in `dir/work` against `server`, with the user's agents home in the test.
fn web(server: &FakeDeepSeek, dir: &TestDir) -> Web {
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let agents = dir.join("agents");
    Web::from(WebHost::start(
        dir,
        &fake_model_layer(&server.url(), ""),
        &["--cwd", work.to_str().unwrap()],
        &[
            ("DEEPSEEK_API_KEY", "sk-test"),
            ("DSH_AGENTS_HOME", agents.to_str().unwrap()),
        ],
    ))
}

fn listed(web: &Web) -> Vec<Value> {
    web.call("commands.list", &json!({}))["commands"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn a_skill_added_while_the_host_runs_shows_in_an_appended_catalog() {
    let dir = TestDir::new("skills-added");
    dir.trust_projects();
    let server = FakeDeepSeek::start(vec![
        Reply::text("First."),
        Reply::text("Second."),
        Reply::text("Third."),
    ]);
    let work = dir.join("work");
    write_skill(
        &work.join(".dsh/skills"),
        "first-skill",
        "description: There from the start.\n",
        "One.",
    );
    let mut web = web(&server, &dir);
    let (session, mut socket) = web.followed_session();
    web.prompt(&session, "Hello.");
    socket.until(300, turn_ended);
    // `.agents/skills` does not exist yet: its watch waits for it from the workspace.
    write_skill(
        &work.join(".agents/skills"),
        "late-skill",
        "description: Added while running.\n",
        "Two.",
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while !listed(&web).iter().any(|spec| spec["name"] == "late-skill") {
        assert!(
            Instant::now() < deadline,
            "the new skill never showed: {:?}",
            listed(&web)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    web.prompt(&session, "Again.");
    socket.until(300, turn_ended);
    let requests = server.requests();
    let (first, second) = (catalogs(&requests[0]), catalogs(&requests[1]));
    assert_eq!(first.len(), 1, "{first:?}");
    assert!(first[0].contains("`first-skill`") && !first[0].contains("late-skill"));
    assert_eq!(
        second.len(),
        2,
        "the first catalog stays, a replacement follows: {second:?}"
    );
    assert!(
        second[1].contains("replaces every earlier one"),
        "{}",
        second[1]
    );
    assert!(
        second[1].contains("`first-skill`")
            && second[1].contains("`late-skill`: Added while running.")
    );
    assert!(
        extends(&requests[0].body, &requests[1].body),
        "the prefix changed"
    );
    // Nothing changed since: the next turn is told nothing new.
    web.prompt(&session, "Once more.");
    socket.until(300, turn_ended);
    let third = server.requests()[2].clone();
    assert_eq!(catalogs(&third), second, "a catalog was repeated");
    assert!(extends(&requests[1].body, &third.body));
    server.assert_no_violations();
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn a_user_invocable_skill_runs_as_a_command_whose_line_never_reaches_the_model() {
    let dir = TestDir::new("skills-command");
    dir.trust_projects();
    let server = FakeDeepSeek::start(vec![Reply::text("OSPREY, en français.")]);
    let skills = dir.join("work/.dsh/skills");
    write_skill(
        &skills,
        "say-codeword",
        "description: Say the codeword.\n",
        "Say the codeword OSPREY.",
    );
    write_skill(
        &skills,
        "model-only",
        "description: Only the model loads it.\nuser-invocable: false\n",
        "Model body.",
    );
    let mut web = web(&server, &dir);
    let (session, mut socket) = web.followed_session();
    let specs = listed(&web);
    let spec = specs
        .iter()
        .find(|spec| spec["name"] == "say-codeword")
        .expect("listed");
    assert!(
        spec["description"]
            .as_str()
            .unwrap()
            .contains("Say the codeword."),
        "{spec}"
    );
    assert!(
        !specs.iter().any(|spec| spec["name"] == "model-only"),
        "{specs:?}"
    );
    let refused = web.prompt(&session, "/model-only");
    assert_eq!(refused["command"]["kind"], "error", "{refused}");
    let ran = web.prompt(&session, "/say-codeword in French");
    assert_eq!(ran["command"]["kind"], "success", "{ran}");
    socket.until(300, turn_ended);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let texts = requests[0].user_texts();
    let skill = texts
        .iter()
        .position(|text| text.starts_with("<skill_content name=\"say-codeword\">"))
        .unwrap_or_else(|| panic!("no skill content: {texts:?}"));
    assert!(
        texts[skill].contains("Say the codeword OSPREY."),
        "{}",
        texts[skill]
    );
    assert_eq!(
        texts.get(skill + 1).map(String::as_str),
        Some("in French"),
        "{texts:?}"
    );
    assert!(
        !texts
            .iter()
            .any(|text| text.starts_with('/') || text.contains("/say-codeword in")),
        "a command line reached the model: {texts:?}"
    );
    server.assert_no_violations();
    assert_eq!(web.host.stop(), Some(0));
}

#[test]
fn a_resumed_session_reads_its_last_catalog_from_the_log() {
    let dir = TestDir::new("skills-resume");
    dir.trust_projects();
    let server = FakeDeepSeek::start(vec![
        Reply::text("One."),
        Reply::text("Two."),
        Reply::text("Three."),
    ]);
    let work = dir.join("work");
    let skills = work.join(".agents/skills");
    write_skill(&skills, "kept-skill", "description: Kept.\n", "Body.");
    let agents = dir.join("agents");
    let run = |task: &str, resume: Option<&str>| {
        let mut args = Vec::new();
        if let Some(id) = resume {
            args.extend(["--resume", id]);
        }
        args.push(task);
        let out = against_with_env(
            &server,
            &dir,
            &args,
            &[("DSH_AGENTS_HOME", agents.to_str().unwrap())],
        );
        assert_eq!(out.code, Some(0), "{out:?}");
    };
    run("First.", None);
    let ids = stored_session_ids(&dir.home());
    assert_eq!(ids.len(), 1, "{ids:?}");
    run("Second.", Some(&ids[0]));
    write_skill(&skills, "new-skill", "description: New.\n", "Body.");
    run("Third.", Some(&ids[0]));
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(catalogs(&requests[0]).len(), 1);
    // Nothing changed: the resumed session is told nothing new, and its prefix holds.
    assert_eq!(
        catalogs(&requests[1]),
        catalogs(&requests[0]),
        "the catalog was repeated on resume"
    );
    assert!(extends(&requests[0].body, &requests[1].body));
    let third = catalogs(&requests[2]);
    assert_eq!(third.len(), 2, "{third:?}");
    assert!(third[1].contains("replaces every earlier one") && third[1].contains("`new-skill`"));
    assert!(extends(&requests[1].body, &requests[2].body));
    server.assert_no_violations();
}
