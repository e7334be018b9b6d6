// The peer's way of settling a finished run (agents-cli style): read the whole log, parse every
// line as JSON, keep the last `result` event. Used as the whole-process baseline by
// `cargo bench -p nightshiftctl --bench settle`.
//   node benches/baseline/parse-log.mjs path/to/stdout.log
import { readFileSync } from "node:fs";

let result = null;
for (const line of readFileSync(process.argv[2], "utf8").split("\n")) {
  if (!line) continue;
  try {
    const event = JSON.parse(line);
    if (event.type === "result") result = event;
  } catch {
    // not JSON: skip, as the peer does
  }
}
console.log(JSON.stringify({ completed: result?.subtype === "success", report: result?.result ?? null }));
