// The peer's way of showing history (agents-cli style): walk the runs directory, read and parse
// every run's metadata file, filter, sort newest first, keep a page. Used as the whole-process
// baseline by `cargo bench -p nightshiftctl --bench history`.
//   node benches/baseline/history.mjs RUNS_DIR [routine] [status]
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const [dir, routine, status] = process.argv.slice(2);
const found = [];
for (const r of readdirSync(dir)) {
  for (const run of readdirSync(join(dir, r))) {
    const meta = JSON.parse(readFileSync(join(dir, r, run, "meta.json"), "utf8"));
    if ((!routine || meta.routine === routine) && (!status || meta.status === status)) found.push(meta);
  }
}
found.sort((a, b) => (a.started_at < b.started_at ? 1 : -1));
console.log(JSON.stringify(found.slice(0, 50)));
