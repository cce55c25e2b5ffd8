//! Code Mode through the real host against the fake DeepSeek server: the model is offered
//! `run_code` alone (`DSH_TOOLS_MODE=code`) or beside the native tools (`both`); a program's
//! `tools.*` calls go through the pipeline (a deny rule refuses one, and what it would have
//! done is not done), ten reads run as one batch with `Promise.all`, each call is logged as a
//! `tool/code-dispatch` pair; bad programs come back as tool results naming what went wrong
//! while the session goes on; a cancelled turn stops a program waiting on a command and one
//! spinning in JavaScript. Measured (printed): the engine's start and peak memory per run, and
//! ten reads in one program against ten native calls.

use std::time::{Duration, Instant};

use dsh_tests::events::of_type;
use dsh_tests::fake_deepseek::{FakeDeepSeek, RecordedRequest, Reply};
use dsh_tests::headless;
use dsh_tests::sessions::{PLAIN_STORE, stored_logs};
use dsh_tests::web::{Web, WebHost};
use dsh_tests::{Output, TestDir};
use serde_json::{Value, json};

/// A `run_code` call of `code`.
fn program(id: &str, code: &str) -> Reply {
    let arguments = json!({"code": code, "description": "test program"}).to_string();
    Reply::tool_calls(&[(id, "run_code", &arguments)])
}

/// The tool names a request offered.
fn offered(request: &RecordedRequest) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

/// A headless stream-json run in mode `mode` with `rows` patched in and `task`.
fn run(server: &FakeDeepSeek, dir: &TestDir, mode: &str, rows: &str, task: &str) -> Output {
    headless::against_patched(
        server,
        dir,
        rows,
        &["--output", "stream-json", task],
        &[
            ("DSH_TOOLS_MODE", mode),
            ("DSH_PERMISSION_MODE", "danger-full-access"),
        ],
    )
}

/// The `tool/result` events' texts and error flags, in order.
fn results(events: &[Value]) -> Vec<(String, bool)> {
    of_type(events, "tool/result")
        .iter()
        .map(|event| {
            let block = &event["data"]["message"]["content"][0];
            (
                block["content"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                block["isError"] == true,
            )
        })
        .collect()
}

const TEN_READS: &str = "\
const names = Array.from({ length: 10 }, (_, i) => `f${i + 1}.txt`);
const reads = await Promise.all(names.map((file_path) => tools.read({ file_path })));
console.log(reads.map((read) => read.lines[0].text).join(','));
const echo = await tools.bash({ command: 'echo CODE_OK', description: 'echo' });
let denied = 'not refused';
try {
  await tools.bash({ command: 'rm f1.txt', description: 'remove' });
} catch (error) {
  denied = `${error.name} ${error.toolName}: ${error.message}`;
}
const began = Date.now();
await Promise.all([1, 2, 3].map(() => tools.bash({ command: 'sleep 1', description: 'wait' })));
return { echo: echo.stdout.text.trim(), denied, parallelMs: Date.now() - began };";

fn ten_files(dir: &TestDir) {
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    for n in 1..=10 {
        std::fs::write(work.join(format!("f{n}.txt")), format!("line {n}\n")).unwrap();
    }
}

#[test]
fn a_program_offered_alone_calls_the_tools_through_the_pipeline() {
    let dir = TestDir::new("code-mode-pipeline");
    ten_files(&dir);
    std::fs::create_dir_all(dir.home()).unwrap();
    std::fs::write(
        dir.home().join("settings.yaml"),
        "permissions:\n  deny: [\"bash(rm *)\"]\n",
    )
    .unwrap();
    let server = FakeDeepSeek::start(vec![program("call_code", TEN_READS), Reply::text("done")]);
    let out = run(&server, &dir, "code", "", "read the files");
    assert_eq!(out.code, Some(0), "{out:?}");
    server.assert_no_violations();
    let requests = server.requests();
    assert_eq!(
        offered(&requests[0]),
        ["run_code"],
        "code mode offers run_code alone"
    );
    // The prompt declares what a program can call.
    let system = requests[0].body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(system.contains("declare const tools: {"), "{system}");
    assert!(
        system.contains("  read(args: { file_path: string;"),
        "{system}"
    );
    assert!(
        system.contains("  bash(args: { command: string;"),
        "{system}"
    );
    assert!(!system.contains("run_code(args"), "{system}");
    let declared = system.len() - system.find("# Code Mode tools").unwrap_or(system.len());
    println!("code mode: the tool declarations add {declared} bytes to the system prompt");
    let answer = &requests[1].tool_texts()[0];
    let lines: Vec<String> = (1..=10).map(|n| format!("line {n}")).collect();
    assert!(answer.starts_with(&lines.join(",")), "{answer}");
    assert!(answer.contains("\"echo\": \"CODE_OK\""), "{answer}");
    assert!(
        answer.contains("\"denied\": \"ToolCallError bash: tools.bash: "),
        "{answer}"
    );
    // The rule refused it before it ran.
    assert!(dir.join("work/f1.txt").exists());

    let (events, _) = headless::stream_json(&out.stdout);
    let calls = of_type(&events, "tool/call");
    assert_eq!(calls.len(), 1, "sub-calls are not model calls: {calls:?}");
    let starts = of_type(&events, "tool/code-dispatch-start");
    let settled = of_type(&events, "tool/code-dispatch");
    let ids: Vec<String> = (1..=15).map(|n| format!("call_code:code:{n}")).collect();
    let sub_ids = |events: &[&Value]| -> Vec<String> {
        events
            .iter()
            .map(|event| event["data"]["subCallId"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(sub_ids(&starts), ids);
    assert_eq!(sub_ids(&settled), ids);
    assert_eq!(settled[10]["data"]["content"][0]["text"], "CODE_OK\n");
    assert_eq!(settled[11]["data"]["isError"], true, "{}", settled[11]);
    assert_eq!(settled[11]["data"]["parentCallId"], "call_code");
    assert_eq!(starts[11]["data"]["arguments"]["command"], "rm f1.txt");
    // Promise.all: three one-second commands overlapped.
    let parallel: u64 = answer
        .split("\"parallelMs\": ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|ms| ms.parse().ok())
        .unwrap_or_else(|| panic!("{answer}"));
    println!("code mode: three `sleep 1` calls with Promise.all took {parallel} ms");
    assert!(
        parallel < 2500,
        "the calls ran one after another: {parallel} ms"
    );
    let logged = of_type(&events, "tool/result");
    let meta = &logged[0]["data"]["meta"];
    println!(
        "code mode: engine start {} us, peak engine memory {} bytes, {} calls",
        meta["engineStartMicros"], meta["enginePeakBytes"], meta["calls"]
    );
    let number = |value: &Value| value.as_f64().unwrap_or(f64::NAN);
    dsh_tests::figure(
        "run_code_engine_start",
        number(&meta["engineStartMicros"]) / 1000.0,
        "ms",
    );
    dsh_tests::figure(
        "run_code_engine_peak",
        number(&meta["enginePeakBytes"]) / 1024.0,
        "KiB",
    );
    assert_eq!(meta["calls"], 15);
}

/// The `code` preset registers `run_code` in its own scope and hides what the scope inherits:
/// its session is offered `run_code` alone while the process stays in native mode, and its
/// program still reaches the profile's tools.
#[test]
fn the_code_preset_offers_run_code_alone_and_its_programs_reach_the_tools() {
    let dir = TestDir::new("code-mode-preset");
    ten_files(&dir);
    let code = "const read = await tools.read({ file_path: 'f3.txt' });\n\
        const echo = await tools.bash({ command: 'echo PRESET_OK', description: 'echo' });\n\
        return `${read.lines[0].text} ${echo.stdout.text.trim()}`;";
    let server = FakeDeepSeek::start(vec![program("call_code", code), Reply::text("done")]);
    let out = headless::against_patched(
        &server,
        &dir,
        "",
        &["--preset", "code", "--output", "stream-json", "read a file"],
        &[
            ("DSH_TOOLS_MODE", "native"),
            ("DSH_PERMISSION_MODE", "danger-full-access"),
        ],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let requests = server.requests();
    assert_eq!(offered(&requests[0]), ["run_code"]);
    assert_eq!(requests[1].tool_texts()[0], "line 3 PRESET_OK");
}

#[test]
fn both_mode_offers_run_code_beside_the_native_tools() {
    let dir = TestDir::new("code-mode-both");
    let server = FakeDeepSeek::start(vec![Reply::text("hello")]);
    let out = run(&server, &dir, "both", "", "say hello");
    assert_eq!(out.code, Some(0), "{out:?}");
    let tools = offered(&server.requests()[0]);
    for name in ["run_code", "bash", "read", "write"] {
        assert!(tools.iter().any(|tool| tool == name), "{name}: {tools:?}");
    }
    let dir = TestDir::new("code-mode-native");
    let server = FakeDeepSeek::start(vec![Reply::text("hello")]);
    let out = run(&server, &dir, "native", "", "say hello");
    assert_eq!(out.code, Some(0), "{out:?}");
    let tools = offered(&server.requests()[0]);
    assert!(!tools.iter().any(|tool| tool == "run_code"), "{tools:?}");
    let system = &server.requests()[0].body["messages"][0]["content"];
    assert!(!system.to_string().contains("Code Mode tools"), "{system}");
    assert!(tools.iter().any(|tool| tool == "bash"), "{tools:?}");
}

/// Each bad program is a tool result saying what went wrong, and the session goes on to its
/// next step and ends normally.
#[test]
fn bad_programs_are_results_naming_the_problem_and_the_session_goes_on() {
    let dir = TestDir::new("code-mode-bad");
    let cases: [(&str, &str); 8] = [
        (
            "return (;",
            "code run failed (syntax): the program does not parse: SyntaxError",
        ),
        (
            "for (;;) {}",
            "code run failed (time limit): the program ran past its time limit of 2000 ms",
        ),
        (
            "const a = []; for (;;) a.push('x'.repeat(1 << 20) + a.length);",
            "code run failed (memory limit): the program ran out of its 32 MiB memory limit",
        ),
        (
            "console.log('before'); throw new Error('boom');",
            "code run failed (thrown): Error: boom",
        ),
        // Deep recursion stops at the engine's stack limit, inside the host's thread's stack.
        (
            "const f = (n) => f(n + 1) + 1; f(0);",
            "code run failed (thrown): RangeError: Maximum call stack size exceeded",
        ),
        (
            "await tools.nope({});",
            "ReferenceError: tools.nope: there is no tool `nope`; the tools are: ",
        ),
        ("await tools.read({});", "ToolCallError: tools.read: "),
        (
            "await tools.read('a.txt');",
            "TypeError: tools.read: call it with one arguments object",
        ),
    ];
    let mut script: Vec<Reply> = cases
        .iter()
        .enumerate()
        .map(|(n, (code, _))| program(&format!("call_{n}"), code))
        .collect();
    script.push(Reply::text("still here"));
    let server = FakeDeepSeek::start(script);
    let rows = "- id: tool-run-code\n  config:\n    mode: code\n    timeLimitMs: 2000\n    memoryLimitBytes: 33554432\n";
    let began = Instant::now();
    let out = run(&server, &dir, "code", rows, "try the programs");
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(began.elapsed() < Duration::from_secs(60));
    let (events, result) = headless::stream_json(&out.stdout);
    let results = results(&events);
    assert_eq!(results.len(), cases.len(), "{results:?}");
    for ((code, expected), (text, is_error)) in cases.iter().zip(&results) {
        assert!(is_error, "{code}: {text}");
        assert!(text.contains(expected), "{code}:\n{text}");
    }
    assert!(
        results[3].0.ends_with("Captured output:\nbefore"),
        "{}",
        results[3].0
    );
    // The schema's complaint names the missing argument.
    assert!(results[6].0.contains("file_path"), "{}", results[6].0);
    assert_eq!(result["output"], "still here", "{result}");
}

/// Cancelling the turn stops a program waiting on a long command (the command is stopped too,
/// and its sub-call still settles in the log) and one spinning in JavaScript.
#[test]
fn a_cancelled_turn_stops_the_program() {
    let dir = TestDir::new("code-mode-cancel");
    let waiting = "await tools.bash({ command: 'sleep 30; echo late', description: 'wait' }); return 'finished';";
    let spinning = "await tools.bash({ command: 'true', description: 'warm up' }); for (;;) {}";
    // A cancelled turn asks the model nothing more: each prompt takes one reply.
    let server = FakeDeepSeek::start(vec![
        program("call_wait", waiting),
        program("call_spin", spinning),
    ]);
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let layer = format!(
        "- id: llm-deepseek\n  config:\n    baseURL: {}\n{PLAIN_STORE}",
        server.url()
    );
    let mut web = Web::from(WebHost::start(
        &dir,
        &layer,
        &["--cwd", work.to_str().unwrap()],
        &[
            ("DEEPSEEK_API_KEY", "sk-test"),
            ("DSH_TOOLS_MODE", "code"),
            ("DSH_PERMISSION_MODE", "danger-full-access"),
        ],
    ));
    let (session, mut socket) = web.followed_session();
    for (call, text) in [("call_wait", "wait"), ("call_spin", "spin")] {
        web.prompt(&session, text);
        // The program is running once its first sub-call started.
        let started = wait_for(&dir, |events| {
            events.iter().any(|event| {
                event["type"] == "tool/code-dispatch-start" && event["data"]["parentCallId"] == call
            })
        });
        assert!(started, "{call} never started a sub-call");
        std::thread::sleep(Duration::from_millis(300));
        let cancelled = Instant::now();
        web.call("session.cancel", &json!({"sessionId": session}));
        socket.until(100, |frame| {
            frame["type"] == "host/session-status"
                && frame["sessionId"] == session
                && frame["running"] == false
        });
        let took = cancelled.elapsed();
        println!("code mode: `{text}` stopped {took:?} after the cancel");
        assert!(took < Duration::from_secs(10), "{text}: {took:?}");
    }
    let logs = stored_logs(&dir.home());
    let events = &logs[0].1;
    let texts = results(events);
    assert_eq!(texts.len(), 2, "{texts:?}");
    // The pipeline answers a cancelled call as aborted; the program stopped meanwhile.
    for (text, is_error) in &texts {
        assert!(is_error, "{text}");
        assert!(text.contains("tool call aborted"), "{text}");
    }
    // The long command's sub-call settled inside its run, as aborted.
    let settled = of_type(events, "tool/code-dispatch");
    assert_eq!(settled[0]["data"]["subCallId"], "call_wait:code:1");
    assert_eq!(settled[0]["data"]["isError"], true, "{}", settled[0]);
    let ends: Vec<String> = of_type(events, "turn/end")
        .into_iter()
        .map(|event| {
            event["data"]["reason"]["kind"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert_eq!(ends, ["aborted", "aborted"]);
    drop(socket);
    assert_eq!(web.host.stop(), Some(0));
}

/// Polls the stored log until `ready` holds (15 s at most).
fn wait_for(dir: &TestDir, ready: impl Fn(&[Value]) -> bool) -> bool {
    let until = Instant::now() + Duration::from_secs(15);
    while Instant::now() < until {
        if stored_logs(&dir.home())
            .iter()
            .any(|(_, events)| ready(events))
        {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// Measured, not asserted beyond success: ten reads in one program against ten native calls
/// (one per step), in wall time, requests and bytes sent to the model.
#[test]
fn ten_reads_in_one_program_against_ten_native_calls() {
    let code_dir = TestDir::new("code-mode-measure-code");
    ten_files(&code_dir);
    let reads = "const names = Array.from({ length: 10 }, (_, i) => `f${i + 1}.txt`);\n\
        const reads = await Promise.all(names.map((file_path) => tools.read({ file_path })));\n\
        return reads.map((read) => read.lines[0].text).join(',');";
    let server = FakeDeepSeek::start(vec![program("call_code", reads), Reply::text("done")]);
    let began = Instant::now();
    let out = run(&server, &code_dir, "code", "", "read the files");
    let code_time = began.elapsed();
    assert_eq!(out.code, Some(0), "{out:?}");
    let code = (server.requests().len(), sent_bytes(&server.requests()));

    let native_dir = TestDir::new("code-mode-measure-native");
    ten_files(&native_dir);
    let arguments: Vec<Value> = (1..=10)
        .map(|n| json!({"file_path": format!("f{n}.txt")}))
        .collect();
    let server = FakeDeepSeek::start(Reply::one_call_per_step(
        arguments.iter().map(|arguments| ("read", arguments)),
        "done",
    ));
    let began = Instant::now();
    let out = run(&server, &native_dir, "native", "", "read the files");
    let native_time = began.elapsed();
    assert_eq!(out.code, Some(0), "{out:?}");
    let native = (server.requests().len(), sent_bytes(&server.requests()));
    println!(
        "ten reads: code mode {code_time:?}, {} requests, {} bytes sent; native {native_time:?}, {} requests, {} bytes sent",
        code.0, code.1, native.0, native.1
    );
    let ms = |time: Duration| time.as_secs_f64() * 1000.0;
    dsh_tests::figure("ten_reads_code_wall", ms(code_time), "ms");
    dsh_tests::figure("ten_reads_native_wall", ms(native_time), "ms");
    dsh_tests::figure("ten_reads_code_requests", code.0 as f64, "requests");
    dsh_tests::figure("ten_reads_native_requests", native.0 as f64, "requests");
    dsh_tests::figure("ten_reads_code_sent", code.1 as f64 / 1024.0, "KiB");
    dsh_tests::figure("ten_reads_native_sent", native.1 as f64 / 1024.0, "KiB");
}

fn sent_bytes(requests: &[RecordedRequest]) -> usize {
    requests
        .iter()
        .map(|request| request.body.to_string().len())
        .sum()
}
