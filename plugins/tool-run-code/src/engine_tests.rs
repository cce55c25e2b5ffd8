//! The engine alone: what a program's slices come to, without a host.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use super::{Answer, Engine, EngineError, Finish, Limits};

const LIMITS: Limits = Limits {
    memory_bytes: 16 << 20,
    stack_bytes: 256 << 10,
    output_bytes: 1000,
};

fn start(code: &str) -> Result<Engine, EngineError> {
    let names = vec!["read".to_owned(), "bash".to_owned()];
    let deadline = Instant::now() + Duration::from_secs(2);
    Engine::start(
        code,
        &names,
        LIMITS,
        Arc::new(AtomicBool::new(false)),
        deadline,
    )
}

#[test]
fn prints_and_returns() {
    let engine = start("console.log('a', 1, {b: 2}); return {x: [1]};").unwrap();
    assert_eq!(
        engine.finished(),
        Some(Finish::Returned(Some(
            "{\n  \"x\": [\n    1\n  ]\n}".to_owned()
        )))
    );
    assert_eq!(engine.logs().0, vec!["a 1 {\"b\":2}"]);
    assert!(
        engine.start < Duration::from_millis(200),
        "{:?}",
        engine.start
    );
}

#[test]
fn tool_calls_wait_for_their_answers_and_run_together() {
    let mut engine = start(
        "const [a, b] = await Promise.all([tools.read({file_path: 'a'}), tools.bash({command: 'x'})]);\
         try { await tools.read({file_path: 'c'}); } catch (e) { return `${a.t}${b.t} ${e.name} ${e.toolName} ${e.message}`; }",
    )
    .unwrap();
    let first = engine.take_requests();
    assert_eq!(first.len(), 2);
    assert_eq!(first[0].name, "read");
    assert_eq!(first[0].arguments, "{\"file_path\":\"a\"}");
    assert_eq!(engine.finished(), None);
    engine
        .settle(first[1].id, Answer::Value("{\"t\":\"B\"}".to_owned()))
        .unwrap();
    engine
        .settle(first[0].id, Answer::Value("{\"t\":\"A\"}".to_owned()))
        .unwrap();
    let second = engine.take_requests();
    assert_eq!(second.len(), 1);
    engine
        .settle(second[0].id, Answer::Failed("denied by a rule".to_owned()))
        .unwrap();
    assert_eq!(
        engine.finished(),
        Some(Finish::Returned(Some(
            "AB ToolCallError read tools.read: denied by a rule".to_owned()
        )))
    );
}

#[test]
fn bad_programs_are_named() {
    assert!(
        matches!(start("return (;"), Err(EngineError::Syntax(message)) if message.contains("SyntaxError"))
    );
    assert!(matches!(
        start("for (;;) {}"),
        Err(EngineError::Interrupted)
    ));
    let bomb = start("const a = []; for (;;) a.push('x'.repeat(1 << 20) + a.length);");
    // QuickJS throws an allocation failure like an error: out of the program's promise, or
    // out of the engine when it cannot even make one.
    match bomb {
        Err(error) => assert!(matches!(error, EngineError::OutOfMemory), "{error:?}"),
        Ok(engine) => assert!(
            matches!(engine.finished(), Some(Finish::Threw(text)) if text.starts_with("InternalError: out of memory")),
            "{:?}",
            engine.finished()
        ),
    }
    let deep = start("const f = (n) => f(n + 1) + 1; f(0);").unwrap();
    assert!(
        matches!(deep.finished(), Some(Finish::Threw(text)) if text.contains("stack")),
        "{:?}",
        deep.finished()
    );
    let thrown = start("throw new Error('boom')").unwrap();
    assert!(
        matches!(thrown.finished(), Some(Finish::Threw(text)) if text.starts_with("Error: boom"))
    );
    let unknown = start("await tools.nope({})").unwrap();
    assert!(
        matches!(unknown.finished(), Some(Finish::Threw(text)) if text.contains("there is no tool `nope`; the tools are: read, bash")),
        "{:?}",
        unknown.finished()
    );
    let bad_args = start("await tools.read('a.txt')").unwrap();
    assert!(
        matches!(bad_args.finished(), Some(Finish::Threw(text)) if text.starts_with("TypeError: tools.read: call it with one arguments object"))
    );
}

#[test]
fn output_is_capped() {
    let engine = start("for (let i = 0; i < 1000; i++) console.log('0123456789');").unwrap();
    let (logs, truncated) = engine.logs();
    assert!(truncated);
    assert!(logs.iter().map(|line| line.len() + 1).sum::<usize>() <= 1001);
}
