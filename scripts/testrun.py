#!/usr/bin/python3
"""Runs Nightshift's test binaries the way scripts/test.sh needs: in a chosen order, each in a fresh
private D-Bus session with its own gnome-keyring (and, per pass, a fresh Xvfb), each with a bound,
every failure collected — never stopping at the first failing binary — and a summary that names
each failing test (crate, binary, test) and where its log and artifacts are.

  testrun.py plan < cargo-messages.json > plan.json
      the test binaries `cargo test --no-run --message-format=json` built
  testrun.py run PLAN RESULTS [--packages a,b] [--not-packages a] [--targets t] [--not-targets t]
                 [--repeat N] [-- TEST-ARGS…]
      run the selected binaries (N passes), appending what happened to RESULTS (JSON lines)
  testrun.py record RESULTS STEP EXIT-CODE
      a step that is not a test binary (the package build, a benchmark smoke run)
  testrun.py summary RESULTS
      what passed and failed; exit 1 when anything failed

A pass is started with its own X server only when DISPLAY is not set already.
"""

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARTIFACTS = os.environ.get("NIGHTSHIFT_ARTIFACTS", os.path.join(ROOT, "tests", "artifacts"))
LOGS = os.path.join(ARTIFACTS, "logs")
# One binary's bound: the slowest (the real-app UI tests) take a few minutes (and bound each app
# session themselves); a hang is cut here and reported — the tests still running named, the stacks
# of its threads kept — instead of holding CI until its own limit.
BINARY_TIMEOUT = int(os.environ.get("NIGHTSHIFT_TEST_TIMEOUT", "900"))
TEST_LINE = re.compile(r"^test (\S+) \.\.\. (ok|FAILED|ignored)")
KEYRING = (
    "printf %s ci-keyring-pw | gnome-keyring-daemon --unlock --components=secrets >/dev/null 2>&1 || true; "
    "gnome-keyring-daemon --start --components=secrets >/dev/null 2>&1 || true; "
    'exec "$@"'
)


def plan():
    """The test binaries from cargo's JSON messages, in the order they are run."""
    binaries = []
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("reason") != "compiler-artifact" or not msg.get("executable") or not msg.get("profile", {}).get("test"):
            continue
        target = msg["target"]
        package = msg["package_id"]
        # "path+file:///…/crates/core#nightshift-core@0.1.0" or "… #0.1.0" (the name from the path)
        name = re.search(r"#([^@]+)@", package)
        name = name.group(1) if name else os.path.basename(package.split("#")[0])
        binaries.append({
            "package": name,
            "target": target["name"],
            "kind": target["kind"][0],
            "src": os.path.relpath(target["src_path"], ROOT),
            "executable": msg["executable"],
            "dir": os.path.dirname(msg["manifest_path"]),
        })
    # Unit tests of a package before its integration tests; packages in the order given.
    order = {"lib": 0, "bin": 1, "test": 2}
    binaries.sort(key=lambda b: (b["package"], order.get(b["kind"], 3), b["target"]))
    json.dump(binaries, sys.stdout, indent=1)


def label(b):
    return f"{b['package']} · {b['src']}"


def start_xvfb(tmp):
    for n in range(90, 160):
        if os.path.exists(f"/tmp/.X11-unix/X{n}") or os.path.exists(f"/tmp/.X{n}-lock"):
            continue
        log = open(os.path.join(tmp, "xvfb.log"), "w")
        proc = subprocess.Popen(["Xvfb", f":{n}", "-screen", "0", "1280x800x24", "-nolisten", "tcp"], stdout=log, stderr=log)
        env = dict(os.environ, DISPLAY=f":{n}")
        for _ in range(100):
            if subprocess.run(["xdpyinfo"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
                return proc, f":{n}"
            if proc.poll() is not None:
                break
            time.sleep(0.1)
        proc.kill()
    sys.exit("error: Xvfb did not start (is the xvfb package installed?)")


def run_binary(b, rep, reps, test_args, display, results):
    """Run one binary in its own D-Bus session and keyring; record each test's outcome."""
    name = f"{b['package']}-{b['target']}" + (f"-{rep}" if reps > 1 else "")
    log_path = os.path.join(LOGS, f"{name}.log")
    with tempfile.TemporaryDirectory(prefix="nightshift-bus.") as tmp:
        xdg_data, xdg_run = os.path.join(tmp, "data"), os.path.join(tmp, "run")
        os.makedirs(xdg_data)
        os.makedirs(xdg_run, mode=0o700)
        env = dict(os.environ, XDG_DATA_HOME=xdg_data, XDG_RUNTIME_DIR=xdg_run, CARGO_MANIFEST_DIR=b["dir"], CARGO_PKG_NAME=b["package"])
        if display:
            env["DISPLAY"] = display
        cmd = ["dbus-run-session", "--", "sh", "-c", KEYRING, "sh", b["executable"], *test_args]
        print(f"\n==> {label(b)}" + (f" (pass {rep}/{reps})" if reps > 1 else ""), flush=True)
        started = time.monotonic()
        outcomes = {}
        listed = subprocess.run([b["executable"], "--list", "--format", "terse", *[a for a in test_args if not a.startswith("-")]], cwd=b["dir"], env=env, capture_output=True, text=True)
        names = [l[: -len(": test")] for l in listed.stdout.splitlines() if l.endswith(": test")]
        os.makedirs(os.path.dirname(log_path), exist_ok=True)
        with open(log_path, "w") as log:
            proc = subprocess.Popen(cmd, cwd=b["dir"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, text=True, errors="replace")
            timer = Timer(proc, BINARY_TIMEOUT, b["executable"], log_path + ".stacks")
            for line in proc.stdout:
                sys.stdout.write(line)
                log.write(line)
                m = TEST_LINE.match(line)
                if m:
                    outcomes[m.group(1)] = m.group(2)
            code = proc.wait()
            timer.cancel()
    secs = round(time.monotonic() - started, 1)
    for test, outcome in outcomes.items():
        results.write(json.dumps({"package": b["package"], "src": b["src"], "test": test, "outcome": outcome, "rep": rep, "log": log_path}) + "\n")
    failed_tests = [t for t, o in outcomes.items() if o == "FAILED"]
    if code != 0 and not failed_tests:
        still = [n for n in names if n not in outcomes]
        why = (f"timed out after {BINARY_TIMEOUT} s; still running: {', '.join(still) or 'none'}; its threads' stacks: {os.path.relpath(timer.stacks, ROOT)}") if timer.fired else f"exited with {code} without a failing test (a crash, or a panic outside a test)"
        results.write(json.dumps({"package": b["package"], "src": b["src"], "test": None, "outcome": "FAILED", "why": why, "rep": rep, "log": log_path}) + "\n")
        print(f"error: {label(b)} {why}; its output is in {log_path}", flush=True)
    results.flush()
    print(f"    ({secs} s, log: {os.path.relpath(log_path, ROOT)})", flush=True)


class Timer:
    """Ends a binary's whole process group once it has run for `secs` — first writing the stacks
    of the test binary's threads (gdb) to `stacks`, so a hang says where it hangs."""

    def __init__(self, proc, secs, executable, stacks):
        import threading
        self.fired = False
        self.proc = proc
        self.executable = os.path.realpath(executable)
        self.stacks = stacks
        self.t = threading.Timer(secs, self.fire)
        self.t.daemon = True
        self.t.start()

    def dump_stacks(self):
        with open(self.stacks, "w") as out:
            for pid in os.listdir("/proc"):
                try:
                    if not pid.isdigit() or os.getpgid(int(pid)) != self.proc.pid or os.path.realpath(f"/proc/{pid}/exe") != self.executable:
                        continue
                    out.write(f"== pid {pid}\n")
                    out.flush()
                    subprocess.run(["gdb", "-p", pid, "-batch", "-ex", "thread apply all bt"], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=120)
                except (OSError, subprocess.SubprocessError) as e:
                    out.write(f"(no stacks of {pid}: {e})\n")

    def fire(self):
        self.fired = True
        self.dump_stacks()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            time.sleep(5)

    def cancel(self):
        self.t.cancel()


def pick(binaries, opts):
    def listed(key):
        v = opts.get(key)
        return set(v.split(",")) if v else None
    pk, npk, tg, ntg = listed("packages"), listed("not-packages"), listed("targets"), listed("not-targets")
    out = []
    for b in binaries:
        if pk is not None and b["package"] not in pk:
            continue
        if npk is not None and b["package"] in npk:
            continue
        if tg is not None and b["target"] not in tg:
            continue
        if ntg is not None and b["target"] in ntg:
            continue
        out.append(b)
    return out


def run(argv):
    plan_path, results_path, rest = argv[0], argv[1], argv[2:]
    opts, test_args = {}, []
    while rest:
        a = rest.pop(0)
        if a == "--":
            test_args = rest
            break
        opts[a.lstrip("-")] = rest.pop(0)
    reps = int(opts.get("repeat", "1"))
    with open(plan_path) as f:
        binaries = pick(json.load(f), opts)
    os.makedirs(LOGS, exist_ok=True)
    with open(results_path, "a") as results:
        for rep in range(1, reps + 1):
            with tempfile.TemporaryDirectory(prefix="nightshift-x.") as tmp:
                xvfb, display = (None, os.environ.get("DISPLAY")) if os.environ.get("DISPLAY") else start_xvfb(tmp)
                try:
                    for b in binaries:
                        run_binary(b, rep, reps, test_args, display, results)
                finally:
                    if xvfb:
                        xvfb.terminate()
                        xvfb.wait()


def record(argv):
    results_path, step, code = argv
    with open(results_path, "a") as results:
        results.write(json.dumps({"package": "-", "src": step, "test": None, "outcome": "ok" if code == "0" else "FAILED", "why": f"exited with {code}", "rep": 1, "log": None}) + "\n")


def summary(argv):
    rows = []
    if os.path.exists(argv[0]):
        with open(argv[0]) as f:
            rows = [json.loads(l) for l in f if l.strip()]
    tests = [r for r in rows if r["test"] is not None]
    steps = [r for r in rows if r["test"] is None]
    passed = sum(1 for r in tests if r["outcome"] == "ok")
    failed = [r for r in tests if r["outcome"] == "FAILED"]
    ignored = sum(1 for r in tests if r["outcome"] == "ignored")
    broken = [r for r in steps if r["outcome"] == "FAILED"]
    reps = max([r["rep"] for r in rows] or [1])
    print("\n==> summary")
    if reps > 1:
        counts = {}
        for r in tests:
            key = (r["package"], r["src"], r["test"])
            ok, n = counts.get(key, (0, 0))
            counts[key] = (ok + (r["outcome"] == "ok"), n + 1)
        for (package, src, test), (ok, n) in sorted(counts.items()):
            print(f"  {ok}/{n} passed  {package} · {src} · {test}")
    if failed or broken:
        print("failed:")
        for r in failed:
            print(f"  {r['package']} · {r['src']} · {r['test']}" + (f" (pass {r['rep']})" if reps > 1 else ""))
            print(f"      log: {os.path.relpath(r['log'], ROOT)}")
        for r in broken:
            print(f"  {r['package']} · {r['src']}: {r['why']}" + (f" (pass {r['rep']})" if reps > 1 else ""))
            if r["log"]:
                print(f"      log: {os.path.relpath(r['log'], ROOT)}")
        print(f"  screenshots and the apps' logs of failed waits: {os.path.relpath(ARTIFACTS, ROOT)}/")
    print(f"{passed} passed, {len(failed) + len(broken)} failed, {ignored} skipped")
    sys.exit(1 if failed or broken or not tests and not steps else 0)


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"plan": lambda a: plan(), "run": run, "record": record, "summary": summary}[cmd](args)
