"""The ACP client side of `acp_bench.py` (stdlib only): an agent process spoken to over ACP v1
(newline-delimited JSON-RPC 2.0 on its stdin and stdout), its frames read by a thread and
time-stamped as they arrive, the requests it makes of the client answered (permissions allowed,
anything else refused), the summed RSS of its process tree sampled, and its end reaped with
wait4 (exact exit time and the CPU time of it and the children it reaped)."""

import ctypes
import json
import os
import signal
import subprocess
import threading
import time

PAGE = os.sysconf("SC_PAGE_SIZE")
SAMPLE_S = 0.02
# How long an agent may take to exit once its stdin is closed before its group is ended
# (ours exits at once; the peers keep running until signalled). Not part of any figure.
EOF_GRACE_S = 2


class Failed(Exception):
    """A run (or the fake model) that did not do what it must, in words for the report."""


# ------------------------------------------------------------ process tree ---
def children(pid):
    out = []
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for tid in tasks:
        try:
            with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                out.extend(int(x) for x in f.read().split())
        except (OSError, ValueError):
            pass
    return out


def resident(pid):
    try:
        with open("/proc/%d/statm" % pid) as f:
            return int(f.read().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


try:
    _LIBC = ctypes.CDLL(None, use_errno=True)
    _KCMP = {"x86_64": 312, "aarch64": 272}.get(os.uname().machine)
except OSError:
    _LIBC, _KCMP = None, None


def shares_memory(a, b):
    """A vfork child shares its parent's address space until it execs: count it once."""
    if _LIBC is None or _KCMP is None:
        return False
    return _LIBC.syscall(_KCMP, a, b, 1, 0, 0) == 0  # KCMP_VM


class TreeRss(threading.Thread):
    """The peak of the summed RSS of `root` and its descendants."""

    def __init__(self, root):
        super().__init__(daemon=True)
        self.root, self.peak, self.done = root, 0, threading.Event()

    def run(self):
        while not self.done.is_set():
            total, todo = 0, [(self.root, None)]
            while todo:
                pid, parent = todo.pop()
                if parent is None or not shares_memory(pid, parent):
                    total += resident(pid)
                todo.extend((child, pid) for child in children(pid))
            self.peak = max(self.peak, total)
            self.done.wait(SAMPLE_S)

    def stop(self):
        self.done.set()
        self.join(2)
        return self.peak / (1024 * 1024)


# --------------------------------------------------------------- ACP client ---
class Connection:
    """One agent process spoken to over ACP; its frames read by a thread and time-stamped."""

    def __init__(self, argv, env, cwd, errors):
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=errors,
                                     start_new_session=True)
        self.rss = TreeRss(self.proc.pid)
        self.rss.start()
        self.frames, self.noise, self.permissions = [], 0, 0
        self.cond, self.write_lock, self.next_id = threading.Condition(), threading.Lock(), 0
        threading.Thread(target=self._read, daemon=True).start()

    def _send(self, message):
        line = (json.dumps(message) + "\n").encode()
        with self.write_lock:
            try:
                self.proc.stdin.write(line)
                self.proc.stdin.flush()
            except (BrokenPipeError, ValueError):
                pass

    def _read(self):
        for raw in self.proc.stdout:
            now = time.monotonic()
            try:
                frame = json.loads(raw)
            except ValueError:
                with self.cond:
                    self.noise += 1
                continue
            if isinstance(frame, dict) and "method" in frame and "id" in frame:
                self._answer(frame)
            with self.cond:
                self.frames.append((now, frame))
                self.cond.notify_all()
        with self.cond:
            self.frames.append((time.monotonic(), None))  # end of stdout
            self.cond.notify_all()

    def _answer(self, request):
        """The agent asks the client something: allow permissions, refuse the rest."""
        if request["method"] == "session/request_permission":
            options = request.get("params", {}).get("options") or []
            allow = [o for o in options if o.get("kind") == "allow_once"] + \
                [o for o in options if str(o.get("kind", "")).startswith("allow")] + options
            with self.cond:
                self.permissions += 1
            if allow:
                self._send({"jsonrpc": "2.0", "id": request["id"], "result": {
                    "outcome": {"outcome": "selected", "optionId": allow[0]["optionId"]}}})
                return
        self._send({"jsonrpc": "2.0", "id": request["id"], "error": {
            "code": -32601, "message": "not offered by this client: %s" % request["method"]}})

    def request(self, method, params):
        self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id, time.monotonic()

    def wait(self, what, timeout, test, start=0):
        """The first frame from index `start` that passes `test`: (time, frame, index)."""
        deadline = time.monotonic() + timeout
        with self.cond:
            index = start
            while True:
                while index < len(self.frames):
                    at, frame = self.frames[index]
                    if frame is None:
                        raise Failed("the agent closed stdout waiting for %s (exit %s)"
                                     % (what, self.proc.poll()))
                    if test(frame):
                        return at, frame, index
                    index += 1
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Failed("no %s within %d s" % (what, timeout))
                self.cond.wait(left)

    def response(self, ident, what, timeout):
        at, frame, _ = self.wait(what, timeout, lambda f: f.get("id") == ident and
                                 "method" not in f)
        if "error" in frame:
            raise Failed("%s answered an error: %s" % (what, json.dumps(frame["error"])[:300]))
        return at, frame["result"]

    def dump(self, path):
        """The frames as received, each with its time since the spawn (ms)."""
        with self.cond, open(path, "w") as f:
            for at, frame in self.frames:
                f.write(json.dumps({"ms": round((at - self.t0) * 1000.0, 3),
                                    "frame": frame}) + "\n")

    def close(self):
        """Closes stdin and reaps the agent (its group signalled if it does not exit by
        itself): its tree's RSS peak (MiB) and the CPU time of it and the children it reaped."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        _, cpu_ms, signalled = reap(self.proc, EOF_GRACE_S)
        ended = {"rss_mib": self.rss.stop()}
        if not signalled:  # signalled, it may not have reaped its children: CPU unknown
            ended["cpu_ms"] = cpu_ms
        return ended


def reap(proc, timeout):
    """Blocks in wait4 until `proc` exits (`Popen.wait(timeout)` polls in sleeps of up to
    50 ms, which would quantize the wall figures); past `timeout` its group gets SIGTERM, 3 s
    later SIGKILL. Then whatever it left in its group is killed, as it would take CPU from the
    next run. (exit code, CPU ms of it and its reaped descendants, whether it was signalled)."""
    done, signalled = threading.Event(), []

    def stop():
        for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 3)):
            if done.wait(wait):
                return
            signalled.append(sig)
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                return

    threading.Thread(target=stop, daemon=True).start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        done.set()
    proc.returncode = os.waitstatus_to_exitcode(status)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    return proc.returncode, (usage.ru_utime + usage.ru_stime) * 1000.0, bool(signalled)
