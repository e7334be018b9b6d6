// Nightshift's run wrapper inside the job: starts the agent (or the command) the way the
// dispatch's `call` says, with the account's credential from the repository secret, and frames
// every line it prints so Nightshift can read the agent's own output back from the job's log:
// `ns|o|` a line of its stdout, `ns|e|` of its stderr, `ns|x|` its exit code, `ns|m|` the name
// of the secret that is missing (nothing was started). Workflow commands
// are off while it runs (an agent's `::set-output …` is text, never a command).
const { spawn } = require("child_process");
const crypto = require("crypto");
const path = require("path");
const readline = require("readline");

const call = JSON.parse(process.env.NIGHTSHIFT_CALL || "{}");
const secret = process.env.NIGHTSHIFT_SECRET || "";
const secretName = process.env.NIGHTSHIFT_SECRET_NAME || "";
for (const name of ["NIGHTSHIFT_CALL", "NIGHTSHIFT_SECRET", "NIGHTSHIFT_SECRET_NAME"]) delete process.env[name];

const resume = crypto.randomBytes(16).toString("hex");
console.log("::stop-commands::" + resume);
const say = (kind, line) => process.stdout.write("ns|" + kind + "|" + line + "\n");

const env = Object.assign({}, process.env, call.env || {});
for (const name of call.secret_vars || []) env[name] = secret;
const cwd = path.resolve(process.env.GITHUB_WORKSPACE || ".", call.cwd || ".");
let ended = false;
const end = (code) => {
  if (ended) return;
  ended = true;
  say("x", String(code));
  console.log("::" + resume + "::");
  process.exit(code === 0 ? 0 : 1);
};
// The account's secret is not on the repository (or is empty): nothing is started, and
// Nightshift says which secret and how to write it (`ns|m|NAME`).
if ((call.secret_vars || []).length > 0 && secret === "") {
  say("m", secretName);
  end(78);
}

const child = spawn(call.argv[0], call.argv.slice(1), { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
child.on("error", (e) => {
  say("e", "nightshift: could not start " + call.argv[0] + ": " + e.message);
  end(127);
});
const streams = [
  [child.stdout, "o"],
  [child.stderr, "e"],
].map(([stream, kind]) => new Promise((done) => {
  readline.createInterface({ input: stream, crlfDelay: Infinity }).on("line", (line) => say(kind, line)).on("close", done);
}));
child.on("exit", (code, signal) => {
  const signals = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };
  Promise.all(streams).then(() => end(code !== null ? code : 128 + (signals[signal] || 15)));
});
for (const sig of ["SIGTERM", "SIGINT"]) process.on(sig, () => child.kill(sig));
