#!/usr/bin/env python3
"""Writes the function order of `start-order.txt` (see `cc` beside this file): the functions of the
workspace's own binaries and libraries that a start and a turn execute, found by running the
release build under callgrind.

Three runs, each in a fresh home: the headless runner doing a 5-step turn (a shell call of `true`
per step, then DONE) against the fake model at --server, the web profile started on a free
loopback port and stopped once it serves its page, and a start from a `--config` file of grouped
rows with isolated services, stopped once they are all ready. Every function callgrind saw run in
a file under --bin is listed once, by its mangled name, sorted (so a new profile's diff shows what
changed).

Usage: profile_start.py --bin target/release --server fake_server.py --out start-order.txt
"""

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

TIMEOUT = 600


def start_fake_model(server, scratch):
    port_file = os.path.join(scratch, "port")
    process = subprocess.Popen(
        [sys.executable, server, "--port", "0", "--port-file", port_file, "--max-seconds", str(TIMEOUT)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 10
    while time.time() < deadline:
        if os.path.exists(port_file) and open(port_file).read().strip():
            return process, open(port_file).read().strip()
        time.sleep(0.05)
    process.kill()
    sys.exit("profile_start: the fake model did not say its port")


def callgrind(out):
    return ["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={out}", "--dump-instr=no"]


def headless(bin_dir, server, scratch, out):
    model, port = start_fake_model(server, scratch)
    try:
        work = os.path.join(scratch, "work")
        os.makedirs(work, exist_ok=True)
        env = dict(
            os.environ,
            DSH_HOME=os.path.join(scratch, "home-headless"),
            DEEPSEEK_API_KEY="profile",
            DEEPSEEK_BASE_URL=f"http://127.0.0.1:{port}",
            DSH_PERMISSION_MODE="danger-full-access",
        )
        host = [os.path.join(bin_dir, "dsh-host"), "--profile", "headless", "--cwd", work, "run bash true"]
        for prefix in ([], callgrind(out)):
            # The first run creates the profile and the home, as a user's first start does.
            urllib.request.urlopen(f"http://127.0.0.1:{port}/_bench/reset?run=profile&steps=5").read()
            done = subprocess.run(prefix + host, env=env, capture_output=True, text=True, timeout=TIMEOUT)
            if done.returncode != 0:
                sys.exit(f"profile_start: the headless run exited {done.returncode}: {done.stderr[-2000:]}")
    finally:
        model.kill()


def web(bin_dir, scratch, out):
    env = dict(os.environ, DSH_HOME=os.path.join(scratch, "home-web"))
    host = [os.path.join(bin_dir, "dsh-host"), "--profile", "web", "--", "--port", "0", "--no-open"]
    process = subprocess.Popen(callgrind(out) + host, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        deadline = time.time() + TIMEOUT
        url = None
        while url is None and time.time() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            found = re.search(r"http://127\.0\.0\.1:\d+/\S*", line)
            url = found and found.group(0)
        if url is None:
            sys.exit("profile_start: the web profile did not say where it serves")
        # The printed address signs the browser in (a cookie) and sends it on to the page.
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        browser.open(url, timeout=TIMEOUT).read()
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=TIMEOUT)


def composed(bin_dir, scratch, out, pairs=10):
    """A start from a `--config` file, as an integrator composes one: groups of two rows, each
    group isolating the service its provider gives its consumer (the runtime bench's plugins),
    with the log filtered by DSH_LOG. Stopped once every consumer has said it is ready."""
    rows = "".join(
        f"- id: pair-{index}\n  group: true\n  isolate:\n    svc: true\n  config:\n"
        f"    - id: provider-{index}\n      name: bench-plugin/provider\n"
        f"    - id: consumer-{index}\n      name: bench-consumer\n      inject: [svc]\n"
        f"      config:\n        announce: true\n"
        for index in range(pairs)
    )
    config = os.path.join(scratch, "composed.yml")
    with open(config, "w") as file:
        file.write(rows)
    home = os.path.join(scratch, "home-composed")
    os.makedirs(home, exist_ok=True)
    env = dict(os.environ, DSH_HOME=home, DSH_LOG="warn")
    # Absolute: the host starts in its home, where a relative --bin would not resolve.
    host = [os.path.join(os.path.abspath(bin_dir), "dsh-host"), "--config", config, "--no-watch"]
    process = subprocess.Popen(callgrind(out) + host, cwd=home, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        ready = 0
        while ready < pairs:
            line = process.stdout.readline()
            if not line:
                sys.exit("profile_start: the composed start ended before its consumers were ready")
            ready += "ready" in line
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=TIMEOUT)


def executed(profile, bin_dir):
    """The mangled names of the functions that ran in files under bin_dir."""
    objects, functions, names = {}, {}, set()
    current = None
    root = os.path.realpath(bin_dir) + os.sep
    for line in open(profile, errors="replace"):
        line = line.rstrip("\n")
        found = re.match(r"^(c?ob)=\((\d+)\)(?: (.*))?$", line)
        if found:
            kind, key, name = found.groups()
            if name:
                objects[key] = name
            if kind == "ob":
                current = objects.get(key)
            continue
        found = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line)
        if found:
            kind, key, name = found.groups()
            if name:
                functions[key] = name
            if kind == "fn" and current and os.path.realpath(current).startswith(root):
                name = functions[key]
                if not name.startswith("0x"):
                    names.add(name)
    return names


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--server", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dsh-start-order-") as scratch:
        profiles = [os.path.join(scratch, f"{run}.out") for run in ("headless", "web", "composed")]
        headless(args.bin, args.server, scratch, profiles[0])
        web(args.bin, scratch, profiles[1])
        composed(args.bin, scratch, profiles[2])
        names = set()
        for profile in profiles:
            names |= executed(profile, args.bin)
    with open(args.out, "w") as out:
        out.write("".join(f"{name}\n" for name in sorted(names)))
    print(f"profile_start: {len(names)} functions written to {args.out}")


if __name__ == "__main__":
    main()
