//! Undo from the page, in a real Chromium (`tests/web/undo.mjs`; screenshots under
//! `target/screenshots/undo-*`): "Rewind to here" on a prompt, confirmed, reverts that turn's
//! file and the page says so; on an earlier prompt whose file a person changed since, it is
//! refused naming the file and nothing is touched.

use dsh_tests::fake_deepseek::Reply;
use serde_json::json;

#[test]
fn rewind_to_here_on_a_prompt_reverts_its_turn_and_the_page_says_so() {
    let write =
        |path: &str, content: &str| json!({"file_path": path, "content": content}).to_string();
    let (mine, notes) = (write("mine.txt", "agent\n"), write("notes.txt", "notes\n"));
    let Some((_, dir)) = crate::browser::scenario_in(
        "undo",
        vec![
            Reply::tool_calls(&[("call_1", "write", &mine)]),
            Reply::text("Wrote mine.txt."),
            Reply::tool_calls(&[("call_2", "write", &notes)]),
            Reply::text("Wrote notes.txt."),
        ],
        "",
        &[("DEEPSEEK_API_KEY", "sk-test")],
        &[],
        &[],
    ) else {
        return;
    };
    let work = dir.join("work");
    assert!(
        !work.join("notes.txt").exists(),
        "the rewound turn's file is gone"
    );
    // The refused rewind left the person's edit as it was.
    assert_eq!(
        std::fs::read_to_string(work.join("mine.txt"))
            .ok()
            .as_deref(),
        Some("a person's edit\n")
    );
}
