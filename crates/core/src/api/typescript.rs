//! The window's TypeScript types (`ui/lib/types.d.ts`), generated with ts-rs from the engine's own
//! types: every command's arguments and answer (declared once, in `api::commands!`) and every event
//! the window hears. The file is checked in; a test fails when it is stale
//! (`NIGHTSHIFT_BLESS=1 cargo test -p nightshift-core typescript` writes it again), and the app's
//! tests type-check the window's code against it (`tests/ui_types.rs`) — so the window cannot read
//! a field, send an argument or match an event the engine does not have.

use std::any::TypeId;
use std::collections::{BTreeMap, HashSet};
use ts_rs::{Config, TypeVisitor, TS};

/// Every type the commands and events name, declared once each, by name.
#[derive(Default)]
pub(crate) struct Declarations {
    seen: HashSet<TypeId>,
    by_name: BTreeMap<String, String>,
}

impl Declarations {
    /// Declare `T` if it is a named type, and everything it names.
    pub(crate) fn add<T: TS + 'static + ?Sized>(&mut self, cfg: &Config) {
        Visitor { cfg, types: self }.visit::<T>();
    }

    /// Declare what `T` names, not `T` itself (it is written inline: a command's arguments).
    pub(crate) fn add_named_by<T: TS + 'static + ?Sized>(&mut self, cfg: &Config) {
        let mut visitor = Visitor { cfg, types: self };
        T::visit_dependencies(&mut visitor);
        T::visit_generics(&mut visitor);
    }
}

struct Visitor<'a> {
    cfg: &'a Config,
    types: &'a mut Declarations,
}

impl TypeVisitor for Visitor<'_> {
    fn visit<T: TS + 'static + ?Sized>(&mut self) {
        if !self.types.seen.insert(TypeId::of::<T>()) {
            return;
        }
        if T::output_path().is_some() {
            let docs = T::docs().map(|d| format!("{}\n", d.trim_end())).unwrap_or_default();
            let decl = format!("{docs}export {}", T::decl(self.cfg));
            // Two engine types of one name would be one TypeScript type: say so, never pick one.
            if let Some(other) = self.types.by_name.insert(T::ident(self.cfg), decl.clone()) {
                assert_eq!(other, decl, "two types are named {} in TypeScript: rename one with #[ts(rename)]", T::ident(self.cfg));
            }
        }
        T::visit_dependencies(self);
        T::visit_generics(self);
    }
}

/// `ui/lib/types.d.ts`, as it must read.
pub(crate) fn declarations() -> String {
    // Numbers travel as JSON numbers (serde), never as strings or BigInts.
    let cfg = Config::new().with_large_int("number");
    let mut types = Declarations::default();
    let commands = crate::api::command_types(&cfg, &mut types);
    types.add::<crate::events::EngineEvent>(&cfg);
    let mut out = String::from(
        "// Generated from the engine's types (crates/core/src/view/typescript.rs) — do not edit: a test fails when\n\
         // this file and the engine disagree; `NIGHTSHIFT_BLESS=1 cargo test -p nightshift-core typescript` writes it again.\n\n",
    );
    for decl in types.by_name.values() {
        out.push_str(decl);
        out.push_str("\n\n");
    }
    out.push_str("/** Every window command: the arguments it takes and what it answers (`call` in lib/api.js). */\nexport interface Commands {\n");
    out.push_str(&commands.join("\n"));
    out.push_str(
        "\n}\n\n/** What the window hears on its one event channel: the engine's events, and the app's own two —\n \
         * `engine_state` (read the engine's state again) and `resync` (events were lost: read everything again);\n \
         * with `home`, another home's (`[[homes]]`), relayed — and `home_state` when one comes or goes. */\n\
         export type WindowEvent = (EngineEvent | { type: \"engine_state\" } | { type: \"resync\" } | { type: \"home_state\", reachable: boolean }) & { home?: string };\n",
    );
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_windows_types_file_is_current() {
        crate::view::assert_generated_file_is_current("ui/lib/types.d.ts", &super::declarations(), "typescript");
    }

    #[test]
    fn commands_name_their_answers_and_optional_arguments_may_be_left_out() {
        let ts = super::declarations();
        assert!(ts.contains("  get_run: { args: { id: string, }; answer: RunDetail };"), "{ts}");
        assert!(ts.contains("list_runs: { args: { routine?: string, "), "{ts}");
        assert!(ts.contains("export type RunStatus = "), "the statuses are a union of their words");
    }
}
