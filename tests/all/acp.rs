//! The ACP agent (`dsh-host --profile acp`) through the real host: the reference's recorded
//! cases in automation mode (`recorded`), editor mode against the fake DeepSeek server
//! (`editor`), what a client can get wrong and how the connection ends (`bad_input`), and ACP
//! clients from npm, the official SDK's and acpx (`clients`).

mod attached;
mod attached_context;
mod bad_input;
mod client_fs;
mod client_terminal;
mod clients;
mod editor;
mod mcp;
mod recorded;

#[test]
fn recorded_acp_cases_reproduce_their_transcripts_and_logs() {
    dsh_tests::needs_corpus!("recorded_acp_cases_reproduce_their_transcripts_and_logs");
    let tally = recorded::run_all();
    let listed = |cases: &[(String, String)]| -> String {
        cases
            .iter()
            .map(|(case, reason)| format!("{case}: {reason}"))
            .collect::<Vec<_>>()
            .join("; ")
    };
    eprintln!(
        "ACP recorded cases: {} reproduced, {} skipped ({})",
        tally.reproduced.len(),
        tally.skipped.len() + tally.differ.len(),
        listed(
            &[
                tally.skipped.clone(),
                tally
                    .differ
                    .iter()
                    .map(|(case, what)| (case.clone(), format!("runs, but differs: {what}")))
                    .collect()
            ]
            .concat()
        )
    );
    assert!(
        tally.now_reproduced.is_empty(),
        "listed as differing but reproduced now (take them off KNOWN_DIFFERENCES): {:?}",
        tally.now_reproduced
    );
    assert!(
        tally.failed.is_empty(),
        "{} recorded cases differ:\n\n{}",
        tally.failed.len(),
        tally.failed.join("\n\n")
    );
}
