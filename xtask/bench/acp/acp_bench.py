#!/usr/bin/env python3
"""ACP agents side by side against one instant fake model (stdlib only).

A small Agent Client Protocol client (protocol version 1, newline-delimited JSON-RPC 2.0 on
the agent's stdin and stdout) that drives each agent the way an editor does and times it:

  ours             dsh-host --patch P --profile acp (P points the llm-deepseek row at the
                   fake server)
  ours-headless    dsh-host --patch P --profile headless --cwd WORK TASK: not ACP, the
                   reference our ACP step is held to (within 10%)
  codex-acp        @zed-industries/codex-acp as npm installs it (a node launcher that starts
                   the platform binary), CODEX_HOME/config.toml with a `fake` provider
                   (Responses wire)
  codex-acp-native the platform binary of the same package, started directly (how editors
                   that download the release run it)
  claude-code-acp  @zed-industries/claude-code-acp (node; it runs Claude Code through the
                   Agent SDK), ANTHROPIC_BASE_URL at the fake server

The model is `fake_server.py` of agents-bench, run where it is: it answers a request that
offers a shell tool with one call running `true` until the request carries N tool results
(N = `BENCH_STEPS=N` in the task), then the text DONE. Each run is a fresh process in a fresh,
empty work dir (the agent's home is kept across its runs; what a run leaves in its process
group is killed), and every other round takes the agents in reverse order; per round and
agent:

  k=0   spawn, `initialize`, `session/new`, one prompt answered at once (BENCH_STEPS=0):
        process start to `initialize` answered, to `session/new` answered (ready), and
        `session/prompt` sent to the first `agent_message_chunk` of the model's answer
  k=1   the same with a one-step task       } per-step overhead through ACP: the prompt's
  k=N   the same with an N-step task        } time to its answer, (N - 1) - (1), / (N - 1);
                                              server-side: the arrival of the request with
                                              1 tool result to the one with N, / (N - 1)

Ours-headless runs k=1 and k=N the same way, timed from spawn to exit. CPU per step is the
same difference of the CPU time (user + system, from wait4) of the agent and the children it
reaped: steadier than wall time on a loaded machine, and left out for an agent that does not
exit when its stdin closes (it is signalled, and what its children used may be lost with
them). Instructions per step, ours only and where valgrind is installed: after the rounds,
ours and ours-headless each run an N-step and a 5N-step task under callgrind (the agent
process, not its children), and the difference of their counts over 4N steps is the figure
that does not depend on what else the machine is doing. The peak RSS of the
agent's process tree (its own process and every descendant, sampled every 20 ms, an address
space shared with a vfork child counted once) is the largest of the round's runs. A
`session/request_permission` is answered with the first allow option (and counted); none
should come, as each agent runs in its no-approval mode (ours `danger-full-access`, codex-acp
`approval_policy = "never"` from its config, claude-code-acp's session switched to
`bypassPermissions` after `session/new`, outside the ready figure). An agent
that cannot be driven (executable missing, `session/new` refused for a login, a run failing
in the warm-up) is skipped and the reason printed.

usage: acp_bench.py --server FAKE_SERVER_PY --dsh-host DSH_HOST [--peers DIR]
                    [--agents LIST] [--runs 5] [--steps 20] [--tmp DIR] [--timeout 120]

stdout, for `cargo xtask bench`: `acp.AGENT.FIGURE VALUE UNIT` lines (medians over the
successful runs), `runs AGENT OK TOTAL`, `skip AGENT REASON...` (`skip instructions
REASON...` where they cannot be counted), `version AGENT TEXT...`;
progress and diagnostics go to stderr. The ACP client itself (frames, permissions, the
process tree's RSS, the reaping) is `acp_client.py` beside this file.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

from acp_client import Connection, Failed, TreeRss, reap

PROMPT = "Run the shell command `true`, once per step, then answer DONE. BENCH_STEPS=%d"
ACP_AGENTS = ("ours", "codex-acp", "codex-acp-native", "claude-code-acp")


def log(text):
    print(text, file=sys.stderr, flush=True)


# ------------------------------------------------------------------ agents ---
CODEX_TOML = """model = "fake-model"
model_provider = "fake"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.fake]
name = "fake"
base_url = "http://127.0.0.1:%d/v1"
env_key = "FAKE_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[otel]
exporter = "none"
"""


def native_codex(peers):
    machine = {"x86_64": "x64", "aarch64": "arm64"}.get(os.uname().machine, "unknown")
    return os.path.join(peers, "node_modules", "@zed-industries",
                        "codex-acp-linux-" + machine, "bin", "codex-acp")


def agent_command(agent, opts, home, work, port, steps):
    """(argv, extra env) of one run of `agent` in `work`."""
    if agent in ("ours", "ours-headless"):
        patch = os.path.join(home, "fake.patch.yml")
        with open(patch, "w") as f:
            f.write("- id: llm-deepseek\n  config:\n    baseURL: http://127.0.0.1:%d\n" % port)
        env = {"DSH_HOME": os.path.join(home, "dsh"), "DEEPSEEK_API_KEY": "bench",
               "DSH_PERMISSION_MODE": "danger-full-access"}
        if agent == "ours":
            return [opts.dsh_host, "--patch", patch, "--profile", "acp"], env
        return [opts.dsh_host, "--patch", patch, "--profile", "headless", "--cwd", work,
                PROMPT % steps], env
    if agent in ("codex-acp", "codex-acp-native"):
        codex_home = os.path.join(home, "codex")
        os.makedirs(codex_home, exist_ok=True)
        with open(os.path.join(codex_home, "config.toml"), "w") as f:
            f.write(CODEX_TOML % port)
        exe = (os.path.join(opts.peers, "node_modules", ".bin", "codex-acp")
               if agent == "codex-acp" else native_codex(opts.peers))
        return [exe], {"CODEX_HOME": codex_home, "FAKE_API_KEY": "bench"}
    if agent == "claude-code-acp":
        os.makedirs(os.path.join(home, ".claude"), exist_ok=True)
        exe = os.path.join(opts.peers, "node_modules", ".bin", "claude-code-acp")
        return [exe], {
            "CLAUDE_CONFIG_DIR": os.path.join(home, ".claude"),
            "ANTHROPIC_BASE_URL": "http://127.0.0.1:%d" % port,
            "ANTHROPIC_API_KEY": "sk-ant-bench",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1",
            # As root, Claude Code bypasses permissions only inside a declared sandbox.
            "IS_SANDBOX": "1"}
    raise ValueError("unknown agent `%s` (known: ours, ours-headless, %s)"
                     % (agent, ", ".join(ACP_AGENTS[1:])))


def base_env(home):
    return {"PATH": os.environ.get("PATH", os.defpath), "HOME": home,
            "LANG": os.environ.get("LANG", "C.UTF-8"), "TERM": "dumb",
            "USER": os.environ.get("USER", "bench"), "SHELL": "/bin/bash"}


def missing_executable(agent, opts):
    exe = {"ours": opts.dsh_host, "ours-headless": opts.dsh_host,
           "codex-acp": os.path.join(opts.peers, "node_modules", ".bin", "codex-acp"),
           "codex-acp-native": native_codex(opts.peers),
           "claude-code-acp": os.path.join(opts.peers, "node_modules", ".bin",
                                           "claude-code-acp")}.get(agent)
    if exe is None:
        return "unknown agent (known: ours, ours-headless, %s)" % ", ".join(ACP_AGENTS[1:])
    if not os.access(exe, os.X_OK):
        return "no executable at %s (not installed, or no build for %s/%s)" % (
            exe, sys.platform, os.uname().machine)
    return None


# ------------------------------------------------------------------- server ---
class FakeModel:
    def __init__(self, script, out):
        port_file = os.path.join(out, "port")
        if os.path.exists(port_file):  # a run before this one left it
            os.remove(port_file)
        self.errors = open(os.path.join(out, "server.err"), "w")
        # Its stdout is not ours: whoever reads this driver's stdout must see it end with it.
        self.proc = subprocess.Popen(
            [sys.executable, script, "--port", "0", "--port-file", port_file,
             "--max-seconds", "3600", "--keep-bodies", "50"], stdout=subprocess.DEVNULL,
            stderr=self.errors)
        for _ in range(200):
            if os.path.exists(port_file) and os.path.getsize(port_file) > 0:
                break
            time.sleep(0.05)
        try:
            with open(port_file) as f:
                self.port = int(f.read())
        except (OSError, ValueError):
            self.proc.kill()
            raise Failed("the fake model did not start within 10 s (see server.err)") from None

    def get(self, path):
        url = "http://127.0.0.1:%d%s" % (self.port, path)
        with urllib.request.urlopen(url, timeout=10) as answer:
            return json.loads(answer.read())

    def stop(self):
        try:
            self.get("/_bench/stop")
            self.proc.wait(5)
        except Exception:  # noqa: BLE001 (it is stopped either way)
            self.proc.kill()
        self.errors.close()


def server_step_ms(records, steps):
    """Arrival of the request carrying 1 tool result to the one carrying `steps`, per step."""
    def first(results):
        return next((r["t"] for r in records
                     if r.get("method") == "POST" and r.get("tool") and
                     r.get("results") == results), None)
    one, last = first(1), first(steps)
    if one is None or last is None or steps < 2:
        return None
    return (last - one) * 1000.0 / (steps - 1)


def saw_all_results(records, steps):
    return any(r.get("method") == "POST" and r.get("results") == steps for r in records)


def is_answer_chunk(frame):
    """An `agent_message_chunk` carrying the model's answer (DONE): the fake model's text,
    not a notice of the agent's own (codex-acp tells of the unknown model's metadata in one)."""
    if frame.get("method") != "session/update":
        return False
    update = frame.get("params", {}).get("update", {})
    if update.get("sessionUpdate") != "agent_message_chunk":
        return False
    content = update.get("content")
    return isinstance(content, dict) and "DONE" in str(content.get("text", ""))


def counted(argv, out):
    """`argv` under callgrind, which writes the instructions the process itself ran (its
    children are not followed) to `out`."""
    if out is None:
        return argv
    return ["valgrind", "-q", "--tool=callgrind", "--callgrind-out-file=" + out,
            "--trace-children=no"] + argv


def instructions(out):
    """The instruction count callgrind wrote to `out`."""
    with open(out) as f:
        for line in f:
            if line.startswith("summary:"):
                return int(line.split()[1])
    raise Failed("callgrind wrote no summary to %s" % out)


def acp_run(agent, opts, home, work, server, steps, errors, frames, count=None):
    """One process: initialize, session/new, one prompt of `steps` steps. Its figures."""
    argv, extra = agent_command(agent, opts, home, work, server.port, steps)
    argv = counted(argv, count)
    env = base_env(home)
    env.update(extra)
    conn = Connection(argv, env, work, errors)
    try:
        ident, _ = conn.request("initialize", {
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False},
                                   "terminal": False},
            "clientInfo": {"name": "dsh-acp-bench", "version": "1"}})
        t_init, init = conn.response(ident, "the initialize answer", opts.timeout)
        if init.get("protocolVersion") != 1:
            raise Failed("initialize answered protocol version %r" % init.get("protocolVersion"))
        ident, _ = conn.request("session/new", {"cwd": work, "mcpServers": []})
        t_ready, session = conn.response(ident, "the session/new answer", opts.timeout)
        session_id = session["sessionId"]
        # The peers' own "no approvals" mode, as ours runs in danger-full-access.
        modes = [m.get("id") for m in (session.get("modes") or {}).get("availableModes", [])]
        if "bypassPermissions" in modes:
            ident, _ = conn.request("session/set_mode", {"sessionId": session_id,
                                                         "modeId": "bypassPermissions"})
            conn.response(ident, "the session/set_mode answer", opts.timeout)
        mark = len(conn.frames)
        ident, t_prompt = conn.request("session/prompt", {
            "sessionId": session_id, "prompt": [{"type": "text", "text": PROMPT % steps}]})
        t_chunk, _, _ = conn.wait("the answer's agent_message_chunk", opts.timeout,
                                  is_answer_chunk, mark)
        t_answer, answer = conn.response(ident, "the session/prompt answer", opts.timeout)
        if answer.get("stopReason") != "end_turn":
            raise Failed("the prompt stopped with %r" % answer.get("stopReason"))
        figures = {"init_ms": (t_init - conn.t0) * 1000.0,
                   "ready_ms": (t_ready - conn.t0) * 1000.0,
                   "first_chunk_ms": (t_chunk - t_prompt) * 1000.0,
                   "prompt_ms": (t_answer - t_prompt) * 1000.0,
                   "permissions": float(conn.permissions), "stdout_noise": float(conn.noise),
                   "version": "%s %s" % ((init.get("agentInfo") or {}).get("name", "?"),
                                         (init.get("agentInfo") or {}).get("version", "?"))}
    finally:
        ended = conn.close()
        conn.dump(frames)
    figures.update(ended)
    return figures


def headless_run(opts, home, work, server, steps, errors, count=None):
    """Ours without ACP: spawn to exit of `dsh-host --profile headless`."""
    argv, extra = agent_command("ours-headless", opts, home, work, server.port, steps)
    argv = counted(argv, count)
    env = base_env(home)
    env.update(extra)
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, env=env, cwd=work, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=errors, start_new_session=True)
    rss = TreeRss(proc.pid)
    rss.start()
    code, cpu_ms, signalled = reap(proc, opts.timeout)
    wall = (time.monotonic() - t0) * 1000.0
    peak = rss.stop()
    if signalled:
        raise Failed("the headless run took more than %d s" % opts.timeout)
    if code != 0:
        raise Failed("the headless run exited %d" % code)
    return {"prompt_ms": wall, "rss_mib": peak, "cpu_ms": cpu_ms}


# -------------------------------------------------------------------- runner ---
def one(agent, opts, server, steps, label, homes, count=None):
    """A run in a fresh work dir, checked against the server's record. Figures or Failed.
    With `count`, the agent runs under callgrind, which writes its instructions there."""
    server.get("/_bench/reset?run=%s" % label)
    work = tempfile.mkdtemp(prefix="work-", dir=opts.tmp)
    errors_path = os.path.join(opts.out, "%s.err" % label)
    try:
        with open(errors_path, "w") as errors:
            if agent == "ours-headless":
                figures = headless_run(opts, homes[agent], work, server, steps, errors, count)
            else:
                figures = acp_run(agent, opts, homes[agent], work, server, steps, errors,
                                  os.path.join(opts.out, "%s.frames.jsonl" % label), count)
    except Failed as failure:
        raise Failed("%s (stderr: %s)" % (failure, tail(errors_path))) from None
    except (OSError, LookupError, TypeError, AttributeError) as error:
        # An answer not shaped as ACP says (no sessionId...), or a process that cannot start.
        raise Failed("unexpected %r (stderr: %s)" % (error, tail(errors_path))) from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    records = server.get("/_bench/log")
    if steps and not saw_all_results(records, steps):
        raise Failed("the model never saw %d tool results (stderr: %s)"
                     % (steps, tail(errors_path)))
    if steps > 1:
        figures["server_step_ms"] = server_step_ms(records, steps)
    return figures


def tail(path):
    try:
        with open(path, errors="replace") as f:
            lines = [line.strip() for line in f.read().splitlines() if line.strip()]
    except OSError:
        return "-"
    return " | ".join(lines[-3:])[-400:] or "empty"


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def emit(agent, name, value, unit):
    if value is not None:
        print("acp.%s.%s %.3f %s" % (agent, name, value, unit), flush=True)


def bench(opts):
    os.makedirs(opts.tmp, exist_ok=True)
    server, homes = FakeModel(opts.server, opts.out), {}
    try:
        run_all(opts, server, homes)
    finally:
        server.stop()
        if not opts.keep:
            for home in homes.values():
                shutil.rmtree(home, ignore_errors=True)


def run_all(opts, server, homes):
    skipped = {}
    agents = [a for a in opts.agents.split(",") if a]
    for agent in agents:
        reason = missing_executable(agent, opts)
        if reason is None:
            homes[agent] = tempfile.mkdtemp(prefix="home-%s-" % agent, dir=opts.tmp)
            kind = [opts.steps] if agent == "ours-headless" else [0, opts.steps]
            try:  # warm-up, uncounted: also where an agent that cannot be driven shows it
                for steps in kind:
                    one(agent, opts, server, steps, "warmup-%s-%d" % (agent, steps), homes)
            except Failed as failure:
                reason = "the warm-up run failed: %s" % failure
        if reason is not None:
            skipped[agent] = reason
            print("skip %s %s" % (agent, reason.replace("\n", " ")), flush=True)
            log("acp-bench: skipping %s: %s" % (agent, reason))
    live = [a for a in agents if a not in skipped]
    samples = {a: [] for a in live}
    for rnd in range(opts.runs):
        # Every other round in reverse, so no agent always runs right after the same one.
        for agent in (live if rnd % 2 == 0 else live[::-1]):
            kinds = [1, opts.steps] if agent == "ours-headless" else [0, 1, opts.steps]
            got, failures = {}, []
            for steps in kinds:
                label = "r%d-%s-%d" % (rnd, agent, steps)
                try:
                    got[steps] = one(agent, opts, server, steps, label, homes)
                    log("acp-bench: %s: %s" % (label, " ".join(
                        "%s=%.1f" % (k, v) for k, v in sorted(got[steps].items())
                        if isinstance(v, float))))
                except Failed as failure:
                    failures.append("%s: %s" % (label, failure))
                    log("acp-bench: %s failed: %s" % (label, failure))
            samples[agent].append((got, failures))
            log("acp-bench: round %d %s: %s" % (rnd, agent, "ok" if not failures else
                                                "%d failed" % len(failures)))
    for agent in live:
        report(agent, samples[agent], opts.steps)
    count_instructions(opts, server, homes, [a for a in live if a.startswith("ours")])


def count_instructions(opts, server, homes, agents):
    """Our instructions per step, ACP and headless: steadier than CPU time on shared cores,
    where one run's start alone varies by milliseconds. Each agent runs a `--steps` task and
    one five times as long under callgrind (the agent process only); the start cancels out
    of the difference, and the long interval keeps what little of it varies small."""
    if not agents:
        return
    if shutil.which("valgrind") is None:
        print("skip instructions valgrind is not installed", flush=True)
        return
    long_task = opts.steps * 5
    for agent in agents:
        counts = {}
        try:
            for steps in (opts.steps, long_task):
                label = "count-%s-%d" % (agent, steps)
                out = os.path.join(opts.out, "%s.callgrind" % label)
                one(agent, opts, server, steps, label, homes, count=out)
                counts[steps] = instructions(out)
                log("acp-bench: %s: %d instructions" % (label, counts[steps]))
        except Failed as failure:
            log("acp-bench: counting %s failed: %s" % (agent, failure))
            continue
        emit(agent, "instr_step", (counts[long_task] - counts[opts.steps])
             / (long_task - opts.steps) / 1e6, "Minstr")


def report(agent, rounds, steps):
    """Medians over the successful runs of each figure."""
    ok = sum(1 for got, failures in rounds if not failures)
    print("runs %s %d %d" % (agent, ok, len(rounds)), flush=True)
    every = [fig for got, _ in rounds for fig in got.values()]
    versions = sorted({fig["version"] for fig in every if "version" in fig})
    if versions:
        print("version %s %s" % (agent, "; ".join(versions)), flush=True)
    for name in ("init_ms", "ready_ms"):
        emit(agent, name, median([fig.get(name) for fig in every]), "ms")
    emit(agent, "first_chunk_ms",
         median([got[0]["first_chunk_ms"] for got, _ in rounds if 0 in got]), "ms")
    emit(agent, "step_ms", median([
        (got[steps]["prompt_ms"] - got[1]["prompt_ms"]) / (steps - 1)
        for got, _ in rounds if 1 in got and steps in got]), "ms")
    emit(agent, "cpu_step_ms", median([
        (got[steps]["cpu_ms"] - got[1]["cpu_ms"]) / (steps - 1)
        for got, _ in rounds if "cpu_ms" in got.get(1, {}) and "cpu_ms" in got.get(steps, {})]),
        "ms")
    emit(agent, "server_step_ms",
         median([got[steps].get("server_step_ms") for got, _ in rounds if steps in got]), "ms")
    emit(agent, "rss_mib", median([max(fig["rss_mib"] for fig in got.values())
                                   for got, _ in rounds if got]), "MiB")
    emit(agent, "permissions_per_step", median([
        got[steps]["permissions"] / steps for got, _ in rounds
        if steps in got and "permissions" in got[steps]]), "requests")
    noise = sum(fig.get("stdout_noise", 0) for fig in every)
    if noise:
        emit(agent, "stdout_noise_lines", noise, "lines")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", required=True, help="agents-bench's fake_server.py")
    ap.add_argument("--dsh-host", required=True, help="our dsh-host (a release build)")
    ap.add_argument("--peers", default=".", help="where npm installed the ACP peers")
    ap.add_argument("--agents", default="ours-headless,ours,codex-acp,codex-acp-native,"
                                        "claude-code-acp")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per wait")
    ap.add_argument("--tmp", default=os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "dsh-acp-bench"), help="homes and work dirs (outside any project, where the agents "
                               "would read its AGENTS.md; not under the system temp dir, "
                               "where codex refuses to link its helpers)")
    ap.add_argument("--out", default=None,
                    help="each run's frames and stderr, and the server's stderr")
    ap.add_argument("--keep", action="store_true", help="keep the agents' homes")
    opts = ap.parse_args()
    if opts.steps < 2:
        ap.error("--steps must be at least 2")
    if not os.path.isfile(opts.server):
        print("skip all the fake model is missing: %s" % opts.server, flush=True)
        return 0
    opts.server, opts.dsh_host = os.path.abspath(opts.server), os.path.abspath(opts.dsh_host)
    opts.peers, opts.tmp = os.path.abspath(opts.peers), os.path.abspath(opts.tmp)
    opts.out = os.path.abspath(opts.out or tempfile.mkdtemp(prefix="out-", dir=opts.tmp))
    os.makedirs(opts.out, exist_ok=True)
    try:
        bench(opts)
    except Failed as failure:
        print("skip all %s" % failure, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
