//! The workflow a GitHub Actions host needs (`nightshiftctl hosts workflow NAME`): dispatched
//! once per run with the run's id and what to run, it installs the agent's CLI at the version
//! Nightshift is tested with (skipped when the runner has it already), runs it through a small
//! wrapper that frames every line it prints, and holds no secret: the account's credential comes
//! from the repository secret the dispatch names. Its text is a pure function of the host's
//! settings, so `hosts check` can tell whether the copy on the repository is current.

use crate::settings::ActionsHost;
use crate::words::Agent;

/// Bumped whenever the workflow's inputs or its wrapper change meaning: a copy that says another
/// version is out of date whatever else it says.
pub const WORKFLOW_VERSION: u32 = 1;

/// The wrapper the job runs the agent through (its framing is read by [`super::job_log`]).
const WRAPPER: &str = include_str!("wrapper.js");

/// The workflow file for `host`, as `nightshiftctl hosts workflow` prints it.
pub fn workflow(host: &ActionsHost) -> String {
    let runs_on = host.runs_on.iter().map(|l| yaml_string(l)).collect::<Vec<_>>().join(", ");
    let mut installs = String::new();
    for agent in Agent::CLIS {
        let driver = crate::agents::driver(*agent);
        let Some(package) = driver.npm_package() else { continue };
        installs.push_str(&format!(
            "      - name: Install {program} ({package})
        if: inputs.agent == '{agent}'
        env:
          PROGRAM: {program}
          PACKAGE: {package_yaml}
        run: |
          version=\"${{PACKAGE##*@}}\"
          if \"$PROGRAM\" --version 2>/dev/null | grep -qF \"$version\"; then
            echo \"$PROGRAM $version is installed on this runner\"
          else
            npm install --global --no-fund --no-audit \"$PACKAGE\"
          fi
",
            program = driver.program(),
            agent = agent.as_str(),
            package_yaml = yaml_string(package),
        ));
    }
    let wrapper: String = WRAPPER.lines().map(|l| if l.is_empty() { "\n".to_string() } else { format!("          {l}\n") }).collect();
    format!(
        "# Nightshift's workflow for its host \"{name}\" ({repo}): Nightshift dispatches it once per run
# placed there, follows it, and reads the agent's own output back from the job's log. Its
# schedule, retries, limits and history stay in Nightshift; this only does the work.
# Made by `nightshiftctl hosts workflow {name}`; `nightshiftctl hosts check {name}` says whether
# the copy on the repository is the one this Nightshift expects. Change it by making it again.
# nightshift-workflow: {version}
name: Nightshift
run-name: \"Nightshift run ${{{{ inputs.run_id }}}} (${{{{ inputs.dispatch }}}})\"
on:
  workflow_dispatch:
    inputs:
      run_id:
        description: \"The Nightshift run this is (in the run's name, so Nightshift finds it)\"
        required: true
        type: string
      dispatch:
        description: \"This try's key (in the run's name beside the run's id)\"
        required: true
        type: string
      agent:
        description: \"claude, codex, gemini, opencode, copilot or command\"
        required: true
        type: string
      call:
        description: \"What to run, as JSON: argv, env, cwd, secret_vars (never a secret)\"
        required: true
        type: string
      secret:
        description: \"The name of the secret holding the account's credential (empty: none)\"
        required: false
        type: string
        default: \"\"
      timeout_minutes:
        description: \"The job's limit in minutes: the routine's timeout and a margin\"
        required: true
        type: string
permissions:
  contents: read
concurrency:
  group: \"nightshift-${{{{ inputs.run_id }}}}-${{{{ inputs.dispatch }}}}\"
  cancel-in-progress: false
jobs:
  run:
    name: \"nightshift ${{{{ inputs.run_id }}}}\"
    runs-on: [{runs_on}]
    timeout-minutes: ${{{{ fromJSON(inputs.timeout_minutes) }}}}
    steps:
      - name: Check out {repo}
        uses: actions/checkout@v4
        with:
          persist-credentials: false
      - name: Set up Node.js
        uses: actions/setup-node@v4
        with:
          node-version: \"22\"
{installs}      - name: Run
        env:
          NIGHTSHIFT_CALL: ${{{{ inputs.call }}}}
          NIGHTSHIFT_SECRET: ${{{{ secrets[inputs.secret] }}}}
          NIGHTSHIFT_SECRET_NAME: ${{{{ inputs.secret }}}}
        run: |
          node - <<'NIGHTSHIFT_WRAPPER'
{wrapper}          NIGHTSHIFT_WRAPPER
",
        name = host.name,
        repo = host.repo,
        version = WORKFLOW_VERSION,
    )
}

/// A string as YAML reads it back exactly (a JSON string is a YAML flow scalar).
fn yaml_string(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// The version a workflow file says it is (`# nightshift-workflow: N`), if it says one.
pub fn version_of(text: &str) -> Option<u32> {
    text.lines().find_map(|l| l.trim().strip_prefix("# nightshift-workflow:")).and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> ActionsHost {
        ActionsHost { name: "ci".into(), repo: "acme/app".into(), runs_on: vec!["self-hosted".into(), "linux".into()], workflow: "nightshift.yml".into(), git_ref: None, start_timeout: std::time::Duration::from_secs(600) }
    }

    #[test]
    fn the_workflow_pins_each_agent_cli_and_holds_no_secret() {
        let text = workflow(&host());
        assert_eq!(version_of(&text), Some(WORKFLOW_VERSION));
        assert!(text.contains("runs-on: [\"self-hosted\", \"linux\"]"), "{text}");
        for agent in Agent::CLIS {
            let package = crate::agents::driver(*agent).npm_package().unwrap();
            assert!(text.contains(&format!("PACKAGE: \"{package}\"")), "{agent} pinned");
        }
        assert!(text.contains("NIGHTSHIFT_SECRET: ${{ secrets[inputs.secret] }}"));
        // The wrapper is carried whole, each of its lines inside the block.
        assert!(text.contains("          console.log(\"::stop-commands::\" + resume);"));
        assert!(!text.contains("\t"));
    }

    /// The workflow installs exactly the versions the real-CLI tests run.
    #[test]
    fn the_pinned_clis_are_the_ones_the_tests_run() {
        let lock = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/agents-cli/package.json");
        let tested: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(lock).unwrap()).unwrap();
        for agent in Agent::CLIS {
            let pin = crate::agents::driver(*agent).npm_package().unwrap();
            let (name, version) = pin.rsplit_once('@').unwrap();
            assert_eq!(tested["dependencies"][name].as_str(), Some(version), "{agent}: {pin}");
        }
    }
}
